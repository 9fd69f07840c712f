package dev.ffmtrace.tracing.service;

import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.tracing.service.reader.SharedMemoryReader;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbi;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * A producer may write anything anywhere in its SMB: the service-side reader and the
 * buffer behind it count what is wrong and never throw or read outside the chunk's page.
 */
class SharedMemoryReaderUntrustedTest {
    @Test
    void randomBytesEverywhereNeverEscapeTheReader() {
        SplittableRandom random = new SplittableRandom(42);
        int pageSize = 8192;
        try (InProcessService service = new InProcessService(8 * pageSize, pageSize, 1 << 20)) {
            MemorySegment smb = service.memory.segment();
            long[] violationsSeen = new long[1];
            SharedMemoryReader.ChunkSink sink = (writer, id, packets, complete, segment, offset, size) -> {
                long pageStart = offset - offset % pageSize;
                assertTrue(offset >= pageStart + PAGE_HEADER_SIZE + CHUNK_HEADER_SIZE && offset + size <= pageStart + pageSize,
                        "payload stays inside its page");
                assertTrue(writer >= 1 && writer <= MAX_WRITER_ID);
                service.buffer.copyChunkUntrusted(InProcessService.chunk(1, writer, id, packets, complete),
                        segment, offset, size);
            };
            for (int round = 0; round < 3000; round++) {
                int mutations = 1 + random.nextInt(64);
                for (int m = 0; m < mutations; m++) {
                    long at = random.nextLong(smb.byteSize() - 4);
                    if (random.nextInt(4) == 0) {
                        at -= at % pageSize;
                    }
                    smb.set(Layouts.INT_UNALIGNED, at, random.nextInt());
                }
                switch (random.nextInt(4)) {
                    case 0 -> service.reader.moveCompleteChunks(sink);
                    case 1 -> service.reader.scrapeChunksBeingWritten(sink);
                    case 2 -> service.reader.drainCompleteChunks(sink);
                    default -> service.reader.moveChunk(random.nextInt(-2, 10), random.nextInt(-2, 16), sink);
                }
                service.readAll();
                violationsSeen[0] = service.reader.abiViolations() + service.buffer.stats().abiViolations();
            }
            assertTrue(violationsSeen[0] > 0, "garbage is counted, not silently accepted");
        }
    }

    @Test
    void aCommitNamingAChunkThatIsNotCompleteIsCountedNotFollowed() {
        try (InProcessService service = new InProcessService(4 * 4096, 4096, 1 << 16)) {
            SharedMemoryAbi abi = service.abi;
            abi.tryPartitionPage(0, LAYOUT_DIV1);
            abi.tryAcquireChunkForWriting(0, 0, 1, 5);
            int[] delivered = new int[1];
            SharedMemoryReader.ChunkSink sink = (w, id, p, complete, smb, off, size) -> delivered[0]++;
            service.reader.moveChunk(0, 0, sink);
            service.reader.moveChunk(9, 0, sink);
            service.reader.moveChunk(1, 3, sink);
            assertEquals(0, delivered[0]);
            assertEquals(3, service.reader.abiViolations());
            assertEquals(CHUNK_BEING_WRITTEN, abi.chunkState(0, 0), "the writer keeps its chunk");
        }
    }

    @Test
    void aCompleteChunkWithAnInvalidWriterIdIsFreedAndCounted() {
        try (InProcessService service = new InProcessService(4 * 4096, 4096, 1 << 16)) {
            SharedMemoryAbi abi = service.abi;
            abi.tryPartitionPage(2, LAYOUT_DIV2);
            abi.tryAcquireChunkForWriting(2, 1, 1, 0);
            abi.releaseChunkAsComplete(2, 1);
            int[] delivered = new int[1];
            assertEquals(0, service.reader.moveCompleteChunks((w, id, p, complete, smb, off, size) -> delivered[0]++));
            assertEquals(0, delivered[0]);
            assertEquals(1, service.reader.abiViolations());
            assertTrue(abi.isPageFree(2), "the chunk went back to the producer");
        }
    }
}
