package dev.ffmtrace.tracing.buffer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ffmtrace.perfetto.protos.TraceStats;
import dev.ffmtrace.protozero.HeapBuffered;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/** The stats record as Perfetto's {@code TraceStats.BufferStats}: every field at its number. */
class TraceBufferStatsProtoTest {
    @Test
    void everyFieldLandsInItsBufferStatsField() {
        TraceBufferStats stats = new TraceBufferStats(12, 1, 13, 14, 15, 16, 2, 10, 20, 3, 18, 17, 11, 4, 5, 6, 7, 8, 9, 19);
        HeapBuffered<TraceStats.BufferStats> heap = new HeapBuffered<>(TraceStats.BufferStats.FACTORY);
        stats.writeTo(heap.get());
        TraceStats.BufferStats.Decoder decoder = new TraceStats.BufferStats.Decoder();
        decoder.reset(MemorySegment.ofArray(heap.toByteArray()));
        // Each value was chosen equal to its field number, so a field in the wrong place shows.
        assertEquals(12, decoder.bufferSize());
        assertEquals(1, decoder.bytesWritten());
        assertEquals(13, decoder.bytesOverwritten());
        assertEquals(14, decoder.bytesRead());
        assertEquals(15, decoder.paddingBytesWritten());
        assertEquals(16, decoder.paddingBytesCleared());
        assertEquals(2, decoder.chunksWritten());
        assertEquals(10, decoder.chunksRewritten());
        assertEquals(20, decoder.chunksRelocated());
        assertEquals(3, decoder.chunksOverwritten());
        assertEquals(18, decoder.chunksDiscarded());
        assertEquals(17, decoder.chunksRead());
        assertEquals(11, decoder.chunksCommittedOutOfOrder());
        assertEquals(4, decoder.writeWrapCount());
        assertEquals(5, decoder.patchesSucceeded());
        assertEquals(6, decoder.patchesFailed());
        assertEquals(7, decoder.readaheadsSucceeded());
        assertEquals(8, decoder.readaheadsFailed());
        assertEquals(9, decoder.abiViolations());
        assertEquals(19, decoder.traceWriterPacketLoss());
        assertEquals(15 * 2 + 5 * 3, heap.toByteArray().length, "fields 1-15 take a 1-byte tag, 16-20 a 2-byte one");
    }
}
