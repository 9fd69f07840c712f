package dev.ffmtrace.tracing.smb;

/**
 * Carries a producer's commit requests to the service: in-process today, over the
 * producer socket later. Called by the arbiter with its lock held; the request is
 * reused afterwards, so an implementation copies whatever it keeps.
 */
@FunctionalInterface
public interface CommitTransport {
    /** Sends {@code request} to the service; called under the arbiter's lock, and {@code request} is reused once it returns. */
    void commit(CommitRequest request);

    /**
     * A writer was created: over IPC the service learns which buffer the writer's
     * chunks go to, for the chunks it scrapes (Perfetto's RegisterTraceWriter). Called
     * under the arbiter's lock.
     */
    default void traceWriterRegistered(int writerId, int targetBuffer) {
    }

    /** A writer was closed and its id freed (Perfetto's UnregisterTraceWriter). Called under the arbiter's lock. */
    default void traceWriterUnregistered(int writerId) {
    }
}
