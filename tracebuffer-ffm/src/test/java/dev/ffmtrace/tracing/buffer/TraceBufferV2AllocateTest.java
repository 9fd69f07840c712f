package dev.ffmtrace.tracing.buffer;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link TraceBufferV2#allocate}: a buffer that owns its memory, and {@link TraceBufferV2#close()}. */
class TraceBufferV2AllocateTest {

    @Test
    void allocatesAlignedNativeMemoryOfTheSize() {
        try (TraceBufferV2 buffer = TraceBufferV2.allocate(4096, OverwritePolicy.DISCARD)) {
            assertEquals(4096, buffer.size());
            assertEquals(OverwritePolicy.DISCARD, buffer.overwritePolicy());
            assertTrue(buffer.segment().isNative());
            assertEquals(0, buffer.segment().address() % 16);
            assertFalse(buffer.hasData());
        }
    }

    @Test
    void refusesSizesTheSegmentConstructorRefuses() {
        for (long size : new long[] {-16, -1, 0, 8, 17, 4100, TraceBufferV2.MAX_BUFFER_SIZE + 16, Long.MAX_VALUE}) {
            assertThrows(IllegalArgumentException.class, () -> TraceBufferV2.allocate(size, OverwritePolicy.RING_BUFFER),
                    "size " + size);
        }
        assertThrows(NullPointerException.class, () -> TraceBufferV2.allocate(4096, null));
        try (TraceBufferV2 smallest = TraceBufferV2.allocate(16, OverwritePolicy.RING_BUFFER)) {
            assertEquals(16, smallest.size());
        }
    }

    @Test
    void writesReadsAndFeedsItsListener() {
        List<Integer> overwritten = new ArrayList<>();
        try (TraceBufferV2 buffer = TraceBufferV2.allocate(64, OverwritePolicy.RING_BUFFER,
                packet -> overwritten.add(packet.writerId()))) {
            new FakeChunk(buffer, 1, 1, 0).addPacket(30, 'a').copyIntoTraceBuffer();
            new FakeChunk(buffer, 1, 2, 0).addPacket(30, 'b').copyIntoTraceBuffer();
            assertEquals(List.of(1), overwritten, "the second chunk needs the first one's place");
            TracePacketView view = new TracePacketView();
            buffer.beginRead();
            assertTrue(buffer.readNextTracePacket(view));
            assertEquals(2, view.writerId());
            assertEquals(29, view.size());
        }
    }

    @Test
    void closeFreesOwnedMemoryOnce() {
        TraceBufferV2 buffer = TraceBufferV2.allocate(4096, OverwritePolicy.RING_BUFFER);
        MemorySegment memory = buffer.segment();
        buffer.close();
        assertFalse(memory.scope().isAlive());
        buffer.close();
        assertThrows(IllegalStateException.class,
                () -> new FakeChunk(buffer, 1, 1, 0).addPacket(10, 'a').copyIntoTraceBuffer());
    }

    @Test
    void closeLeavesACallersSegmentAndAClonesMemoryAlone() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment memory = arena.allocate(4096, 16);
            TraceBufferV2 buffer = new TraceBufferV2(memory, OverwritePolicy.RING_BUFFER);
            new FakeChunk(buffer, 1, 1, 0).addPacket(10, 'a').copyIntoTraceBuffer();
            TraceBufferV2 clone = buffer.cloneReadOnly(arena);
            buffer.close();
            clone.close();
            assertTrue(memory.scope().isAlive());
            TracePacketView view = new TracePacketView();
            buffer.beginRead();
            assertTrue(buffer.readNextTracePacket(view));
            clone.beginRead();
            assertTrue(clone.readNextTracePacket(view));
        }
    }
}
