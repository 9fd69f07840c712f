package dev.ffmtrace.tracing.service;

import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.*;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ffmtrace.tracing.service.reader.SharedMemoryReader;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbi;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Scanning a producer's SMB for complete chunks, each writer's in chunk-id order. */
class SharedMemoryReaderTest {
    @Test
    void aWritersFirstChunkAcquiredLateInAScanIsStillMovedFirst() {
        try (Arena arena = Arena.ofConfined()) {
            SharedMemoryAbi abi = new SharedMemoryAbi(arena.allocate(4 * 4096, 4096), 4096);
            SharedMemoryReader reader = new SharedMemoryReader(abi);
            List<Integer> moved = new ArrayList<>();
            SharedMemoryReader.ChunkSink sink = (writer, chunkId, packets, complete, smb, offset, size) -> moved.add(chunkId);

            // The scan sees chunk 1 complete on page 2 while page 0, where chunk 0 is
            // about to be acquired, looked free: chunk 1 must not move first.
            abi.tryPartitionPage(2, LAYOUT_DIV1);
            abi.tryAcquireChunkForWriting(2, 0, 1, 9);
            abi.releaseChunkAsComplete(2, 0);
            assertEquals(0, reader.moveCompleteChunks(sink));
            abi.tryPartitionPage(0, LAYOUT_DIV1);
            abi.tryAcquireChunkForWriting(0, 0, 0, 9);
            assertEquals(0, reader.moveCompleteChunks(sink), "chunk 0 is still being written: chunk 1 waits");
            abi.releaseChunkAsComplete(0, 0);
            assertEquals(2, reader.moveCompleteChunks(sink));
            assertEquals(List.of(0, 1), moved);
        }
    }

    @Test
    void aStagedChunkIsFreedAtOnceAndDeliveredFromAPrivateCopy() {
        try (Arena arena = Arena.ofConfined()) {
            SharedMemoryAbi abi = new SharedMemoryAbi(arena.allocate(16 * 4096, 4096), 4096);
            SharedMemoryReader reader = new SharedMemoryReader(abi);
            abi.tryPartitionPage(0, LAYOUT_DIV1);
            long offset = abi.tryAcquireChunkForWriting(0, 0, 7, 3);
            abi.segment().set(java.lang.foreign.ValueLayout.JAVA_BYTE, offset + CHUNK_HEADER_SIZE, (byte) 42);
            abi.releaseChunkAsComplete(0, 0);

            int slot = reader.stageChunk(0, 0);
            assertEquals(0, slot);
            assertEquals(true, abi.isPageFree(0), "the producer has the chunk back");
            // The producer writes into it again: what the service delivers is what was committed.
            abi.tryPartitionPage(0, LAYOUT_DIV1);
            long again = abi.tryAcquireChunkForWriting(0, 0, 8, 3);
            abi.segment().set(java.lang.foreign.ValueLayout.JAVA_BYTE, again + CHUNK_HEADER_SIZE, (byte) 99);
            List<String> delivered = new ArrayList<>();
            reader.deliverStaged(slot, (writer, chunkId, packets, complete, smb, at, size) -> delivered.add(
                    writer + "/" + chunkId + "/" + complete + "/" + smb.get(java.lang.foreign.ValueLayout.JAVA_BYTE, at)
                            + "/" + size));
            assertEquals(List.of("3/7/true/42/" + (abi.chunkSize(LAYOUT_DIV1) - CHUNK_HEADER_SIZE)), delivered);
            assertEquals(1, reader.chunksMoved());

            // A chunk that is not complete is refused and counted, and takes no slot.
            assertEquals(-1, reader.stageChunk(0, 0));
            assertEquals(1, reader.abiViolations());
        }
    }

