package dev.ffmtrace.tracing.service.ipc;

import java.util.concurrent.atomic.AtomicLong;

/** What the consumer port counts, for {@link ConsumerPort}'s accessors; bumped from any consumer's thread. */
final class PortCounters {
    private final AtomicLong refusals = new AtomicLong();
    private final AtomicLong requestFailures = new AtomicLong();
    private final AtomicLong stateEntriesLeftOut = new AtomicLong();

    /** A request a guardrail refused. */
    void refused() {
        refusals.incrementAndGet();
    }

    /** A request whose handling threw. */
    void requestFailed() {
        requestFailures.incrementAndGet();
    }

    /** {@code entries} QueryServiceState entries too large for any reply. */
    void stateEntriesLeftOut(long entries) {
        stateEntriesLeftOut.addAndGet(entries);
    }

    long refusals() {
        return refusals.get();
    }

    long requestFailures() {
        return requestFailures.get();
    }

    long stateEntriesLeftOut() {
        return stateEntriesLeftOut.get();
    }
}
