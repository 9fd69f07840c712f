package dev.ffmtrace.tracing.buffer;

/**
 * A {@link TraceBufferV2}'s running counters: the one mutable home of the figures
 * {@link TraceBufferStats} reports (see there for what each counts). The buffer and
 * its sequence readers bump the fields directly; {@link #snapshot} is the public view.
 */
final class TraceBufferCounters implements Cloneable {
    long bytesWritten;
    long bytesOverwritten;
    long bytesRead;
    long paddingBytesWritten;
    long paddingBytesCleared;
    long chunksWritten;
    long chunksRewritten;
    long chunksRelocated;
    long chunksOverwritten;
    long chunksDiscarded;
    long chunksRead;
    long chunksCommittedOutOfOrder;
    long writeWrapCount;
    long patchesSucceeded;
    long patchesFailed;
    long readaheadsSucceeded;
    long readaheadsFailed;
    long abiViolations;
    long traceWriterPacketLoss;

    /** For a read-only clone: the same write figures, the read figures from zero. */
    TraceBufferCounters copyWithoutReads() {
        TraceBufferCounters copy;
        try {
            // A field-by-field copy without naming every field again.
            copy = (TraceBufferCounters) super.clone();
        } catch (CloneNotSupportedException e) {
            throw new AssertionError(e);
        }
        copy.bytesRead = 0;
        copy.chunksRead = 0;
        copy.readaheadsSucceeded = 0;
        copy.readaheadsFailed = 0;
        return copy;
    }

    /** Chunks deleted to make room or refused for lack of it. */
    long chunksLost() {
        return chunksOverwritten + chunksDiscarded;
    }

    TraceBufferStats snapshot(long bufferSize) {
        return new TraceBufferStats(bufferSize, bytesWritten, bytesOverwritten, bytesRead, paddingBytesWritten,
                paddingBytesCleared, chunksWritten, chunksRewritten, chunksRelocated, chunksOverwritten,
                chunksDiscarded, chunksRead, chunksCommittedOutOfOrder, writeWrapCount, patchesSucceeded,
                patchesFailed, readaheadsSucceeded, readaheadsFailed, abiViolations, traceWriterPacketLoss);
    }
}
