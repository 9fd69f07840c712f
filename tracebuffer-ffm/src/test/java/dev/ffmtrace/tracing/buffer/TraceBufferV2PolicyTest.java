package dev.ffmtrace.tracing.buffer;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Overwrite policies, overwrite accounting and the listener, clones, and the sequence sweep. */
class TraceBufferV2PolicyTest extends TraceBufferTestSupport {

    @Test
    void discardLatchesOnTheFirstWriteThatDoesNotFit() {
        reset(4096, OverwritePolicy.DISCARD);
        chunk(1, 1, 0).addPacket(2048 - 16, 'a').copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(1024 - 16, 'b').copyIntoTraceBuffer();
        chunk(1, 1, 2).addPacket(2048 - 16, 'c').copyIntoTraceBuffer();
        assertEquals(1, tb.stats().chunksDiscarded());
        tb.beginRead();
        assertRead(frag(2048 - 16, 'a'));
        assertRead(frag(1024 - 16, 'b'));
        assertReadNothing();
        chunk(1, 1, 3).addPacket(16, 'd').copyIntoTraceBuffer();
        chunk(2, 1, 0).addPacket(16, 'e').copyIntoTraceBuffer();
        assertEquals(3, tb.stats().chunksDiscarded());
        assertEquals(2, tb.stats().chunksWritten());
        tb.beginRead();
        assertReadNothing();
    }

    @Test
    void discardAfterAnExactFillDropsTheNextWrite() {
        reset(4096, OverwritePolicy.DISCARD);
        chunk(1, 1, 0).addPacket(2048 - 16, 'a').copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(2048 - 16, 'b').copyIntoTraceBuffer();
        assertEquals(0, tb.stats().chunksDiscarded());
        chunk(1, 1, 2).addPacket(16, 'c').copyIntoTraceBuffer();
        assertEquals(1, tb.stats().chunksDiscarded());
        assertEquals(0, tb.stats().writeWrapCount());
        tb.beginRead();
        assertRead(frag(2048 - 16, 'a'));
        assertRead(frag(2048 - 16, 'b'));
        assertReadNothing();
    }

