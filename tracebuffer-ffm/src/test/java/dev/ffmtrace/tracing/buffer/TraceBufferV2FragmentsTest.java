package dev.ffmtrace.tracing.buffer;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class TraceBufferV2FragmentsTest extends TraceBufferTestSupport {

    @Test
    void leadingContinuationWithoutPredecessorIsDroppedAndSplitPacketReassembled() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a', FIRST).addPacket(20, 'b').addPacket(30, 'c', LAST)
                .copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(40, 'd', FIRST).addPacket(50, 'e').copyIntoTraceBuffer();
        tb.beginRead();
        Packet b = read();
        assertEquals(frags(frag(20, 'b')), b.fragments());
        assertEquals(DataLossReason.PRESENT | DataLossReason.ORPHAN_CONTINUATION, b.dropped());
        Packet cd = read();
        assertEquals(frags(frag(30, 'c'), frag(40, 'd')), cd.fragments());
        assertEquals(0, cd.dropped());
        assertRead(frag(50, 'e'));
        assertReadNothing();
        assertEquals(1, tb.stats().readaheadsSucceeded());
    }

    @Test
    void beginFragmentIsHeldBackUntilItsEndArrives() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b', LAST).copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(10, 'a'));
        assertReadNothing();
        assertEquals(1, tb.stats().readaheadsFailed());
        chunk(1, 1, 1).addPacket(30, 'c', FIRST).copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(20, 'b'), frag(30, 'c'));
        assertReadNothing();
    }

    @Test
    void outOfOrderCommitsReadInChunkIdOrder() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').copyIntoTraceBuffer();
        chunk(1, 1, 2).addPacket(10, 'c').copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(10, 'b').copyIntoTraceBuffer();
        assertEquals(1, tb.stats().chunksCommittedOutOfOrder());
        tb.beginRead();
        assertRead(frag(10, 'a'));
        assertRead(frag(10, 'b'));
        assertRead(frag(10, 'c'));
        assertReadNothing();
    }

    @Test
    void outOfOrderCommitsOfOnePacketSpanningThreeChunks() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a', LAST).copyIntoTraceBuffer();
        chunk(1, 1, 2).addPacket(30, 'c', FIRST).copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(20, 'b', FIRST | LAST).copyIntoTraceBuffer();
        assertEquals(1, tb.stats().chunksCommittedOutOfOrder());
        tb.beginRead();
        Packet p = read();
        assertEquals(frags(frag(10, 'a'), frag(20, 'b'), frag(30, 'c')), p.fragments());
        assertEquals(0, p.dropped());
        assertReadNothing();
    }

    @Test
    void commitOrderZeroTwoOneThree() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').copyIntoTraceBuffer();
        chunk(1, 1, 2).addPacket(10, 'c').copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(10, 'b').copyIntoTraceBuffer();
        chunk(1, 1, 3).addPacket(10, 'd').copyIntoTraceBuffer();
        assertEquals(1, tb.stats().chunksCommittedOutOfOrder());
        tb.beginRead();
        for (char c : new char[] {'a', 'b', 'c', 'd'}) {
            Packet p = read();
            assertEquals(frags(frag(10, c)), p.fragments());
            assertEquals(0, p.dropped());
        }
        assertReadNothing();
    }

    @ParameterizedTest
    @ValueSource(strings = {"0123", "3210", "2031", "1302", "0312"})
    void chunkIdsWrapAtTwoToThe32(String order) {
        reset(4096);
        int[] ids = {0xFFFF_FFFE, 0xFFFF_FFFF, 0, 1};
        for (char c : order.toCharArray()) {
            int i = c - '0';
            chunk(1, 1, ids[i]).addPacket(10, (char) ('a' + i)).copyIntoTraceBuffer();
        }
        tb.beginRead();
        for (int i = 0; i < 4; i++) {
            Packet p = read();
            assertEquals(frags(frag(10, (char) ('a' + i))), p.fragments());
            assertEquals(0, p.dropped());
        }
        assertReadNothing();
    }

    @Test
    void fiveChunkPacketAcrossTheIdWrapIsReassembled() {
        reset(4096);
        chunk(1, 1, 0xFFFF_FFFE).addPacket(10, 'a', LAST).copyIntoTraceBuffer();
        chunk(1, 1, 2).addPacket(14, 'e', FIRST).copyIntoTraceBuffer();
        chunk(1, 1, 0).addPacket(12, 'c', FIRST | LAST).copyIntoTraceBuffer();
        chunk(1, 1, 0xFFFF_FFFF).addPacket(11, 'b', FIRST | LAST).copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(13, 'd', FIRST | LAST).copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(10, 'a'), frag(11, 'b'), frag(12, 'c'), frag(13, 'd'), frag(14, 'e'));
        assertReadNothing();
    }

    @Test
    void emptyChunksBeforeAfterAndInsideAChainAreSkipped() {
        reset(4096);
        chunk(1, 1, 0).copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(10, 'a', LAST).copyIntoTraceBuffer();
        chunk(1, 1, 2).copyIntoTraceBuffer();
        chunk(1, 1, 3).addPacket(20, 'b', FIRST).copyIntoTraceBuffer();
        chunk(1, 1, 4).copyIntoTraceBuffer();
        chunk(1, 1, 5).addPacket(30, 'c').copyIntoTraceBuffer();
        tb.beginRead();
        Packet ab = read();
        assertEquals(frags(frag(10, 'a'), frag(20, 'b')), ab.fragments());
        assertEquals(0, ab.dropped());
        Packet c = read();
        assertEquals(frags(frag(30, 'c')), c.fragments());
        assertEquals(0, c.dropped());
        assertReadNothing();
    }

    @Test
    void beginFollowedOnlyByAnEmptyChunkStaysPending() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a', LAST).copyIntoTraceBuffer();
        chunk(1, 1, 1).copyIntoTraceBuffer();
        tb.beginRead();
        assertReadNothing();
        chunk(1, 1, 2).addPacket(20, 'b', FIRST).copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(10, 'a'), frag(20, 'b'));
        assertReadNothing();
    }

    @Test
    void packetsSpanningTwoToElevenChunks() {
        for (int span = 2; span <= 11; span++) {
            reset(64 * 1024);
            List<Frag> expected = new ArrayList<>();
            int id = 0;
            chunk(1, 1, id++).addPacket(10, '0').copyIntoTraceBuffer();
            for (int i = 0; i < span; i++) {
                int flags = (i > 0 ? FIRST : 0) | (i < span - 1 ? LAST : 0);
                char seed = (char) ('a' + i);
                chunk(1, 1, id++).addPacket(20 + i, seed, flags).copyIntoTraceBuffer();
                expected.add(frag(20 + i, seed));
            }
            chunk(1, 1, id).addPacket(10, '1').copyIntoTraceBuffer();
            tb.beginRead();
            assertRead(frag(10, '0'));
            assertEquals(expected, read().fragments());
            assertRead(frag(10, '1'));
            assertReadNothing();
        }
    }

    @Test
    void packetSpanningTenChunksOfAnEightKilobyteBuffer() {
        reset(8192);
        List<Frag> expected = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            int flags = (i > 0 ? FIRST : 0) | (i < 9 ? LAST : 0);
            char seed = (char) ('a' + i);
            assertEquals(512, chunk(1, 1, i).addPacket(512 - 16, seed, flags).copyIntoTraceBuffer());
            expected.add(frag(512 - 16, seed));
        }
        tb.beginRead();
        assertEquals(expected, read().fragments());
        assertReadNothing();
    }

    @Test
    void twoChunkPacketThatNearlyFillsTheBuffer() {
        reset(4096);
        assertEquals(2048, chunk(1, 1, 0).addPacket(2048 - 16, 'a', LAST).copyIntoTraceBuffer());
        assertEquals(2032, chunk(1, 1, 1).addPacket(2032 - 16, 'b', FIRST).copyIntoTraceBuffer());
        tb.beginRead();
        assertRead(frag(2048 - 16, 'a'), frag(2032 - 16, 'b'));
        assertReadNothing();
    }

    @Test
    void dropMarkerContinuationMakesTheFragmentedPacketDisappear() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(10, 'b', LAST).copyIntoTraceBuffer();
        chunk(1, 1, 1).setFlags(FIRST).addRawFragment(0xff, 0xff, 0xff, 0x7f).copyIntoTraceBuffer();
        chunk(1, 1, 2).addPacket(10, 'd').copyIntoTraceBuffer();
        chunk(2, 1, 0).addPacket(10, 'x').copyIntoTraceBuffer();
        assertEquals(1, tb.stats().traceWriterPacketLoss());
        assertEquals(0, tb.stats().abiViolations());
        tb.beginRead();
        Packet a = read();
        assertEquals(frags(frag(10, 'a')), a.fragments());
        assertEquals(0, a.dropped());
        Packet d = read();
        assertEquals(frags(frag(10, 'd')), d.fragments());
        assertEquals(DataLossReason.PRESENT | DataLossReason.WRITER_ABORT, d.dropped());
        assertRead(frag(10, 'x'));
        assertReadNothing();
    }

    @Test
    void scrapedChunkWhoseLastFragmentNeedsPatchingReturnsItsWholePackets() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b').addPacket(30, 'c', LAST | NEEDS_PATCHING)
                .copyIntoTraceBuffer(false);
        tb.beginRead();
        assertRead(frag(10, 'a'));
        assertRead(frag(20, 'b'));
        assertReadNothing();
    }

    @Test
    void zeroLengthMiddleFragmentIsSkippedAndZeroLengthBeginReassemblesToTheContinuation() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a', LAST).copyIntoTraceBuffer();
        chunk(1, 1, 1).setFlags(FIRST | LAST).addRawFragment(0).copyIntoTraceBuffer();
        chunk(1, 1, 2).addPacket(20, 'b', FIRST).copyIntoTraceBuffer();
        chunk(1, 1, 3).setFlags(LAST).addRawFragment(0).copyIntoTraceBuffer();
        chunk(1, 1, 4).addPacket(30, 'c', FIRST).copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(10, 'a'), frag(20, 'b'));
        assertRead(frag(30, 'c'));
        assertReadNothing();
        assertEquals(0, tb.stats().abiViolations());
    }
}
