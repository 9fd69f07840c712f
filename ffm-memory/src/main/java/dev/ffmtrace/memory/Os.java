package dev.ffmtrace.memory;

import dev.ffmtrace.memory.internal.Native;

import java.nio.file.Path;

/**
 * The few facts about this process and its clocks that tracing needs from the OS, for
 * modules that must not make native calls of their own.
 *
 * <p>Every method may be called from any thread, and allocates nothing after a thread's
 * first call.
 */
public final class Os {
    /** {@code CLOCK_REALTIME}: wall time. */
    public static final int CLOCK_REALTIME = Native.CLOCK_REALTIME;
    /** {@code CLOCK_MONOTONIC}: what {@link System#nanoTime()} reads on Linux. */
    public static final int CLOCK_MONOTONIC = Native.CLOCK_MONOTONIC;
    /** {@code CLOCK_MONOTONIC_RAW}: monotonic, without NTP's rate adjustments. */
    public static final int CLOCK_MONOTONIC_RAW = Native.CLOCK_MONOTONIC_RAW;
    /** {@code CLOCK_BOOTTIME}: monotonic and counting suspend; Perfetto's default trace clock. */
    public static final int CLOCK_BOOTTIME = Native.CLOCK_BOOTTIME;

    private static final int PID = (int) ProcessHandle.current().pid();

    private Os() {
    }

    /**
     * Opens {@code path} read-only (close-on-exec), for an fd to hand to another process,
     * as heapprofd's client hands over /proc/self/maps and /proc/self/mem; the caller
     * closes it with {@link #closeFd}.
     *
     * @throws NativeException if it cannot be opened
     */
    public static int openReadOnly(Path path) {
        return Native.open(path.toString(), Native.O_RDONLY | Native.O_CLOEXEC, 0);
    }

    /** Closes an fd this process owns (one it opened, or received from a peer). */
    public static void closeFd(int fd) {
        Native.close(fd);
    }

    /** The runtime page size. */
    public static long pageSize() {
        return Native.pageSize();
    }

    /** This process's id. */
    public static int pid() {
        return PID;
    }

    /** This process's real user id. */
    public static int uid() {
        return Native.getuid();
    }

    /** The calling thread's kernel thread id (what Perfetto shows as tid). */
    public static int tid() {
        return Native.gettid();
    }

    /** The time of {@code clockId} (one of the {@code CLOCK_*} constants) in nanoseconds. */
    public static long clockNanos(int clockId) {
        return Native.clockGetTimeNanos(clockId);
    }

    /**
     * Whether a process with this pid exists (a zombie counts, as {@code kill(pid, 0)}
     * sees it; one we may not signal counts too).
     */
    public static boolean processExists(int pid) {
        return Native.processExists(pid);
    }

    /**
     * Whether process {@code pid} of this process's PID namespace is known to have exited: it
     * no longer exists, or it is a zombie, dead but not yet reaped by its parent (which
     * {@link #processExists} still counts). A pidfd of the process becomes readable when it
     * exits, whoever its parent is. False while it runs, for a pid that is not a process's
     * (0, negative, a thread other than the main one), and whenever the answer is unsure;
     * where {@code pidfd_open(2)} is missing (Linux before 5.3) or filtered, only a process
     * that no longer exists counts as exited.
     */
    public static boolean processExited(int pid) {
        if (pid <= 0) {
            return false;
        }
        int pidfd = Native.pidfdOpen(pid);
        if (pidfd >= 0) {
            try {
                return Native.pollReadable(pidfd);
            } catch (NativeException e) {
                return false;
            } finally {
                Native.close(pidfd);
            }
        }
        if (pidfd == -Native.ESRCH) {
            return true;
        }
        if (pidfd == -Native.EINVAL) {
            return false;
        }
        try {
            return !Native.processExists(pid);
        } catch (NativeException e) {
            return false;
        }
    }

    /**
     * The identity of this process's PID namespace, the one its pid and every pid it passes
     * to the kernel belong to: the inode number of {@code /proc/self/ns/pid}, unique among
     * the namespaces that exist. 0 if it cannot be read (no {@code /proc}, or one that does
     * not show this process). Read once: a process never changes its own PID namespace.
     */
    public static long pidNamespaceId() {
        return PidNamespace.ID;
    }

    private static final class PidNamespace {
        static final long ID = read();

        private static long read() {
            int fd;
            try {
                fd = Native.open("/proc/self/ns/pid", Native.O_RDONLY | Native.O_CLOEXEC, 0);
            } catch (NativeException e) {
                return 0;
            }
            try {
                return Native.fstat(fd).inode();
            } catch (NativeException e) {
                return 0;
            } finally {
                Native.close(fd);
            }
        }
    }
}
