package dev.ffmtrace.tracing.buffer;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TraceBufferV2PatchingTest extends TraceBufferTestSupport {

    @Test
    void patchShowsUpInTheDataReadBack() {
        reset(4096);
        chunk(1, 1, 0).addPacket(16, 'a').copyIntoTraceBuffer();
        assertTrue(tb.tryPatchChunkContents(1, 1, 0,
                new ChunkPatches().add(5, (byte) 0x11, (byte) 0x22, (byte) 0x33, (byte) 0x44), false));
        tb.beginRead();
        byte[] expected = FakeChunk.fragmentPayload(16, 'a');
        expected[4] = 0x11;
        expected[5] = 0x22;
        expected[6] = 0x33;
        expected[7] = 0x44;
        assertRead(new Frag(expected));
        assertEquals(1, tb.stats().patchesSucceeded());
    }

    @Test
    void twoPatchesAtTheFirstAndLastFourBytesOfASixteenBytePayload() {
        reset(4096);
        chunk(1, 1, 0).addPacket(16, 'a').copyIntoTraceBuffer();
        // Offset 0 holds the size varint (15): the first patch keeps it and replaces 3 bytes.
        assertTrue(tb.tryPatchChunkContents(1, 1, 0, new ChunkPatches()
                .add(0, (byte) 0x0f, (byte) 0x41, (byte) 0x42, (byte) 0x43)
                .add(12, (byte) 0x01, (byte) 0x02, (byte) 0x03, (byte) 0x04), false));
        tb.beginRead();
        byte[] expected = FakeChunk.fragmentPayload(16, 'a');
        System.arraycopy(new byte[] {0x41, 0x42, 0x43}, 0, expected, 0, 3);
        System.arraycopy(new byte[] {1, 2, 3, 4}, 0, expected, 11, 4);
        assertRead(new Frag(expected));
        assertEquals(2, tb.stats().patchesSucceeded());
    }

    @Test
    void patchingUnknownWriterChunkOrOldIdFails() {
        reset(4096);
        chunk(1, 1, 0).addPacket(16, 'a').copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(16, 'b').copyIntoTraceBuffer();
        ChunkPatches patches = new ChunkPatches().addLittleEndian(0, 0);
        assertFalse(tb.tryPatchChunkContents(1, 2, 0, patches, false));
        assertFalse(tb.tryPatchChunkContents(2, 1, 0, patches, false));
        assertFalse(tb.tryPatchChunkContents(1, 1, 2, patches, false));
        tb.beginRead();
        assertRead(frag(16, 'a'));
        assertRead(frag(16, 'b'));
        assertReadNothing();
        assertFalse(tb.tryPatchChunkContents(1, 1, 0, patches, false));
        assertEquals(4, tb.stats().patchesFailed());
        assertEquals(0, tb.stats().patchesSucceeded());
    }

    @Test
    void needsPatchingBlocksItsSequenceUntilTheFinalPatch() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b', LAST | NEEDS_PATCHING).copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(30, 'c', FIRST).addPacket(40, 'd').copyIntoTraceBuffer();
        chunk(2, 1, 0).addPacket(50, 'x').copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(10, 'a'));
        assertRead(frag(50, 'x'));
        assertReadNothing();

        patch(1, 1, 0, true, 11, 1, 2, 3, 4);
        tb.beginRead();
        assertReadNothing();

        patch(1, 1, 0, false, 11, 5, 6, 7, 8);
        tb.beginRead();
        byte[] b = FakeChunk.fragmentPayload(20, 'b');
        System.arraycopy(new byte[] {5, 6, 7, 8}, 0, b, 0, 4);
        assertRead(new Frag(b), frag(30, 'c'));
        assertRead(frag(40, 'd'));
        assertReadNothing();
        assertEquals(2, tb.stats().patchesSucceeded());
    }

    @Test
    void patchingTheMiddleChunkFirstStillBlocksThenTheFirstUnblocks() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a', LAST | NEEDS_PATCHING).copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(20, 'b', FIRST | LAST | NEEDS_PATCHING).copyIntoTraceBuffer();
        chunk(1, 1, 2).addPacket(30, 'c', FIRST).copyIntoTraceBuffer();
        tb.beginRead();
        assertReadNothing();

        patch(1, 1, 1, false, 1, 'X', 'Y', 'Z', 'W');
        tb.beginRead();
        assertReadNothing();

        patch(1, 1, 0, false, 1, 'P', 'Q', 'R', 'S');
        tb.beginRead();
        byte[] a = FakeChunk.fragmentPayload(10, 'a');
        System.arraycopy(new byte[] {'P', 'Q', 'R', 'S'}, 0, a, 0, 4);
        byte[] b = FakeChunk.fragmentPayload(20, 'b');
        System.arraycopy(new byte[] {'X', 'Y', 'Z', 'W'}, 0, b, 0, 4);
        assertRead(new Frag(a), new Frag(b), frag(30, 'c'));
        assertReadNothing();
    }

    @Test
    void aPatchFindsItsChunkBehindTheLatestAndAcrossAGapInTheWritersChunkIds() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(20, 'b').copyIntoTraceBuffer();
        // Chunk 2 was lost: the ids the buffer holds are 0, 1, 3.
        chunk(1, 1, 3).addPacket(30, 'c').copyIntoTraceBuffer();
        patch(1, 1, 1, false, 1, 'B', 'B', 'B', 'B');
        patch(1, 1, 0, false, 1, 'A', 'A', 'A', 'A');
        assertFalse(tb.tryPatchChunkContents(1, 1, 2, new ChunkPatches().addLittleEndian(1, 0), false));
        patch(1, 1, 3, false, 1, 'C', 'C', 'C', 'C');
        tb.beginRead();
        assertRead(patched(10, 'a', 'A'));
        assertRead(patched(20, 'b', 'B'));
        assertRead(patched(30, 'c', 'C'));
        assertReadNothing();
        assertEquals(3, tb.stats().patchesSucceeded());
        assertEquals(1, tb.stats().patchesFailed());
    }

    /** A fragment of {@code size} bytes of {@code fill} whose bytes 0..3 of the payload are {@code patch}. */
    private static Frag patched(int size, char fill, char patch) {
        byte[] payload = FakeChunk.fragmentPayload(size, fill);
        java.util.Arrays.fill(payload, 0, 4, (byte) patch);
        return new Frag(payload);
    }

    @Test
    void aGoneProducersChunksGiveUpOnlyTheFragmentsTheirPatchesWereFor() {
        reset(4096);
        // Producer 1's writer died after finishing 'c' and before sending the patch it left
        // in chunk 1: the wait holds back 'a', which ends there, and 'b', whole there.
        chunk(1, 1, 0).addPacket(10, 'a', LAST).copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(20, 'a', FIRST).addPacket(30, 'b').addPacket(40, 'c', LAST | NEEDS_PATCHING)
                .copyIntoTraceBuffer();
        chunk(1, 1, 2).addPacket(50, 'c', FIRST).addPacket(60, 'd').copyIntoTraceBuffer();
        chunk(2, 1, 0).addPacket(10, 'x', LAST | NEEDS_PATCHING).copyIntoTraceBuffer();
        chunk(2, 1, 1).addPacket(20, 'x', FIRST).copyIntoTraceBuffer();
        tb.beginRead();
        assertReadNothing();

        assertEquals(1, tb.abandonPendingPatches(1));
        tb.beginRead();
        assertRead(frag(10, 'a'), frag(20, 'a'));
        assertRead(frag(30, 'b'));
        Packet d = read();
        assertEquals(frags(frag(60, 'd')), d.fragments());
        assertEquals(DataLossReason.PRESENT | DataLossReason.WRITER_ABORT | DataLossReason.ORPHAN_CONTINUATION,
                d.dropped(), "'c' is lost, and said to be");
        assertReadNothing();
        assertEquals(0, tb.stats().patchesFailed());

        // Producer 2 is still there: its packet waits for its patch.
        patch(2, 1, 0, false, 1, 'P', 'Q', 'R', 'S');
        tb.beginRead();
        byte[] x = FakeChunk.fragmentPayload(10, 'x');
        System.arraycopy(new byte[] {'P', 'Q', 'R', 'S'}, 0, x, 0, 4);
        assertRead(new Frag(x), frag(20, 'x'));
        assertEquals(0, tb.abandonPendingPatches(1), "nothing waits any more");
    }

    @Test
    void aChunkWhoseOnlyFragmentWaitedIsLeftEmptyAndTheSequenceReadsOn() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b', LAST | NEEDS_PATCHING).copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(30, 'b', FIRST | LAST | NEEDS_PATCHING).copyIntoTraceBuffer();
        chunk(1, 1, 2).addPacket(40, 'b', FIRST).addPacket(50, 'e').copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(10, 'a'));
        assertReadNothing();

        // Killed after 'e', before the patches of 'b': both chunks of 'b' give it up.
        assertEquals(2, tb.abandonPendingPatches(1));
        tb.beginRead();
        Packet e = read();
        assertEquals(frags(frag(50, 'e')), e.fragments());
        assertEquals(DataLossReason.PRESENT | DataLossReason.WRITER_ABORT | DataLossReason.ORPHAN_CONTINUATION,
                e.dropped());
        assertReadNothing();
        TraceBufferStats stats = tb.stats();
        assertEquals(3, stats.chunksRead(), "each chunk counted read once");
        assertEquals(stats.bytesWritten(), stats.bytesRead());
    }

    @Test
    void overwrittenUnpatchedChunksFlagOnlyTheNextPacketAndCountAsOverwritten() {
        reset(4096);
        assertEquals(1024, chunk(1, 1, 0).addPacket(1024 - 16, 'a', LAST | NEEDS_PATCHING)
                .copyIntoTraceBuffer());
        assertEquals(1024, chunk(1, 1, 1).addPacket(1024 - 16, 'b', FIRST).copyIntoTraceBuffer());
        assertEquals(1024, chunk(1, 1, 2).addPacket(1024 - 16, 'c').copyIntoTraceBuffer());
        assertEquals(1024, chunk(1, 1, 3).addPacket(1024 - 16, 'd').copyIntoTraceBuffer());
        tb.beginRead();
        assertReadNothing();

        assertEquals(2048, chunk(2, 1, 0).addPacket(2048 - 16, 'x').copyIntoTraceBuffer());
        assertEquals(2, tb.stats().chunksOverwritten());
        assertEquals(2048, tb.stats().bytesOverwritten());

        tb.beginRead();
        Packet c = read();
        assertEquals(frags(frag(1024 - 16, 'c')), c.fragments());
        assertEquals(DataLossReason.PRESENT | DataLossReason.OVERWRITE | DataLossReason.ORPHAN_CONTINUATION, c.dropped());
        Packet d = read();
        assertEquals(frags(frag(1024 - 16, 'd')), d.fragments());
        assertEquals(0, d.dropped());
        assertRead(frag(2048 - 16, 'x'));
        assertReadNothing();
    }
}
