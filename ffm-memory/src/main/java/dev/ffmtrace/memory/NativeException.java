package dev.ffmtrace.memory;

import dev.ffmtrace.memory.internal.Native;

/**
 * A libc call failed. Carries the call (with the arguments that identify it), the
 * errno, its symbolic name and the system's message, e.g.
 * {@code ftruncate(12, 4096) failed: EPERM (Operation not permitted)}.
 */
public final class NativeException extends RuntimeException {
    private final String call;
    private final int errno;

    public NativeException(String call, int errno) {
        super(call + " failed: " + Native.errnoName(errno) + " (" + Native.strerror(errno) + ")");
        this.call = call;
        this.errno = errno;
    }

    /** The call that failed, as it appears in the message. */
    public String call() {
        return call;
    }

    public int errno() {
        return errno;
    }

    /** Whether the call gave up at its deadline (ETIMEDOUT), such as a send its peer did not take in time. */
    public boolean timedOut() {
        return errno == Native.ETIMEDOUT;
    }

    public String errnoName() {
        return Native.errnoName(errno);
    }
}
