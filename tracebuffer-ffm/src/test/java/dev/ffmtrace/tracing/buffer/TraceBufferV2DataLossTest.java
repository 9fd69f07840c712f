package dev.ffmtrace.tracing.buffer;

import org.junit.jupiter.api.Test;

import static dev.ffmtrace.tracing.buffer.DataLossReason.ORPHAN_CONTINUATION;
import static dev.ffmtrace.tracing.buffer.DataLossReason.OVERWRITE;
import static dev.ffmtrace.tracing.buffer.DataLossReason.PRESENT;
import static dev.ffmtrace.tracing.buffer.DataLossReason.READ_GAP;
import static dev.ffmtrace.tracing.buffer.DataLossReason.REASSEMBLY_BROKEN_CHAIN;
import static dev.ffmtrace.tracing.buffer.DataLossReason.REASSEMBLY_GAP;
import static org.junit.jupiter.api.Assertions.assertEquals;

class TraceBufferV2DataLossTest extends TraceBufferTestSupport {

    @Test
    void missingChunkBetweenReadsIsAReadGap() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').copyIntoTraceBuffer();
        tb.beginRead();
        assertEquals(0, read().dropped());
        chunk(1, 1, 2).addPacket(10, 'c').copyIntoTraceBuffer();
        tb.beginRead();
        Packet c = read();
        assertEquals(frags(frag(10, 'c')), c.fragments());
        assertEquals(PRESENT | READ_GAP, c.dropped());
        assertEquals(3, c.dropped());
    }

    @Test
    void severalOverwrittenChunksAreOneLossOnTheFirstSurvivingPacket() {
        reset(4096);
        for (int i = 0; i < 8; i++) {
            chunk(1, 1, i).addPacket(512 - 16, (char) ('a' + i)).copyIntoTraceBuffer();
        }
        for (int i = 8; i < 11; i++) {
            chunk(1, 1, i).addPacket(512 - 16, (char) ('a' + i)).copyIntoTraceBuffer();
        }
        assertEquals(3, tb.stats().chunksOverwritten());
        tb.beginRead();
        Packet first = read();
        assertEquals(frags(frag(512 - 16, 'd')), first.fragments());
        assertEquals(PRESENT | OVERWRITE, first.dropped());
        assertEquals(65, first.dropped());
        for (int i = 4; i < 11; i++) {
            Packet p = read();
            assertEquals(frags(frag(512 - 16, (char) ('a' + i))), p.fragments());
            assertEquals(0, p.dropped());
        }
        assertReadNothing();
    }

    @Test
    void endFragmentWithoutBeginIsAnOrphan() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a', FIRST).addPacket(20, 'b').copyIntoTraceBuffer();
        tb.beginRead();
        Packet b = read();
        assertEquals(frags(frag(20, 'b')), b.fragments());
        assertEquals(PRESENT | ORPHAN_CONTINUATION, b.dropped());
        assertEquals(9, b.dropped());
    }

    @Test
    void beginFollowedByAWholePacketWithContiguousIdIsABrokenChain() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a', LAST).copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(20, 'b').copyIntoTraceBuffer();
        tb.beginRead();
        Packet b = read();
        assertEquals(frags(frag(20, 'b')), b.fragments());
        assertEquals(PRESENT | REASSEMBLY_BROKEN_CHAIN, b.dropped());
        assertEquals(33, b.dropped());
        assertEquals(1, tb.stats().readaheadsFailed());
    }

    @Test
    void beginMissingChunkEndWhole() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a', LAST).copyIntoTraceBuffer();
        chunk(1, 1, 2).addPacket(20, 'b', FIRST).addPacket(30, 'c').copyIntoTraceBuffer();
        tb.beginRead();
        Packet c = read();
        assertEquals(frags(frag(30, 'c')), c.fragments());
        assertEquals(PRESENT | READ_GAP | ORPHAN_CONTINUATION | REASSEMBLY_GAP, c.dropped());
        assertEquals(27, c.dropped());
        assertReadNothing();
    }

    @Test
    void gapsFlagOnlyThePacketsAfterThem() {
        reset(4096);
        for (int id : new int[] {1, 3, 4, 6}) {
            chunk(1, 1, id).addPacket(10, (char) ('0' + id)).copyIntoTraceBuffer();
        }
        tb.beginRead();
        assertEquals(0, read().dropped());
        assertEquals(PRESENT | READ_GAP, read().dropped());
        assertEquals(0, read().dropped());
        assertEquals(PRESENT | READ_GAP, read().dropped());
        assertReadNothing();
    }

    @Test
    void gapsAreDetectedAcrossSeparateReadBatches() {
        reset(4096);
        int[] ids = {1, 3, 4, 6};
        int[] expected = {0, PRESENT | READ_GAP, 0, PRESENT | READ_GAP};
        for (int i = 0; i < ids.length; i++) {
            chunk(1, 1, ids[i]).addPacket(10, 'a').copyIntoTraceBuffer();
            tb.beginRead();
            assertEquals(expected[i], read().dropped());
            assertReadNothing();
        }
    }

    @Test
    void gapIsDetectedAfterTheSequenceWasFullyEvictedByOthers() {
        reset(4096);
        chunk(1, 1, 1).addPacket(10, 'a').copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(10, 'a'));
        assertReadNothing();
        for (int i = 0; i < 16; i++) {
            chunk(2, 1, i).addPacket(512 - 16, 'x').copyIntoTraceBuffer();
        }
        chunk(1, 1, 3).addPacket(10, 'c').copyIntoTraceBuffer();
        tb.beginRead();
        Packet c = null;
        for (Packet p = read(); !p.isEmpty(); p = read()) {
            if (p.producerId() == 1) {
                c = p;
            }
        }
        assertEquals(frags(frag(10, 'c')), c.fragments());
        assertEquals(PRESENT | READ_GAP, c.dropped());
    }
}
