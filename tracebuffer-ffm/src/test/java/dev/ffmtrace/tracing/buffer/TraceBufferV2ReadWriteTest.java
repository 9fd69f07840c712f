package dev.ffmtrace.tracing.buffer;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TraceBufferV2ReadWriteTest extends TraceBufferTestSupport {

    @Test
    void emptyBufferReadsNothing() {
        reset(4096);
        tb.beginRead();
        assertReadNothing();
        assertFalse(tb.hasData());
    }

    @Test
    void writeOneChunkThenReadItThousandTimes() {
        reset(64 * 1024);
        for (int id = 0; id < 1000; id++) {
            char seed = (char) id;
            chunk(1, 1, id).addPacket(42, seed).copyIntoTraceBuffer();
            tb.beginRead();
            assertRead(frag(42, seed));
            assertReadNothing();
            TraceBufferStats s = tb.stats();
            assertEquals(id + 1, s.chunksWritten());
            assertEquals(s.chunksWritten(), s.chunksRead());
            assertTrue(s.bytesWritten() > 0);
            assertEquals(s.bytesWritten(), s.bytesRead());
            assertEquals(0, s.paddingBytesWritten());
            assertEquals(0, s.paddingBytesCleared());
        }
    }

    @Test
    void oneChunkPerWriterReadsInWriteOrder() {
        for (int writers = 1; writers <= 10; writers++) {
            reset(4096);
            for (int i = 1; i <= writers; i++) {
                assertEquals(32, chunk(i, i, i).addPacket(16, (char) i).copyIntoTraceBuffer());
            }
            tb.beginRead();
            for (int i = 1; i <= writers; i++) {
                Packet p = read();
                assertEquals(frags(frag(16, (char) i)), p.fragments());
                assertEquals(i, p.producerId());
                assertEquals(i, p.writerId());
            }
            assertReadNothing();
        }
    }

    @Test
    void chunksFillTheBufferExactlyThreeTimes() {
        reset(4096);
        for (int lap = 0; lap < 3; lap++) {
            assertEquals(512, chunk(1, 1, lap * 4).addPacket(512 - 16, 'a').copyIntoTraceBuffer());
            assertEquals(512, chunk(1, 1, lap * 4 + 1).addPacket(512 - 16, 'b').copyIntoTraceBuffer());
            assertEquals(1024, chunk(1, 1, lap * 4 + 2).addPacket(1024 - 16, 'c').copyIntoTraceBuffer());
            assertEquals(2048, chunk(1, 1, lap * 4 + 3).addPacket(2048 - 16, 'd').copyIntoTraceBuffer());
            assertEquals(0, tb.writeOffset());
            tb.beginRead();
            assertRead(frag(512 - 16, 'a'));
            assertRead(frag(512 - 16, 'b'));
            assertRead(frag(1024 - 16, 'c'));
            assertRead(frag(2048 - 16, 'd'));
            assertReadNothing();
        }
    }

    /**
     * [c0 128][c1 256][c2 512][c3 1024][c4 2048]{128 tail}; c5 (512) pads the tail,
     * wraps, evicts c0..c2 and leaves a 384-byte padding piece after itself.
     */
    @Test
    void chunkNotFittingTheTailPadsWrapsAndEvicts() {
        reset(4096);
        assertEquals(128, chunk(1, 1, 0).addPacket(128 - 16, 'a').copyIntoTraceBuffer());
        assertEquals(256, chunk(1, 1, 1).addPacket(256 - 16, 'b').copyIntoTraceBuffer());
        assertEquals(512, chunk(1, 1, 2).addPacket(512 - 16, 'c').copyIntoTraceBuffer());
        assertEquals(1024, chunk(1, 1, 3).addPacket(1024 - 16, 'd').copyIntoTraceBuffer());
        assertEquals(2048, chunk(1, 1, 4).addPacket(2048 - 16, 'e').copyIntoTraceBuffer());
        assertEquals(3968, tb.writeOffset());
        assertEquals(512, chunk(1, 1, 5).addPacket(512 - 16, 'f').copyIntoTraceBuffer());
        assertEquals(512, tb.writeOffset());

        tb.beginRead();
        assertRead(frag(1024 - 16, 'd'));
        assertRead(frag(2048 - 16, 'e'));
        assertRead(frag(512 - 16, 'f'));
        assertReadNothing();

        TraceBufferStats s = tb.stats();
        assertEquals(6, s.chunksWritten());
        assertEquals(3, s.chunksOverwritten());
        assertEquals(3, s.chunksRead());
        assertEquals(4480, s.bytesWritten());
        assertEquals(896, s.bytesOverwritten());
        assertEquals(3584, s.bytesRead());
        assertEquals(384, s.paddingBytesWritten());
        assertEquals(0, s.paddingBytesCleared());
        assertEquals(1, s.writeWrapCount());

        assertEquals(128, chunk(1, 1, 6).addPacket(128 - 16, 'g').copyIntoTraceBuffer());
        assertEquals(384, tb.stats().paddingBytesCleared());
    }

    /**
     * [c0 2048][c1 1024][c2 1008][c3 16] then [c4 2032][c5 1040][c6 16][c7 1008]:
     * the second lap leaves 16-byte header-only padding pieces; only it is read.
     */
    @Test
    void emptyChunksAndHeaderOnlyPaddingPieces() {
        reset(4096);
        assertEquals(2048, chunk(1, 1, 0).addPacket(2048 - 16, 'a').copyIntoTraceBuffer());
        assertEquals(1024, chunk(1, 1, 1).addPacket(1024 - 16, 'b').copyIntoTraceBuffer());
        assertEquals(1008, chunk(1, 1, 2).addPacket(1008 - 16, 'c').copyIntoTraceBuffer());
        assertEquals(16, chunk(1, 1, 3).copyIntoTraceBuffer());
        assertEquals(0, tb.writeOffset());

        assertEquals(2032, chunk(1, 1, 4).addPacket(2032 - 16, 'd').copyIntoTraceBuffer());
        assertEquals(1040, chunk(1, 1, 5).addPacket(1040 - 16, 'e').copyIntoTraceBuffer());
        assertEquals(16, chunk(1, 1, 6).copyIntoTraceBuffer());
        assertEquals(1008, chunk(1, 1, 7).addPacket(1008 - 16, 'f').copyIntoTraceBuffer());
        assertEquals(0, tb.writeOffset());
        assertEquals(16 + 992, tb.stats().paddingBytesWritten());

        tb.beginRead();
        assertRead(frag(2032 - 16, 'd'));
        assertRead(frag(1040 - 16, 'e'));
        assertRead(frag(1008 - 16, 'f'));
        for (int i = 0; i < 3; i++) {
            assertReadNothing();
        }
    }

    @Test
    void randomChunksWithoutWrappingReadInOrder() {
        for (int seed = 1; seed <= 32; seed++) {
            Random random = new Random(seed);
            int size = 4096 * (1 + random.nextInt(32));
            reset(size);
            record Expected(int producer, int writer, int chunkSize) {
            }
            List<Expected> expected = new ArrayList<>();
            int chunkId = random.nextInt();
            for (;;) {
                int chunkSize = 18 + random.nextInt(4096 - 18 + 1);
                if (TBChunkDescriptor.outerSize(chunkSize - 16) >= size - tb.writeOffset()) {
                    break;
                }
                int producer = 1 + random.nextInt(0xFFFF);
                int writer = 1 + random.nextInt(32767);
                expected.add(new Expected(producer, writer, chunkSize));
                chunk(producer, writer, chunkId++).addPacket(chunkSize - 16, (char) chunkSize)
                        .copyIntoTraceBuffer();
            }
            tb.beginRead();
            for (Expected e : expected) {
                Packet p = read();
                assertEquals(frags(frag(e.chunkSize - 16, (char) e.chunkSize)), p.fragments());
                assertEquals(e.producer, p.producerId());
                assertEquals(e.writer, p.writerId());
            }
            assertReadNothing();
        }
    }

    /** A 4080-byte chunk leaves 16 bytes; an empty chunk fills them; then 2048-byte chunks wrap. */
    @Test
    void emptyChunkFillsTheLastSixteenBytes() {
        reset(4096);
        assertEquals(4080, chunk(1, 1, 0).addPacket(4080 - 16, 'a').copyIntoTraceBuffer());
        assertEquals(16, chunk(1, 1, 1).copyIntoTraceBuffer());
        assertEquals(0, tb.writeOffset());
        assertEquals(2048, chunk(1, 1, 2).addPacket(2048 - 16, 'b').copyIntoTraceBuffer());
        assertEquals(2048, chunk(1, 1, 3).addPacket(2048 - 16, 'c').copyIntoTraceBuffer());
        assertEquals(0, tb.writeOffset());
        tb.beginRead();
        assertRead(frag(2048 - 16, 'b'));
        assertRead(frag(2048 - 16, 'c'));
        assertReadNothing();
        // Chunk 0, and the empty chunk 1 too: it leaves the buffer, so it leaves the
        // accounting (Perfetto's C++ never counts a chunk with no payload).
        assertEquals(2, tb.stats().chunksOverwritten());
        assertEquals(4096, tb.stats().bytesOverwritten());
    }

    @Test
    void zeroLengthPacketsAreSkippedWithoutAbiViolation() {
        reset(4096);
        chunk(1, 1, 0).addRawFragment(0).addPacket(10, 'a').addRawFragment(0).addRawFragment(0)
                .addPacket(20, 'b').addRawFragment(0).copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(10, 'a'));
        assertRead(frag(20, 'b'));
        assertReadNothing();
        assertEquals(0, tb.stats().abiViolations());
        assertEquals(1, tb.stats().chunksRead());
    }

    @Test
    void packetsCarryTheirSequenceClientIdentity() {
        reset(4096);
        chunk(1, 1, 0).identity(11, 101).addPacket(10, 'a').copyIntoTraceBuffer();
        chunk(2, 1, 0).identity(22, 202).addPacket(10, 'b').copyIntoTraceBuffer();
        tb.beginRead();
        Packet a = read();
        assertEquals(11, a.uid());
        assertEquals(101, a.pid());
        Packet b = read();
        assertEquals(22, b.uid());
        assertEquals(202, b.pid());
        assertEquals(2, b.producerId());
    }

    @Test
    void writesEndTheReadBatch() {
        reset(4096);
        chunk(1, 1, 0).addPacket(10, 'a').addPacket(10, 'b').copyIntoTraceBuffer();
        tb.beginRead();
        assertRead(frag(10, 'a'));
        chunk(1, 1, 1).addPacket(10, 'c').copyIntoTraceBuffer();
        assertReadNothing();
        tb.beginRead();
        assertRead(frag(10, 'b'));
        assertRead(frag(10, 'c'));
    }
}
