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
}
