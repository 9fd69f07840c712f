package dev.ffmtrace.tracing.buffer;

/** What a {@link TraceBufferV2} does once it has written to its end. */
public enum OverwritePolicy {
    /** Wrap and overwrite the oldest chunks, handing their unread packets to the overwrite listener. */
    RING_BUFFER,
    /** Stop accepting chunks for good at the first one that does not fit, whether or not anything was read. */
    DISCARD
}
