package dev.ffmtrace.tracing.buffer;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Once warm, copying (with overwrites), patching and reading allocate nothing. Measured
 * with the thread's allocation counter over thousands of operations, so a single
 * allocation per operation could not hide below the tolerance.
 */
class TraceBufferV2AllocationTest {
    private static final ClientIdentity IDENTITY = new ClientIdentity(1, 1);
    private static final int OPERATIONS = 4096;

    private final com.sun.management.ThreadMXBean threads =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    @Test
    void writeAndReadPathsDoNotAllocateOnceWarm() {
        try (Arena arena = Arena.ofConfined()) {
            TraceBufferV2 buffer = new TraceBufferV2(arena.allocate(256 * 1024, 16), OverwritePolicy.RING_BUFFER);
            MemorySegment whole = MemorySegment.ofArray(new FakeChunkBytes().whole());
            MemorySegment begin = MemorySegment.ofArray(new FakeChunkBytes().begin());
            MemorySegment end = MemorySegment.ofArray(new FakeChunkBytes().end());
            TracePacketView view = new TracePacketView();
            // One descriptor and one patch list for every call, as the service keeps them.
            ChunkCommit chunk = new ChunkCommit().producer(1, IDENTITY).complete(true);
            ChunkPatches patches = new ChunkPatches();
            int[] chunkIds = new int[8];
            for (int round = 0; round < 40; round++) {
                run(buffer, whole, begin, end, view, chunk, patches, chunkIds);
            }
            long before = threads.getCurrentThreadAllocatedBytes();
            run(buffer, whole, begin, end, view, chunk, patches, chunkIds);
            long allocated = threads.getCurrentThreadAllocatedBytes() - before;
            assertTrue(allocated < OPERATIONS / 8, "allocated " + allocated + " bytes in " + OPERATIONS + " operations");
        }
    }

    private static void run(TraceBufferV2 buffer, MemorySegment whole, MemorySegment begin, MemorySegment end,
                            TracePacketView view, ChunkCommit chunk, ChunkPatches patches, int[] chunkIds) {
        int patchData = 0;
        for (int i = 0; i < OPERATIONS; i++) {
            int writer = 1 + (i & 7);
            chunk.writerId(writer);
            switch (i % 4) {
                case 0, 1 -> buffer.copyChunkUntrusted(chunk.chunkId(chunkIds[writer & 7]++).numFragments(3).flags(0),
                        whole, whole.byteSize());
                case 2 -> {
                    buffer.copyChunkUntrusted(chunk.chunkId(chunkIds[writer & 7]++).numFragments(1)
                            .flags(TBChunkDescriptor.FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK
                                    | TBChunkDescriptor.FLAG_CHUNK_NEEDS_PATCHING), begin, begin.byteSize());
                    buffer.tryPatchChunkContents(1, writer, chunkIds[writer & 7] - 1,
                            patches.clear().addLittleEndian(4, patchData), false);
                    buffer.copyChunkUntrusted(chunk.chunkId(chunkIds[writer & 7]++).numFragments(1)
                            .flags(TBChunkDescriptor.FLAG_FIRST_PACKET_CONTINUES_FROM_PREV_CHUNK), end, end.byteSize());
                }
                default -> {
                    buffer.beginRead();
                    for (int n = 0; n < 16 && buffer.readNextTracePacket(view); n++) {
                        patchData += (int) view.size();
                    }
                }
            }
        }
    }

    /** Chunk payloads: three whole packets; a lone begin fragment; its end. */
    private static final class FakeChunkBytes {
        byte[] whole() {
            return concat(FakeChunk.encode(100, 'a'), FakeChunk.encode(300, 'b'), FakeChunk.encode(20, 'c'));
        }

        byte[] begin() {
            return FakeChunk.encode(200, 'd');
        }

        byte[] end() {
            return FakeChunk.encode(150, 'e');
        }

        private static byte[] concat(byte[]... parts) {
            java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
            for (byte[] part : parts) {
                out.writeBytes(part);
            }
            return out.toByteArray();
        }
    }
}
