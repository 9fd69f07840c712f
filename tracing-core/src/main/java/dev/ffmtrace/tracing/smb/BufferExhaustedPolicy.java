package dev.ffmtrace.tracing.smb;

/** What a {@link TraceWriter} does when the shared memory buffer has no free chunk. */
public enum BufferExhaustedPolicy {
    /**
     * Wait, with bounded backoff, for the service to free a chunk, up to the arbiter's
     * stall timeout; then drop. Nothing is lost while the service keeps up.
     */
    STALL,
    /** Drop at once and mark the loss for the service: the writing thread never waits. */
    DROP
}