    @Test
    void discardNeverReturnsABeginWhoseContinuationDidNotFit() {
        reset(4096, OverwritePolicy.DISCARD);
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(3000, 'b', LAST).copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(3000, 'c', FIRST).copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(10, 'a'));
        assertReadNothing();
        tb.beginRead();
        assertReadNothing();
    }

    @Test
    void alternatingWritesAndReadsThatWrapNeverReportADrop() {
        reset(4096);
        for (int id = 0; id < 100; id++) {
            int size = 16 + (id * 368) % 1500;
            chunk(1, 1, id).addPacket(size, (char) id).copyIntoTraceBuffer();
            tb.beginRead();
            Packet p = read();
            assertEquals(frags(frag(size, (char) id)), p.fragments());
            assertEquals(0, p.dropped());
            assertReadNothing();
        }
        assertTrue(tb.stats().writeWrapCount() > 10);
        assertEquals(0, tb.stats().chunksOverwritten());
    }

    @Test
    void writeWrapCountIncreasesOnlyWhenAWriteWraps() {
        reset(4096);
        long[] wraps = new long[4];
        int[] sizes = {2048, 2048, 4096, 4096};
        for (int i = 0; i < sizes.length; i++) {
            chunk(1, 1, i).addPacket(sizes[i] - 16, 'a').copyIntoTraceBuffer();
            wraps[i] = tb.stats().writeWrapCount();
        }
        assertArrayEquals(new long[] {0, 0, 1, 2}, wraps);
    }

    @Test
    void overwritingA48ByteChunkWithA32ByteOneLeavesAHeaderOnlyPaddingPiece() {
        reset(4096);
        assertEquals(48, chunk(1, 1, 0).addPacket(32, 'a').copyIntoTraceBuffer());
        assertEquals(4048, chunk(1, 1, 1).addPacket(4048 - 16, 'b').copyIntoTraceBuffer());
        assertEquals(32, chunk(1, 1, 2).addPacket(16, 'c').copyIntoTraceBuffer());
        MemorySegment seg = tb.segment();
        assertTrue(TBChunkDescriptor.isPadding(seg, 32));
        assertEquals(0, TBChunkDescriptor.size(seg, 32));
        assertEquals(TBChunkDescriptor.checksum(32, 0), TBChunkDescriptor.storedChecksum(seg, 32));
        assertEquals(16, tb.stats().paddingBytesWritten());
        tb.beginRead();
        assertRead(frag(4048 - 16, 'b'));
        assertRead(frag(16, 'c'));
        assertReadNothing();
    }

    @Test
    void readButNotClearedChunkIsNotCountedAsOverwritten() {
        reset(4096);
        chunk(1, 1, 0).addPacket(1024 - 16, 'a').copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(1024 - 16, 'b').copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(1024 - 16, 'a'));
        // 'a' is consumed but its chunk is erased only by the next read: overwrite it first.
        chunk(2, 1, 0).addPacket(2048 - 16, 'x').copyIntoTraceBuffer();
        chunk(2, 1, 1).addPacket(2048 - 16, 'y').copyIntoTraceBuffer();
        assertEquals(1, tb.stats().chunksOverwritten());
        assertEquals(1024, tb.stats().bytesOverwritten());
    }

    @Test
    void readThreeChunkPacketLaterOverwrittenCountsNothing() {
        reset(4096);
        chunk(1, 1, 0).addPacket(1024 - 16, 'a', LAST).copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(1024 - 16, 'b', FIRST | LAST).copyIntoTraceBuffer();
        chunk(1, 1, 2).addPacket(1024 - 16, 'c', FIRST).copyIntoTraceBuffer();
        tb.beginRead();
        assertEquals(3, read().fragments().size());
        chunk(2, 1, 0).addPacket(1024 - 16, 'x').copyIntoTraceBuffer();
        chunk(2, 1, 1).addPacket(3072 - 16, 'y').copyIntoTraceBuffer();
        assertEquals(0, tb.stats().chunksOverwritten());
        assertEquals(0, tb.stats().bytesOverwritten());
    }

    @Test
    void unpatchedBeginAndItsContinuationAreBothCounted() {
        reset(4096);
        chunk(1, 1, 0).addPacket(1024 - 16, 'a', LAST | NEEDS_PATCHING).copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(1024 - 16, 'b', FIRST).copyIntoTraceBuffer();
        chunk(2, 1, 0).addPacket(2048 - 16, 'x').copyIntoTraceBuffer();
        chunk(2, 1, 1).addPacket(2048 - 16, 'y').copyIntoTraceBuffer();
        assertEquals(2, tb.stats().chunksOverwritten());
        assertEquals(2048, tb.stats().bytesOverwritten());
    }

    @Test
    void overwriteListenerGetsEveryUnreadPacketInSequenceOrder() {
        List<String> seen = new ArrayList<>();
        reset(4096, packet -> seen.add(packet.producerId() + ":" + new String(packet.toByteArray(),
                java.nio.charset.StandardCharsets.ISO_8859_1).charAt(0) + ":" + packet.fragmentCount()));
        chunk(1, 1, 0).addPacket(512 - 16, 'a').copyIntoTraceBuffer();
        chunk(1, 1, 2).addPacket(50, 'C', FIRST).addPacket(512 - 16 - 50, 'e').copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(100, 'b').addPacket(512 - 16 - 100, 'B', LAST).copyIntoTraceBuffer();
        chunk(1, 1, 3).addPacket(512 - 16, 'd').copyIntoTraceBuffer();
        chunk(2, 1, 0).addPacket(2048 - 16, 'z').copyIntoTraceBuffer();
        assertEquals(List.of(), seen);
        chunk(2, 1, 1).addPacket(1024 - 16, 'y').copyIntoTraceBuffer();
        assertEquals(List.of("1:a:1", "1:b:1", "1:B:2", "1:e:1"), seen);
        assertEquals(3, tb.stats().chunksOverwritten());
        tb.beginRead();
        Packet d = read();
        assertEquals(frags(frag(512 - 16, 'd')), d.fragments());
        assertEquals(DataLossReason.PRESENT | DataLossReason.OVERWRITE, d.dropped());
    }

    @Test
    void cloneReadsEverythingAfterTheOriginalIsGone() {
        reset(4096);
        TraceBufferV2 clone;
        try (Arena original = Arena.ofConfined()) {
            TraceBufferV2 source = new TraceBufferV2(original.allocate(4096, 16), OverwritePolicy.RING_BUFFER);
            tb = source;
            chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b', LAST).copyIntoTraceBuffer();
            chunk(1, 1, 1).addPacket(30, 'c', FIRST | LAST | NEEDS_PATCHING).copyIntoTraceBuffer();
            chunk(1, 1, 2).addPacket(40, 'd', FIRST).copyIntoTraceBuffer();
            patch(1, 1, 1, false, 1, 'P', 'A', 'T', 'C');
            clone = source.cloneReadOnly(arena);
            assertTrue(clone.isReadOnly());
        }
        byte[] c = FakeChunk.fragmentPayload(30, 'c');
        System.arraycopy(new byte[] {'P', 'A', 'T', 'C'}, 0, c, 0, 4);
        clone.beginRead();
        assertEquals(frags(frag(10, 'a')), read(clone).fragments());
        assertEquals(frags(frag(20, 'b'), new Frag(c), frag(40, 'd')), read(clone).fragments());
        assertEquals(List.of(), read(clone).fragments());
        assertEquals(3, clone.stats().chunksWritten());
        assertEquals(3, clone.stats().chunksRead());
    }

    /**
     * The original counted the scraped chunk as read when it drained it; the clone's
     * read statistics start from zero, so the clone counts it when it drains it.
     */
    @Test
    void cloneCountsAChunkTheOriginalDrainedAndRegrewWhenItDrainsIt() {
        reset(4096);
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').padTo(512).copyIntoTraceBuffer(false);
        tb.beginRead();
        assertRead(frag(100, 'a'));
        assertReadNothing();
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').addPacket(100, 'c').padTo(512)
                .copyIntoTraceBuffer(false);
        TraceBufferV2 clone = tb.cloneReadOnly(arena);
        assertEquals(0, clone.stats().bytesRead());
        clone.beginRead();
        assertEquals(frags(frag(100, 'b')), read(clone).fragments());
        assertEquals(List.of(), read(clone).fragments());
        assertEquals(528, clone.stats().bytesWritten());
        assertEquals(528, clone.stats().bytesRead());
        assertEquals(1, clone.stats().chunksRead());
        tb.beginRead();
        assertRead(frag(100, 'b'));
        assertReadNothing();
        assertEquals(528, tb.stats().bytesRead());
        assertEquals(1, tb.stats().chunksRead());
    }

    @Test
    void cloneOfAWrappedBufferUsesTheWholeSize() {
        reset(4096);
        for (int i = 0; i < 5; i++) {
            chunk(1, 1, i).addPacket(1000, 'a').copyIntoTraceBuffer();
        }
        assertEquals(4096, tb.usedSize());
        TraceBufferV2 clone = tb.cloneReadOnly(arena);
        assertEquals(4096, clone.usedSize());
        clone.beginRead();
        int packets = 0;
        while (!read(clone).isEmpty()) {
            packets++;
        }
        assertEquals(4, packets);
        tb.beginRead();
        assertEquals(frags(frag(1000, 'a')), read().fragments());
    }

    @Test
    void cloneTouchesOnlyTheUsedBytes() {
        MemorySegment source = arena.allocate(8192, 16);
        source.fill((byte) 0x5A);
        tb = new TraceBufferV2(source, OverwritePolicy.RING_BUFFER);
        chunk(1, 1, 0).addPacket(100, 'a').copyIntoTraceBuffer();
        int used = tb.usedSize();
        MemorySegment target = arena.allocate(8192, 16);
        target.fill((byte) 0x33);
        TraceBufferV2 clone = tb.cloneReadOnly(target);
        clone.beginRead();
        assertEquals(frags(frag(100, 'a')), read(clone).fragments());
        assertEquals(List.of(), read(clone).fragments());
        for (long i = used; i < 8192; i++) {
            assertEquals((byte) 0x33, target.get(ValueLayout.JAVA_BYTE, i));
            assertEquals((byte) 0x5A, source.get(ValueLayout.JAVA_BYTE, i));
        }
    }

    @Test
    void writesToACloneFail() {
        reset(4096);
        chunk(1, 1, 0).addPacket(100, 'a').copyIntoTraceBuffer();
        TraceBufferV2 clone = tb.cloneReadOnly(arena);
        MemorySegment src = MemorySegment.ofArray(FakeChunk.encode(10, 'a'));
        assertThrows(IllegalStateException.class,
                () -> clone.copyChunkUntrusted(new ChunkCommit().producer(1, FakeChunk.DEFAULT_IDENTITY).writerId(1)
                        .chunkId(1).numFragments(1), src, 10));
        assertThrows(IllegalStateException.class,
                () -> clone.tryPatchChunkContents(1, 1, 0, new ChunkPatches().addLittleEndian(0, 0), false));
    }

    @Test
    void sweepKeepsTheLatest1024EmptySequencesSoTheirGapsAreStillSeen() {
        reset(1 << 20);
        int writers = 1400;
        for (int w = 1; w <= writers; w++) {
            chunk(1, w, 0).addPacket(10, 'a').copyIntoTraceBuffer();
            tb.beginRead();
            assertEquals(0, read().dropped());
            assertReadNothing();
        }
        chunk(2, 1, 0).addPacket(10, 'z').copyIntoTraceBuffer();
        assertTrue(tb.sequenceCount() <= TraceBufferV2.EMPTY_SEQUENCES_GC_THRESHOLD + 1,
                "sequences: " + tb.sequenceCount());
        assertTrue(tb.sequenceCount() >= TraceBufferV2.KEEP_LAST_EMPTY_SEQUENCES + 1);
        // The latest writer is remembered: a skipped id is a gap.
        chunk(1, writers, 2).addPacket(10, 'b').copyIntoTraceBuffer();
        // The first writer was swept: its next chunk starts afresh.
        chunk(1, 1, 2).addPacket(10, 'c').copyIntoTraceBuffer();
        tb.beginRead();
        assertEquals(0, read().dropped());
        Packet b = read();
        assertEquals(frags(frag(10, 'b')), b.fragments());
        assertEquals(DataLossReason.PRESENT | DataLossReason.READ_GAP, b.dropped());
        Packet c = read();
        assertEquals(frags(frag(10, 'c')), c.fragments());
        assertEquals(0, c.dropped());
    }
}
