package dev.ffmtrace.tracing.buffer;

import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TraceBufferV2MaliciousInputTest extends TraceBufferTestSupport {

    @Test
    void oneZeroBytePayloadIsAnEmptyPacket() {
        reset(4096);
        chunk(1, 1, 0).addRawFragment(0).copyIntoTraceBuffer();
        tb.beginRead();
        assertReadNothing();
        assertEquals(0, tb.stats().abiViolations());
        assertEquals(1, tb.stats().chunksRead());
    }

    @Test
    void chunkLargerThanTheBufferIsRejected() {
        reset(4096);
        chunk(1, 1, 0).addPacket(4096, 'a').copyIntoTraceBuffer();
        assertEquals(1, tb.stats().abiViolations());
        assertEquals(0, tb.stats().chunksWritten());
        tb.beginRead();
        assertReadNothing();
    }

    @Test
    void moreFragmentsDeclaredThanPresentKeepsTheRealOnes() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b').setNumFragments(5).copyIntoTraceBuffer();
        assertEquals(1, tb.stats().abiViolations());
        tb.beginRead();
        assertRead(frag(10, 'a'));
        assertRead(frag(20, 'b'));
        assertReadNothing();
    }

    @Test
    void zeroedSizeHeaderMakesTheRestOfTheChunkUnparseable() {
        reset(4096);
        byte[] b = FakeChunk.encode(20, 'b');
        b[0] = 0;
        FakeChunk bad = chunk(1, 1, 0).addPacket(10, 'a');
        for (byte x : b) {
            bad.addRawBytes(x & 0xFF);
        }
        bad.addPacket(30, 'c').setNumFragments(3).copyIntoTraceBuffer();
        chunk(2, 1, 0).addPacket(40, 'x').copyIntoTraceBuffer();
        assertEquals(1, tb.stats().abiViolations());
        tb.beginRead();
        assertRead(frag(10, 'a'));
        Packet x = read();
        assertEquals(frags(frag(40, 'x')), x.fragments());
        assertReadNothing();
    }

    @Test
    void varintRunningPastTheChunkIsCutOff() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').addRawFragment(0x80, 0x80).copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(20, 'b').copyIntoTraceBuffer();
        assertEquals(1, tb.stats().abiViolations());
        tb.beginRead();
        assertRead(frag(10, 'a'));
        Packet b = read();
        assertEquals(frags(frag(20, 'b')), b.fragments());
        assertEquals(DataLossReason.PRESENT | DataLossReason.CHUNK_CORRUPTED, b.dropped());
        assertReadNothing();
    }

    @Test
    void sizeOffByOneIsRejected() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').addRawFragment(5, 1, 2, 3, 4).copyIntoTraceBuffer();
        assertEquals(1, tb.stats().abiViolations());
        tb.beginRead();
        assertRead(frag(10, 'a'));
        assertReadNothing();
    }

    @Test
    void dropMarkerInAWholePacketPositionIsRejected() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').addRawFragment(0xff, 0xff, 0xff, 0x7f, 1, 2, 3)
                .addPacket(10, 'c').copyIntoTraceBuffer();
        assertEquals(1, tb.stats().traceWriterPacketLoss());
        assertEquals(0, tb.stats().abiViolations());
        tb.beginRead();
        assertRead(frag(10, 'a'));
        assertReadNothing();
    }

    @Test
    void hugeVarintIsRejected() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a')
                .addRawFragment(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0)
                .copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(10, 'b').addRawFragment(0xff, 0xff, 0xff, 0xff, 0x0f, 0).copyIntoTraceBuffer();
        assertEquals(2, tb.stats().abiViolations());
        tb.beginRead();
        assertRead(frag(10, 'a'));
        assertRead(frag(10, 'b'));
        assertReadNothing();
    }

    @Test
    void sixtyFourKilobytesOfDropMarkersCopiedThreeTimes() {
        reset(128 * 1024);
        for (int size : new int[] {64 * 1024, 64 * 1024 - 1, 64 * 1024 - 4}) {
            byte[] junk = new byte[size];
            for (int i = 0; i < size; i++) {
                junk[i] = (byte) ((i & 3) == 3 ? 0x7f : 0xff);
            }
            for (int copy = 0; copy < 3; copy++) {
                tb.copyChunkUntrusted(new ChunkCommit().producer(1, FakeChunk.DEFAULT_IDENTITY).writerId(1)
                        .chunkId(copy).numFragments(0xFFFF).flags(0xFF).complete(copy != 1),
                        MemorySegment.ofArray(junk), size);
            }
        }
        tb.beginRead();
        assertReadNothing();
        assertEquals(3, tb.stats().abiViolations());
    }

    @Test
    void patchOffsetsPastThePayloadFail() {
        reset(4096);
        chunk(1, 1, 0).addPacket(16, 'a').copyIntoTraceBuffer();
        for (long offset : new long[] {13, 16, 1L << 32, Long.MAX_VALUE, -1, -4}) {
            assertFalse(tb.tryPatchChunkContents(1, 1, 0, new ChunkPatches().addLittleEndian(offset, -1), false));
        }
        assertTrue(tb.tryPatchChunkContents(1, 1, 0, new ChunkPatches().addLittleEndian(12, 0), false));
        assertEquals(6, tb.stats().patchesFailed());
        assertEquals(1, tb.stats().patchesSucceeded());
        chunk(1, 1, 1).addPacket(3, 'b').copyIntoTraceBuffer();
        assertFalse(tb.tryPatchChunkContents(1, 1, 1, new ChunkPatches().addLittleEndian(0, 0), false));
    }

    @Test
    void recommitWithSmallerPayloadIsIgnored() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b').copyIntoTraceBuffer();
        chunk(1, 1, 0).addPacket(10, 'a').copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(10, 'a'));
        chunk(1, 1, 0).addPacket(10, 'a').copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(20, 'b'));
        assertReadNothing();
        assertEquals(2, tb.stats().abiViolations());
    }

    @Test
    void sameSizeRecommitWithADifferentLayoutAfterReadingYieldsNothing() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(10, 'b').copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(10, 'a'));
        assertRead(frag(10, 'b'));
        chunk(1, 1, 0).addPacket(20, 'x').copyIntoTraceBuffer();
        tb.beginRead();
        assertReadNothing();
    }

    @Test
    void paddingKeyAndOutOfRangeArgumentsAreViolationsNotExceptions() {
        reset(4096);
        byte[] bytes = FakeChunk.encode(10, 'a');
        MemorySegment src = MemorySegment.ofArray(bytes);
        ChunkCommit valid = new ChunkCommit().producer(1, FakeChunk.DEFAULT_IDENTITY).writerId(1).numFragments(1);
        tb.copyChunkUntrusted(new ChunkCommit().producer(0, FakeChunk.DEFAULT_IDENTITY).writerId(0).numFragments(1),
                src, bytes.length);
        tb.copyChunkUntrusted(new ChunkCommit().producer(1, FakeChunk.DEFAULT_IDENTITY).writerId(1).numFragments(-1),
                src, bytes.length);
        tb.copyChunkUntrusted(valid, src, bytes.length + 1);
        tb.copyChunkUntrusted(valid, src, 5, bytes.length);
        tb.copyChunkUntrusted(valid, src, -1);
        tb.copyChunkUntrusted(new ChunkCommit().producer(1 << 16, FakeChunk.DEFAULT_IDENTITY).writerId(1)
                .numFragments(1), src, bytes.length);
        assertEquals(6, tb.stats().abiViolations());
        assertEquals(0, tb.stats().chunksWritten());
    }

    @Test
    void producerCannotSetTheBuffersOwnFlags() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').setFlags(0xF8).copyIntoTraceBuffer();
        assertEquals(0, TBChunkDescriptor.flags(tb.segment(), 0));
        tb.beginRead();
        assertRead(frag(10, 'a'));
    }
}
