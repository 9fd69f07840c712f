package dev.ffmtrace.tracing.buffer;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Scraped (incomplete) chunks and their re-commits. */
class TraceBufferV2RecommitTest extends TraceBufferTestSupport {

    @Test
    void finalCommitOfAFullyReadScrapedChunkIsRelocated() {
        reset(4096);
        chunk(1, 1, 7).addPacket(100, 'a').addPacket(100, 'b').addPacket(100, 'c').padTo(512)
                .copyIntoTraceBuffer(false);
        tb.beginRead();
        assertRead(frag(100, 'a'));
        assertRead(frag(100, 'b'));
        assertReadNothing();
        chunk(1, 1, 7).addPacket(100, 'a').addPacket(100, 'b').addPacket(100, 'c').addPacket(100, 'd')
                .copyIntoTraceBuffer();
        TraceBufferStats s = tb.stats();
        assertEquals(1, s.chunksRelocated());
        assertEquals(0, s.chunksRewritten());
        assertEquals(0, s.chunksOverwritten());
        tb.beginRead();
        Packet c = read();
        assertEquals(frags(frag(100, 'c')), c.fragments());
        assertEquals(0, c.dropped());
        Packet d = read();
        assertEquals(frags(frag(100, 'd')), d.fragments());
        assertEquals(0, d.dropped());
        assertReadNothing();
    }

    @Test
    void secondScrapeAndFinalCommitWithUnreadFragmentsRewriteInPlace() {
        reset(4096);
        chunk(1, 1, 3).addPacket(100, 'a').addPacket(100, 'b').padTo(512).copyIntoTraceBuffer(false);
        chunk(1, 1, 3).addPacket(100, 'a').addPacket(100, 'b').addPacket(100, 'c').padTo(512)
                .copyIntoTraceBuffer(false);
        assertEquals(1, tb.stats().chunksRewritten());
        tb.beginRead();
        assertRead(frag(100, 'a'));
        chunk(1, 1, 3).addPacket(100, 'a').addPacket(100, 'b').addPacket(100, 'c').addPacket(100, 'd')
                .copyIntoTraceBuffer();
        assertEquals(2, tb.stats().chunksRewritten());
        assertEquals(0, tb.stats().chunksRelocated());
        assertEquals(1, tb.stats().chunksWritten());
        tb.beginRead();
        assertRead(frag(100, 'b'));
        assertRead(frag(100, 'c'));
        assertRead(frag(100, 'd'));
        assertReadNothing();
    }

    @Test
    void discardModeRewritesTheFinalCommitInPlace() {
        reset(4096, OverwritePolicy.DISCARD);
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').padTo(512).copyIntoTraceBuffer(false);
        tb.beginRead();
        assertRead(frag(100, 'a'));
        assertReadNothing();
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').copyIntoTraceBuffer();
        assertEquals(1, tb.stats().chunksRewritten());
        assertEquals(0, tb.stats().chunksRelocated());
        assertEquals(528, tb.stats().bytesWritten());
        tb.beginRead();
        assertRead(frag(100, 'b'));
        assertReadNothing();
    }

    /**
     * Regression (found by the fuzz test): a second scrape that grows a drained chunk
     * in place makes it readable again, but it is still the same 528 stored bytes, so
     * draining it again must not count it in bytes_read (nor chunks_read) again.
     */
    @Test
    void drainedScrapedChunkRegrownInPlaceCountsAsReadOnce() {
        reset(4096);
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').padTo(512).copyIntoTraceBuffer(false);
        tb.beginRead();
        assertRead(frag(100, 'a'));
        assertReadNothing();
        assertReadStats(528, 1, 528, 1);
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').addPacket(100, 'c').padTo(512)
                .copyIntoTraceBuffer(false);
        assertEquals(1, tb.stats().chunksRewritten());
        tb.beginRead();
        assertRead(frag(100, 'b'));
        assertReadNothing();
        assertReadStats(528, 1, 528, 1);
        // The final commit is relocated: a new stored chunk of alignUp(16 + 300, 16) bytes.
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').addPacket(100, 'c').copyIntoTraceBuffer();
        assertEquals(1, tb.stats().chunksRelocated());
        tb.beginRead();
        assertRead(frag(100, 'c'));
        assertReadNothing();
        assertReadStats(528 + 320, 2, 528 + 320, 2);
        assertEquals(0, tb.stats().bytesOverwritten());
    }

