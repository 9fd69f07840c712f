package dev.ffmtrace.tracing.buffer;

import dev.ffmtrace.perfetto.protos.TraceStats;

/**
 * A snapshot of a {@link TraceBufferV2}'s counters, one component per field of
 * Perfetto's {@code TraceStats.BufferStats}, in that message's declaration order
 * (field numbers in the comments). Byte counts are stored sizes: a chunk's header
 * plus payload rounded up to 16.
 *
 * <p>Each stored chunk counts once in the written figures and, once it leaves the
 * buffer, once in the read or the overwritten ones, also when a scraped chunk is
 * committed again in place after it was read, and also when it had nothing to consume:
 * written = read + overwritten + the stored chunks not yet counted, at every step.
 * Discarded chunks were refused before they were written, so they are in no other figure.
 *
 * <p>{@link #writeTo} encodes it as the generated {@code TraceStats.BufferStats}.
 */
public record TraceBufferStats(
        long bufferSize,                  // 12
        long bytesWritten,                // 1
        long bytesOverwritten,            // 13
        long bytesRead,                   // 14
        long paddingBytesWritten,         // 15
        long paddingBytesCleared,         // 16
        long chunksWritten,               // 2
        long chunksRewritten,             // 10
        long chunksRelocated,             // 20
        long chunksOverwritten,           // 3
        long chunksDiscarded,             // 18
        long chunksRead,                  // 17
        long chunksCommittedOutOfOrder,   // 11
        long writeWrapCount,              // 4
        long patchesSucceeded,            // 5
        long patchesFailed,               // 6
        long readaheadsSucceeded,         // 7
        long readaheadsFailed,            // 8
        long abiViolations,               // 9
        long traceWriterPacketLoss) {     // 19

    /** Writes every field, zeros included, into a {@code TraceStats.BufferStats} message. */
    public void writeTo(TraceStats.BufferStats message) {
        message.setBufferSize(bufferSize);
        message.setBytesWritten(bytesWritten);
        message.setBytesOverwritten(bytesOverwritten);
        message.setBytesRead(bytesRead);
        message.setPaddingBytesWritten(paddingBytesWritten);
        message.setPaddingBytesCleared(paddingBytesCleared);
        message.setChunksWritten(chunksWritten);
        message.setChunksRewritten(chunksRewritten);
        message.setChunksRelocated(chunksRelocated);
        message.setChunksOverwritten(chunksOverwritten);
        message.setChunksDiscarded(chunksDiscarded);
        message.setChunksRead(chunksRead);
        message.setChunksCommittedOutOfOrder(chunksCommittedOutOfOrder);
        message.setWriteWrapCount(writeWrapCount);
        message.setPatchesSucceeded(patchesSucceeded);
        message.setPatchesFailed(patchesFailed);
        message.setReadaheadsSucceeded(readaheadsSucceeded);
        message.setReadaheadsFailed(readaheadsFailed);
        message.setAbiViolations(abiViolations);
        message.setTraceWriterPacketLoss(traceWriterPacketLoss);
    }
}
