package dev.ffmtrace.tracing.buffer;

/**
 * A snapshot of a {@link TraceBufferV2}'s counters, one component per field of
 * Perfetto's {@code TraceStats.BufferStats}, in that message's declaration order
 * (field numbers in the comments). Byte counts are stored sizes: a chunk's header
 * plus payload rounded up to 16.
 *
 * <p>Encoding as the generated {@code BufferStats} proto is pending the protozero
 * code generator; until then this record is the interface.
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
}