    /** As above in DISCARD mode, where the final commit itself reopens the drained chunk in place. */
    @Test
    void discardModeFinalCommitOfADrainedChunkCountsAsReadOnce() {
        reset(4096, OverwritePolicy.DISCARD);
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').padTo(512).copyIntoTraceBuffer(false);
        tb.beginRead();
        assertRead(frag(100, 'a'));
        assertReadNothing();
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(100, 'b'));
        assertReadNothing();
        assertReadStats(528, 1, 528, 1);
        assertEquals(1, tb.stats().chunksRewritten());
    }

    /**
     * A drained chunk regrown in place and then evicted with its new packet unread:
     * the loss is reported on the sequence, but the chunk's 528 bytes were already
     * counted as read, so they are not counted as overwritten too.
     */
    @Test
    void drainedChunkRegrownInPlaceThenEvictedIsNotCountedTwice() {
        reset(4096);
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').padTo(1008).copyIntoTraceBuffer(false);
        tb.beginRead();
        assertRead(frag(100, 'a'));
        assertReadNothing();
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').addPacket(100, 'c').padTo(1008)
                .copyIntoTraceBuffer(false);
        for (int i = 0; i < 4; i++) {
            chunk(2, 1, i).addPacket(1024 - 16, 'x').copyIntoTraceBuffer();
        }
        TraceBufferStats s = tb.stats();
        assertEquals(5 * 1024, s.bytesWritten());
        assertEquals(1024, s.bytesRead());
        assertEquals(1, s.chunksRead());
        assertEquals(0, s.bytesOverwritten());
        assertEquals(0, s.chunksOverwritten());
        chunk(1, 1, 1).addPacket(10, 'd').copyIntoTraceBuffer();
        tb.beginRead();
        Packet d = null;
        for (Packet p = read(); !p.isEmpty(); p = read()) {
            if (p.producerId() == 1) {
                d = p;
            }
        }
        assertEquals(frags(frag(10, 'd')), d.fragments());
        assertEquals(DataLossReason.PRESENT | DataLossReason.OVERWRITE, d.dropped());
    }

    private void assertReadStats(long bytesWritten, long chunksWritten, long bytesRead, long chunksRead) {
        TraceBufferStats s = tb.stats();
        assertEquals(bytesWritten, s.bytesWritten(), "bytes_written");
        assertEquals(chunksWritten, s.chunksWritten(), "chunks_written");
        assertEquals(bytesRead, s.bytesRead(), "bytes_read");
        assertEquals(chunksRead, s.chunksRead(), "chunks_read");
    }

    @Test
    void relocationWorksWhenTheContinuationAlreadyArrived() {
        reset(4096);
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').padTo(512).copyIntoTraceBuffer(false);
        tb.beginRead();
        assertRead(frag(100, 'a'));
        assertReadNothing();
        chunk(1, 1, 1).addPacket(50, 'c', FIRST).addPacket(60, 'd').copyIntoTraceBuffer();
        tb.beginRead();
        assertReadNothing();
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b', LAST).copyIntoTraceBuffer();
        assertEquals(1, tb.stats().chunksRelocated());
        tb.beginRead();
        Packet bc = read();
        assertEquals(frags(frag(100, 'b'), frag(50, 'c')), bc.fragments());
        assertEquals(0, bc.dropped());
        assertRead(frag(60, 'd'));
        assertReadNothing();
    }

    @Test
    void recommitBeforeAnyReadReadsAllPackets() {
        reset(4096);
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').padTo(512).copyIntoTraceBuffer(false);
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').addPacket(100, 'c').addPacket(100, 'd')
                .padTo(512).copyIntoTraceBuffer();
        assertEquals(1, tb.stats().chunksRewritten());
        tb.beginRead();
        assertRead(frag(100, 'a'));
        assertRead(frag(100, 'b'));
        assertRead(frag(100, 'c'));
        assertRead(frag(100, 'd'));
        assertReadNothing();
    }

    @Test
    void recommitAfterAPartialReadReturnsOnlyTheUnreadPackets() {
        reset(4096);
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').addPacket(100, 'c').padTo(512)
                .copyIntoTraceBuffer(false);
        tb.beginRead();
        assertRead(frag(100, 'a'));
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').addPacket(100, 'c').addPacket(100, 'd')
                .copyIntoTraceBuffer();
        assertEquals(1, tb.stats().chunksRewritten());
        tb.beginRead();
        assertRead(frag(100, 'b'));
        assertRead(frag(100, 'c'));
        assertRead(frag(100, 'd'));
        assertReadNothing();
    }

    @Test
    void recommitAfterAFullReadReturnsOnlyTheNewPackets() {
        reset(4096);
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').padTo(512).copyIntoTraceBuffer(false);
        tb.beginRead();
        assertRead(frag(100, 'a'));
        assertReadNothing();
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').addPacket(100, 'c').copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(100, 'b'));
        assertRead(frag(100, 'c'));
        assertReadNothing();
    }

    @Test
    void recommitOfAChunkAlreadyReadPastIsDiscarded() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(10, 'b').addPacket(10, 'c').copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(10, 'a'));
        assertRead(frag(10, 'b'));
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(10, 'x').copyIntoTraceBuffer();
        assertEquals(1, tb.stats().chunksDiscarded());
        tb.beginRead();
        assertRead(frag(10, 'c'));
        assertReadNothing();
    }

    @Test
    void scrapedZeroThenOneThenZeroCompleteJoinFragmentsInIdOrder() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b').padTo(256).copyIntoTraceBuffer(false);
        chunk(1, 1, 1).addPacket(30, 'c', FIRST).addPacket(40, 'd').copyIntoTraceBuffer();
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b', LAST).copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(10, 'a'));
        assertRead(frag(20, 'b'), frag(30, 'c'));
        assertRead(frag(40, 'd'));
        assertReadNothing();
    }

    @Test
    void identicalRecommitHasNoEffectBeforeOrAfterReading() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b').copyIntoTraceBuffer();
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b').copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(10, 'a'));
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b').copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(20, 'b'));
        assertReadNothing();
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b').copyIntoTraceBuffer();
        tb.beginRead();
        assertReadNothing();
        assertEquals(0, tb.stats().chunksRewritten());
        assertEquals(1, tb.stats().chunksWritten());
    }

    @Test
    void incompleteChunkStallsItsSequenceUntilRecommitted() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b').padTo(256).copyIntoTraceBuffer(false);
        chunk(1, 1, 1).addPacket(30, 'c').copyIntoTraceBuffer();
        chunk(2, 1, 0).addPacket(40, 'x').copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(10, 'a'));
        assertRead(frag(40, 'x'));
        assertReadNothing();
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b').copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(20, 'b'));
        assertRead(frag(30, 'c'));
        assertReadNothing();
    }

    @Test
    void incompleteChunkStallsAFragmentedPacket() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b', LAST).padTo(256).copyIntoTraceBuffer(false);
        chunk(1, 1, 1).addPacket(30, 'c', FIRST).copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(10, 'a'));
        assertReadNothing();
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b', LAST).copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(20, 'b'), frag(30, 'c'));
        assertReadNothing();
    }

    @Test
    void completedChunkEndingWithABeginWaitsForItsContinuation() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b').padTo(256).copyIntoTraceBuffer(false);
        tb.beginRead();
        assertRead(frag(10, 'a'));
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b').addPacket(30, 'c', LAST).copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(20, 'b'));
        assertReadNothing();
        chunk(1, 1, 1).addPacket(40, 'd', FIRST).copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(30, 'c'), frag(40, 'd'));
        assertReadNothing();
    }

    @Test
    void secondIdenticalScrapeKeepsTheChunkIncomplete() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b').padTo(256).copyIntoTraceBuffer(false);
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(20, 'b').padTo(256).copyIntoTraceBuffer(false);
        chunk(1, 1, 1).addPacket(30, 'c').copyIntoTraceBuffer();
        assertEquals(0, tb.stats().chunksDiscarded());
        assertEquals(0, tb.stats().chunksRewritten());
        tb.beginRead();
        assertRead(frag(10, 'a'));
        assertReadNothing();
    }

    /** Seq 1's scraped chunk is drained, then evicted by seq 2 filling the 4 KiB buffer. */
    private void scrapeDrainAndEvict() {
        reset(4096);
        assertEquals(1024, chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').addPacket(100, 'c')
                .padTo(1008).copyIntoTraceBuffer(false));
        tb.beginRead();
        assertRead(frag(100, 'a'));
        assertRead(frag(100, 'b'));
        assertReadNothing();
        for (int i = 0; i < 4; i++) {
            chunk(2, 1, i).addPacket(1024 - 16, 'x').copyIntoTraceBuffer();
        }
        assertEquals(0, tb.stats().chunksOverwritten());
        assertEquals(0, tb.stats().bytesOverwritten());
    }

    @Test
    void evictedScrapedChunkIsReadmittedWithMorePayload() {
        scrapeDrainAndEvict();
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').addPacket(100, 'c').addPacket(100, 'd')
                .padTo(1008).copyIntoTraceBuffer(false);
        tb.beginRead();
        Packet c = null;
        for (Packet p = read(); !p.isEmpty(); p = read()) {
            if (p.producerId() == 1) {
                assertEquals(null, c, "one packet only");
                c = p;
            }
        }
        assertEquals(frags(frag(100, 'c')), c.fragments());
        assertEquals(0, c.dropped());
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').addPacket(100, 'c').addPacket(100, 'd')
                .copyIntoTraceBuffer();
        tb.beginRead();
        Packet d = read();
        assertEquals(frags(frag(100, 'd')), d.fragments());
        assertEquals(0, d.dropped());
        assertReadNothing();
    }

    @Test
    void evictedDrainedScrapedChunkReturnsOnlyTheNewPacketOfItsLateCommit() {
        scrapeDrainAndEvict();
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').addPacket(100, 'c').copyIntoTraceBuffer();
        tb.beginRead();
        Packet c = null;
        int packets = 0;
        for (Packet p = read(); !p.isEmpty(); p = read()) {
            if (p.producerId() == 1) {
                c = p;
                packets++;
            }
        }
        assertEquals(1, packets);
        assertEquals(frags(frag(100, 'c')), c.fragments());
        assertEquals(0, c.dropped());
        assertEquals(0, tb.stats().chunksDiscarded());
    }

    @Test
    void consumedAndEvictedCompleteChunkIsRejected() {
        reset(4096);
        chunk(1, 1, 0).addPacket(1024 - 16, 'a').copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(1024 - 16, 'a'));
        for (int i = 0; i < 4; i++) {
            chunk(2, 1, i).addPacket(1024 - 16, 'x').copyIntoTraceBuffer();
        }
        chunk(1, 1, 0).addPacket(1024 - 16, 'a').addPacket(10, 'b').copyIntoTraceBuffer();
        assertEquals(1, tb.stats().chunksDiscarded());
        tb.beginRead();
        for (Packet p = read(); !p.isEmpty(); p = read()) {
            assertEquals(2, p.producerId());
        }
    }

    @Test
    void finalCommitOnAFullBufferMovesToTheCursorWithoutLossOrDuplicate() {
        reset(4096);
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').padTo(1008).copyIntoTraceBuffer(false);
        tb.beginRead();
        assertRead(frag(100, 'a'));
        for (int i = 0; i < 3; i++) {
            chunk(2, 1, i).addPacket(1024 - 16, (char) ('x' + i)).copyIntoTraceBuffer();
        }
        assertEquals(0, tb.writeOffset());
        chunk(1, 1, 0).addPacket(100, 'a').addPacket(100, 'b').copyIntoTraceBuffer();
        TraceBufferStats s = tb.stats();
        assertEquals(1, s.chunksRelocated());
        assertEquals(0, s.chunksOverwritten());
        tb.beginRead();
        int seq1 = 0;
        int seq2 = 0;
        for (Packet p = read(); !p.isEmpty(); p = read()) {
            assertEquals(0, p.dropped());
            if (p.producerId() == 1) {
                assertEquals(frags(frag(100, 'b')), p.fragments());
                seq1++;
            } else {
                seq2++;
            }
        }
        assertEquals(1, seq1);
        assertEquals(3, seq2);
    }
}
