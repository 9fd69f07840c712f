package dev.ffmtrace.tracing.buffer;

import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The value types of the write path: {@link ChunkCommit} and {@link ChunkPatches}. */
class ChunkCommitAndPatchesTest extends TraceBufferTestSupport {

    @Test
    void chunkCommitKeepsWhatIsSetByName() {
        ClientIdentity identity = new ClientIdentity(1000, 42);
        ChunkCommit chunk = new ChunkCommit();
        assertNull(chunk.clientIdentity());
        assertTrue(chunk.complete(), "a chunk is committed unless said scraped");
        assertSame(chunk, chunk.producer(7, identity).writerId(3).chunkId(-2).numFragments(5).flags(0x41)
                .complete(false));
        assertEquals(7, chunk.producerId());
        assertSame(identity, chunk.clientIdentity());
        assertEquals(3, chunk.writerId());
        assertEquals(-2, chunk.chunkId());
        assertEquals(5, chunk.numFragments());
        assertEquals(0x41, chunk.flags());
        assertFalse(chunk.complete());
    }

    @Test
    void chunkCommitNeedsAnIdentityButTakesAnyProducerClaim() {
        assertThrows(NullPointerException.class, () -> new ChunkCommit().producer(1, null));
        // Claims are the buffer's to check: out-of-range values are accepted here and counted there.
        ChunkCommit chunk = new ChunkCommit().producer(1, FakeChunk.DEFAULT_IDENTITY).writerId(-1)
                .numFragments(-5).flags(-1);
        reset(4096);
        tb.copyChunkUntrusted(chunk, MemorySegment.ofArray(new byte[] {1, 0}), 2);
        assertEquals(1, tb.stats().abiViolations());
    }

    @Test
    void copyingAChunkWithoutProducerThrows() {
        reset(4096);
        ChunkCommit chunk = new ChunkCommit().writerId(1).numFragments(1);
        assertThrows(NullPointerException.class,
                () -> tb.copyChunkUntrusted(chunk, MemorySegment.ofArray(new byte[] {1, 0}), 2));
    }

    @Test
    void patchesKeepTheirBytesInPayloadOrder() {
        ChunkPatches patches = new ChunkPatches().add(8, (byte) 0xDE, (byte) 0xAD, (byte) 0xBE, (byte) 0xEF)
                .addLittleEndian(-4, 0x04030201);
        assertEquals(2, patches.size());
        assertEquals(8, patches.offset(0));
        assertEquals((byte) 0xDE, patches.byteAt(0, 0));
        assertEquals((byte) 0xEF, patches.byteAt(0, 3));
        assertEquals(0xEFBEADDE, patches.littleEndianBytes(0));
        assertEquals(-4, patches.offset(1), "offsets are the producer's, refused by the buffer if out of bounds");
        assertEquals(1, patches.byteAt(1, 0));
        assertEquals(4, patches.byteAt(1, 3));
        assertThrows(IndexOutOfBoundsException.class, () -> patches.byteAt(0, 4));
        assertThrows(IndexOutOfBoundsException.class, () -> patches.byteAt(0, -1));
        assertThrows(IndexOutOfBoundsException.class, () -> patches.offset(2));
        assertThrows(IndexOutOfBoundsException.class, () -> patches.offset(-1));
        patches.clear();
        assertEquals(0, patches.size());
        assertThrows(IndexOutOfBoundsException.class, () -> patches.offset(0));
    }

    @Test
    void patchesGrowPastTheirInitialCapacity() {
        ChunkPatches patches = new ChunkPatches();
        for (int i = 0; i < 100; i++) {
            patches.addLittleEndian(i * 4L, i);
        }
        assertEquals(100, patches.size());
        assertEquals(99 * 4L, patches.offset(99));
        assertEquals(99, patches.littleEndianBytes(99));
    }

    @Test
    void noPatchesStillClearTheNeedsPatchingFlag() {
        reset(4096);
        chunk(1, 1, 0).addPacket(16, 'a', LAST | NEEDS_PATCHING).copyIntoTraceBuffer();
        chunk(1, 1, 1).addPacket(16, 'b', FIRST).copyIntoTraceBuffer();
        tb.beginRead();
        assertReadNothing();
        assertTrue(tb.tryPatchChunkContents(1, 1, 0, new ChunkPatches(), false));
        tb.beginRead();
        assertRead(frag(16, 'a'), frag(16, 'b'));
    }
}
