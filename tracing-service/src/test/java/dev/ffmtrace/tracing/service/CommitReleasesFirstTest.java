package dev.ffmtrace.tracing.service;

import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.CHUNK_HEADER_SIZE;
import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.LAYOUT_DIV1;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.smb.CommitRequest;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbi;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * A commit hands every chunk it names back to the producer (Free in the SMB) before it
 * writes any of them into a trace buffer: a producer whose writers drop packets when the
 * SMB is full (Perfetto's SDK) waits for copies only, not for the service's parsing.
 */
class CommitReleasesFirstTest {
    private static final int PAGE = 4096;
    private static final int CHUNKS = 3;

    @Test
    void aCommitFreesEveryChunkItNamesBeforeWritingAnyIntoABuffer() throws Exception {
        SharedMemory smb = SharedMemory.create("commit-releases-first", 4 * PAGE);
        try (TracingService service = new TracingService()) {
            Producer producer = service.connectRemoteProducer(ProducerOptions.of("p"), smb, new NoCommands(), false);
            producer.registerDataSource("ds");
            TracingSession session = service.startSession(SessionConfig.builder()
                    .buffer(64, OverwritePolicy.RING_BUFFER).dataSource("ds").build());
            int bufferId = producer.dataSource("ds").targetBuffer();
            SharedMemoryAbi abi = new SharedMemoryAbi(smb.segment(), PAGE);
            CommitRequest request = new CommitRequest();
            for (int page = 0; page < CHUNKS; page++) {
                writeCompleteChunk(abi, page, page);
                request.addChunkToMove(page, 0, bufferId);
            }

            // The test holds the buffer's lock: the commit stops at its first write into
            // the buffer, and the SMB shows what it had handed back by then.
            ServiceBuffer buffer = service.buffer(bufferId);
            Thread committer;
            buffer.lock.lock();
            try {
                committer = Thread.ofPlatform().start(() -> producer.commit(request));
                while (!buffer.lock.hasQueuedThread(committer) && committer.isAlive()) {
                    Thread.onSpinWait();
                }
                assertTrue(committer.isAlive(), "the commit waits for the buffer's lock");
                for (int page = 0; page < CHUNKS; page++) {
                    assertTrue(abi.isPageFree(page), "chunk on page " + page + " is free before any is written: "
                            + Integer.toHexString(abi.pageBitmapAcquire(page)));
                }
            } finally {
                buffer.lock.unlock();
            }
            committer.join();
            assertEquals(CHUNKS, session.stats().getFirst().chunksWritten(), "every chunk reached the buffer");
            assertEquals(0, producer.abiViolations());
            session.close();
        }
    }

    /** Chunk {@code chunkId} of writer 1 on {@code page}: one 8-byte packet, complete. */
    private static void writeCompleteChunk(SharedMemoryAbi abi, int page, int chunkId) {
        assertTrue(abi.tryPartitionPage(page, LAYOUT_DIV1));
        long offset = abi.tryAcquireChunkForWriting(page, 0, chunkId, 1);
        long payload = offset + CHUNK_HEADER_SIZE;
        abi.segment().set(ValueLayout.JAVA_BYTE, payload, (byte) 8);
        for (int i = 1; i <= 8; i++) {
            abi.segment().set(ValueLayout.JAVA_BYTE, payload + i, (byte) i);
        }
        abi.incrementPacketCount(offset);
        assertTrue(abi.releaseChunkAsComplete(page, 0));
    }

    /** A producer in another process that is sent nothing: this test drives its commits itself. */
    private static final class NoCommands implements ProducerCommands {
        @Override
        public void startDataSource(DataSource dataSource, long instanceId, byte[] config) {
        }

        @Override
        public void stopDataSource(DataSource dataSource, long instanceId, Runnable done) {
            done.run();
        }

        @Override
        public CompletableFuture<Void> flush(List<DataSource.Instance> instances) {
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public void clearIncrementalState(DataSource.Instance instance) {
        }
    }
}