    @Test
    void stagingHoldsAtMostItsCapacityUntilCleared() {
        try (Arena arena = Arena.ofConfined()) {
            SharedMemoryAbi abi = new SharedMemoryAbi(arena.allocate(16 * 4096, 4096), 4096);
            SharedMemoryReader reader = new SharedMemoryReader(abi);
            int staged = 0;
            for (int page = 0; page < 16; page++) {
                abi.tryPartitionPage(page, LAYOUT_DIV4);
                for (int chunk = 0; chunk < 4; chunk++) {
                    abi.tryAcquireChunkForWriting(page, chunk, page * 4 + chunk, 1);
                    abi.releaseChunkAsComplete(page, chunk);
                }
                for (int chunk = 0; chunk < 4; chunk++) {
                    assertEquals(staged++, reader.stageChunk(page, chunk));
                }
            }
            assertEquals(SharedMemoryReader.MAX_STAGED, staged);
            assertEquals(true, reader.stagingFull());
            org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class, () -> reader.stageChunk(0, 0));
            reader.clearStaged();
            assertEquals(false, reader.stagingFull());
        }
    }

    @Test
    void laterChunksWaitForAMissingPredecessorUntilDrained() {
        try (Arena arena = Arena.ofConfined()) {
            SharedMemoryAbi abi = new SharedMemoryAbi(arena.allocate(4 * 4096, 4096), 4096);
            SharedMemoryReader reader = new SharedMemoryReader(abi);
            List<Integer> moved = new ArrayList<>();
            SharedMemoryReader.ChunkSink sink = (writer, chunkId, packets, complete, smb, offset, size) -> moved.add(chunkId);
            for (int id : new int[] {0, 1, 3}) {
                abi.tryPartitionPage(id, LAYOUT_DIV1);
                abi.tryAcquireChunkForWriting(id, 0, id, 4);
                abi.releaseChunkAsComplete(id, 0);
            }
            reader.moveCompleteChunks(sink);
            reader.moveCompleteChunks(sink);
            assertEquals(List.of(0, 1), moved, "chunk 3 waits for chunk 2");
            assertEquals(1, reader.drainCompleteChunks(sink), "a drain accepts the gap");
            assertEquals(List.of(0, 1, 3), moved);
        }
    }

    @Test
    void aScanOfSomeWritersLeavesTheOthersCompleteChunksForTheirCommits() {
        try (Arena arena = Arena.ofConfined()) {
            SharedMemoryAbi abi = new SharedMemoryAbi(arena.allocate(4 * 4096, 4096), 4096);
            SharedMemoryReader reader = new SharedMemoryReader(abi);
            List<String> moved = new ArrayList<>();
            SharedMemoryReader.ChunkSink sink = (writer, chunkId, packets, complete, smb, offset, size) ->
                    moved.add(writer + ":" + chunkId);
            // Writer 5 commits (its commit is on its way); writer 9 is scanned for.
            for (int page = 0; page < 4; page++) {
                abi.tryPartitionPage(page, LAYOUT_DIV1);
                abi.tryAcquireChunkForWriting(page, 0, page / 2, page % 2 == 0 ? 5 : 9);
                abi.releaseChunkAsComplete(page, 0);
            }
            reader.moveCompleteChunks(sink, writer -> writer == 9);
            reader.moveCompleteChunks(sink, writer -> writer == 9);
            assertEquals(List.of("9:0", "9:1"), moved);
            assertEquals(true, reader.moveChunk(0, 0, sink), "writer 5's commit finds its chunk");
            assertEquals(true, reader.moveChunk(2, 0, sink));
            assertEquals(0, reader.abiViolations());
        }
    }

    @Test
    void aScrapeNeverHandsOverAChunkBeforeAnOlderOneOfItsWriter() {
        try (Arena arena = Arena.ofConfined()) {
            SharedMemoryAbi abi = new SharedMemoryAbi(arena.allocate(4 * 4096, 4096), 4096);
            SharedMemoryReader reader = new SharedMemoryReader(abi);
            List<String> scraped = new ArrayList<>();
            SharedMemoryReader.ChunkSink sink = (writer, chunkId, packets, complete, smb, offset, size) ->
                    scraped.add(writer + ":" + chunkId + (complete ? "" : " incomplete"));
            // Writer 3 ran out of room mid-packet: it holds chunk 36, complete but not yet
            // committed, and chunk 37, acquired for the packet's continuation.
            for (int page = 0; page < 2; page++) {
                abi.tryPartitionPage(page, LAYOUT_DIV1);
            }
            long older = abi.tryAcquireChunkForWriting(0, 0, 36, 3, packets(5, 0));
            abi.releaseChunkAsComplete(0, 0);
            abi.tryAcquireChunkForWriting(1, 0, 37, 3, packets(1, FLAG_FIRST_PACKET_CONTINUES_FROM_PREV_CHUNK));
            assertEquals(0, reader.scrapeChunksBeingWritten(sink), "37 must wait for 36");
            assertEquals(true, reader.moveChunk(0, 0, sink), "the commit of 36");
            assertEquals(1, reader.scrapeChunksBeingWritten(sink));
            assertEquals(List.of("3:36", "3:37 incomplete"), scraped);
            assertEquals(0, abi.chunkId(older), "36 was freed");
        }
    }

    @Test
    void aGoneProducersUncommittedChunksMoveInOrderBeforeTheScrape() {
        try (Arena arena = Arena.ofConfined()) {
            SharedMemoryAbi abi = new SharedMemoryAbi(arena.allocate(6 * 4096, 4096), 4096);
            SharedMemoryReader reader = new SharedMemoryReader(abi);
            List<String> taken = new ArrayList<>();
            SharedMemoryReader.ChunkSink sink = (writer, chunkId, packets, complete, smb, offset, size) ->
                    taken.add(writer + ":" + chunkId + (complete ? "" : " incomplete"));
            for (int page = 0; page < 6; page++) {
                abi.tryPartitionPage(page, LAYOUT_DIV1);
            }
            // Writer 3 died with chunk 36 complete and its commit unsent, 37 being written;
            // its pages run backwards, so 37 is met before 36. Writer 4 completed 9 and 11
            // (10 was committed), is scanned for instead (2 is adopted), and writer 2's
            // complete chunk is left alone.
            abi.tryAcquireChunkForWriting(1, 0, 36, 3, packets(5, 0));
            abi.releaseChunkAsComplete(1, 0);
            abi.tryAcquireChunkForWriting(0, 0, 37, 3, packets(1, FLAG_FIRST_PACKET_CONTINUES_FROM_PREV_CHUNK));
            for (int[] chunk : new int[][] {{2, 9, 4}, {3, 11, 4}, {4, 1, 2}}) {
                abi.tryAcquireChunkForWriting(chunk[0], 0, chunk[1], chunk[2], packets(2, 0));
                abi.releaseChunkAsComplete(chunk[0], 0);
            }

            assertEquals(3, reader.moveUncommittedChunks(sink, writer -> writer != 2));
            assertEquals(1, reader.scrapeChunksBeingWritten(sink));
            assertEquals(List.of("3:36", "4:9", "4:11", "3:37 incomplete"), taken);
            assertEquals(0, reader.abiViolations());
            assertEquals(true, reader.moveChunk(4, 0, (writer, chunkId, packets, complete, smb, offset, size) -> { }),
                    "writer 2's chunk is still there");
        }
    }
}
