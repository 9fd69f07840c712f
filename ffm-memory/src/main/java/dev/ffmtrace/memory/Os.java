package dev.ffmtrace.memory;

import dev.ffmtrace.memory.internal.Native;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
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
    /** {@code CLOCK_REALTIME_COARSE}: wall time at tick resolution. */
    public static final int CLOCK_REALTIME_COARSE = Native.CLOCK_REALTIME_COARSE;
    /** {@code CLOCK_MONOTONIC_COARSE}: monotonic at tick resolution, the clock of heapprofd's dump timestamps. */
    public static final int CLOCK_MONOTONIC_COARSE = Native.CLOCK_MONOTONIC_COARSE;
    /** {@code CLOCK_BOOTTIME}: monotonic and counting suspend; Perfetto's default trace clock. */
    public static final int CLOCK_BOOTTIME = Native.CLOCK_BOOTTIME;

    /** {@code EIO}: {@link #pread} returns it negated for unmapped memory of a {@code /proc/PID/mem} fd. */
    public static final int EIO = Native.EIO;

    private static final int PID = (int) ProcessHandle.current().pid();
    private static final int READ_CHUNK = 64 * 1024;

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

    /**
     * Reads up to {@code into.byteSize()} bytes of {@code fd} at {@code offset}
     * ({@code pread(2)}: the fd's own position is left alone, so a thread may read any part
     * of a file another thread also reads, and read it again from 0). Returns the bytes
     * read, 0 at the end of the file, or {@code -errno}: a failed read is a result, not an
     * exception, because reading another process's memory through its {@code /proc/PID/mem}
     * fails with EIO ({@link #EIO}) wherever nothing is mapped.
     *
     * @param into a native segment (the kernel writes into it)
     * @throws IllegalArgumentException if {@code into} is a heap segment or {@code offset} negative
     */
    public static long pread(int fd, MemorySegment into, long offset) {
        if (!into.isNative()) {
            throw new IllegalArgumentException("pread needs a native segment, not " + into);
        }
        if (offset < 0) {
            throw new IllegalArgumentException("a file offset cannot be negative, got " + offset);
        }
        return Native.pread(fd, into, into.byteSize(), offset);
    }

    /**
     * The contents of {@code fd} from offset 0 to its end, at most {@code maxBytes} of them
     * (a longer file is cut there), read with {@link #pread} and so again from the start on
     * every call: for files whose size {@code fstat} does not know, such as another
     * process's {@code /proc/PID/maps} received as an fd.
     *
     * @throws NativeException if a read fails
     */
    public static byte[] readFile(int fd, int maxBytes) {
        if (maxBytes < 0) {
            throw new IllegalArgumentException("maxBytes cannot be negative, got " + maxBytes);
        }
        ByteArrayOutputStream contents = new ByteArrayOutputStream();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment chunk = arena.allocate(Math.max(1, Math.min(maxBytes, READ_CHUNK)));
            while (contents.size() < maxBytes) {
                long wanted = Math.min(chunk.byteSize(), maxBytes - contents.size());
                long read = Native.pread(fd, chunk, wanted, contents.size());
                if (read < 0) {
                    throw new NativeException("pread(" + fd + ", " + contents.size() + ")", (int) -read);
                }
                if (read == 0) {
                    break;
                }
                contents.write(chunk.asSlice(0, read).toArray(ValueLayout.JAVA_BYTE), 0, (int) read);
            }
        }
        return contents.toByteArray();
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
