package dev.ffmtrace.memory;

import dev.ffmtrace.memory.internal.Native;

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
}
