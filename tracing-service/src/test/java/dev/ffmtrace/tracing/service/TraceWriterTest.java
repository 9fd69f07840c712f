package dev.ffmtrace.tracing.service;

import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.service.InProcessService.ReadPacket;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.SharedMemoryArbiter;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

class TraceWriterTest {
    /** The bytes protozero writes for a packet with {@code payload} nested {@code depth} levels down. */
    static byte[] contiguous(byte[] payload, int depth) {
        HeapBuffered<TestPacket> heap = new HeapBuffered<>(TestPacket.FACTORY);
        write(heap.get(), payload, depth);
        return heap.toByteArray();
    }

    static void write(TestPacket packet, byte[] payload, int depth) {
        TestPacket m = packet;
        for (int i = 0; i < depth; i++) {
            m = m.nested();
        }
        m.payload(payload);
    }

    static byte[] pattern(int size, int seed) {
        byte[] bytes = new byte[size];
        for (int i = 0; i < size; i++) {
            bytes[i] = (byte) (i * 7 + seed);
        }
        return bytes;
    }

    @Test
    void packetsThatFitAreReadBackWhole() {
        try (InProcessService service = new InProcessService(64 * 4096, 4096, 1 << 20)) {
            SharedMemoryArbiter arbiter = new SharedMemoryArbiter(service.abi.segment(), service.abi.pageSize(), service);
            TraceWriter<TestPacket> writer = arbiter.createTraceWriter(0, BufferExhaustedPolicy.STALL, new TestPacket());
            List<byte[]> expected = new ArrayList<>();
            for (int i = 0; i < 500; i++) {
                byte[] payload = pattern(i % 60, i);
                writer.newTracePacket().payload(payload);
                writer.finishTracePacket();
                expected.add(contiguous(payload, 0));
            }
            writer.close();
            assertPackets(expected, service.readAll(), writer.writerId());
            assertEquals(0, service.reader.abiViolations());
        }
    }

    @Test
    void perfettoTracePacketsDecodeAfterTheRoundTrip() {
        try (InProcessService service = new InProcessService(16 * 4096, 4096, 1 << 20)) {
            SharedMemoryArbiter arbiter = new SharedMemoryArbiter(service.abi.segment(), service.abi.pageSize(), service);
            TraceWriter<TracePacket> writer = arbiter.createTraceWriter(0, BufferExhaustedPolicy.STALL);
            for (int i = 0; i < 1000; i++) {
                TracePacket packet = writer.newTracePacket();
                packet.setTimestamp(1_000_000L + i);
                TrackEvent event = packet.setTrackEvent();
                event.setType(TrackEvent.Type.TYPE_SLICE_BEGIN);
                event.setName("event " + i + " " + "x".repeat(i % 300));
                writer.finishTracePacket();
            }
            writer.flush();
            List<ReadPacket> packets = service.readAll();
            assertEquals(1000, packets.size());
            TracePacket.Decoder packet = new TracePacket.Decoder();
            TrackEvent.Decoder event = new TrackEvent.Decoder();
            for (int i = 0; i < 1000; i++) {
                packet.reset(java.lang.foreign.MemorySegment.ofArray(packets.get(i).bytes()));
                assertEquals(1_000_000L + i, packet.timestamp());
                assertTrue(packet.trackEvent(event));
                assertEquals(TrackEvent.Type.TYPE_SLICE_BEGIN, event.typeEnum());
                assertEquals("event " + i + " " + "x".repeat(i % 300), event.name());
            }
        }
    }

    @Test
    void aPacketClosedByTryWithResourcesIsFinished() {
        try (InProcessService service = new InProcessService(16 * 4096, 4096, 1 << 20)) {
            SharedMemoryArbiter arbiter = new SharedMemoryArbiter(service.abi.segment(), service.abi.pageSize(), service);
            TraceWriter<TestPacket> writer = arbiter.createTraceWriter(0, BufferExhaustedPolicy.STALL, new TestPacket());
            List<byte[]> expected = new ArrayList<>();
            for (int i = 0; i < 300; i++) {
                byte[] payload = pattern(i % 40 + 3000 * (i % 7 == 0 ? 1 : 0), i);
                try (TestPacket packet = writer.newTracePacket()) {
                    write(packet, payload, i % 3);
                }
                expected.add(contiguous(payload, i % 3));
            }
            assertEquals(300, writer.packetsFinished(), "each block's end finished its packet");
            TestPacket stale = writer.newTracePacket();
            write(stale, pattern(5, 1), 0);
            writer.finishTracePacket();
            stale.close();
            assertEquals(301, writer.packetsFinished(), "closing a finished packet does nothing");
            expected.add(contiguous(pattern(5, 1), 0));
            writer.close();
            List<ReadPacket> read = service.readAll();
            assertEquals(expected.size(), read.size());
            for (int i = 0; i < expected.size(); i++) {
                // Packets that crossed a chunk keep 4-byte size fields: compare the decoded structure.
                assertArrayEquals(WireCanonical.of(expected.get(i)), WireCanonical.of(read.get(i).bytes()), "packet " + i);
            }
        }
    }

    @Test
    void anotherThreadClosesTheWriterAfterThePacketInProgress() throws Exception {
        try (InProcessService service = new InProcessService(64 * 4096, 4096, 64 << 20)) {
            SharedMemoryArbiter arbiter = new SharedMemoryArbiter(service.abi.segment(), service.abi.pageSize(), service);
            TraceWriter<TestPacket> writer = arbiter.createTraceWriter(0, BufferExhaustedPolicy.STALL, new TestPacket());
            ExecutorService closer = Executors.newSingleThreadExecutor();
            try {
                int written = 0;
                Future<?> closed = null;
                try {
                    // At most what the 64 MiB buffer holds (about 110 bytes a packet): on a
                    // loaded machine the closer may run late, and a wrapped buffer would lose
                    // packets this test means to find.
                    for (; written < 400_000; written++) {
                        if (written == 1000) {
                            closed = closer.submit(writer::close);
                        }
                        try (TestPacket packet = writer.newTracePacket()) {
                            write(packet, pattern(100, written), 2);
                        }
                    }
                } catch (IllegalStateException e) {
                    assertTrue(e.getMessage().contains("is closed"), e.getMessage());
                }
                closed.get();
                List<ReadPacket> read = service.readAll();
                assertEquals(written, read.size(), "every packet begun before the close was finished whole");
                for (int i = 0; i < written; i++) {
                    assertArrayEquals(contiguous(pattern(100, i), 2), read.get(i).bytes());
                }
                assertEquals(0, service.reader.abiViolations());
            } finally {
                closer.shutdown();
            }
        }
    }

    @Test
    void aPacketLargerThanManyChunksIsFragmentedAndReassembled() {
        try (InProcessService service = new InProcessService(64 * 4096, 4096, 1 << 20)) {
            SharedMemoryArbiter arbiter = new SharedMemoryArbiter(service.abi.segment(), service.abi.pageSize(), service);
            TraceWriter<TestPacket> writer = arbiter.createTraceWriter(0, BufferExhaustedPolicy.STALL, new TestPacket());
            byte[] big = pattern(5 * 4096 + 123, 1);
            writer.newTracePacket().payload(new byte[] {1, 2, 3});
            writer.newTracePacket().payload(big);
            writer.newTracePacket().payload(new byte[] {4});
            writer.flush();
            assertPackets(List.of(contiguous(new byte[] {1, 2, 3}, 0), contiguous(big, 0), contiguous(new byte[] {4}, 0)),
                    service.readAll(), writer.writerId());
            assertTrue(arbiter.stats().chunksAcquired() >= 6);
        }
    }

    @Test
    void sizeFieldsLeftInReturnedChunksArePatchedToTheContiguousBytes() {
        try (InProcessService service = new InProcessService(64 * 4096, 4096, 1 << 20)) {
            SharedMemoryArbiter arbiter = new SharedMemoryArbiter(service.abi.segment(), service.abi.pageSize(), service);
            TraceWriter<TestPacket> writer = arbiter.createTraceWriter(0, BufferExhaustedPolicy.STALL, new TestPacket());
            // Nested bodies over 127 bytes keep 4-byte sizes everywhere, so the patched
            // packet must equal the contiguous encoding byte for byte.
            byte[] payload = pattern(3 * 4096, 9);
            write(writer.newTracePacket(), payload, 5);
            writer.finishTracePacket();
            writer.newTracePacket().payload(pattern(200, 3));
            writer.flush();
            List<ReadPacket> packets = service.readAll();
            assertEquals(2, packets.size());
            assertArrayEquals(contiguous(payload, 5), packets.get(0).bytes());
            assertArrayEquals(contiguous(pattern(200, 3), 0), packets.get(1).bytes());
            assertEquals(5, service.patchesApplied, "one patch per nested size field left in the first chunk");
            assertEquals(0, service.patchesRejected);
        }
    }

    @Test
    void smallNestedMessagesCompactInsideAChunkAndStillDecodeAcrossChunks() {
        try (InProcessService service = new InProcessService(16 * 4096, 4096, 1 << 20)) {
            SharedMemoryArbiter arbiter = new SharedMemoryArbiter(service.abi.segment(), service.abi.pageSize(), service);
            TraceWriter<TestPacket> writer = arbiter.createTraceWriter(0, BufferExhaustedPolicy.STALL, new TestPacket());
            List<byte[]> expected = new ArrayList<>();
            for (int i = 0; i < 300; i++) {
                TestPacket packet = writer.newTracePacket();
                packet.nested().payload(pattern(20, i));
                packet.payload(pattern(i % 7, i));
                writer.finishTracePacket();
                HeapBuffered<TestPacket> heap = new HeapBuffered<>(TestPacket.FACTORY);
                heap.get().nested().payload(pattern(20, i));
                heap.get().payload(pattern(i % 7, i));
                expected.add(heap.toByteArray());
            }
            writer.flush();
            List<ReadPacket> packets = service.readAll();
            assertEquals(expected.size(), packets.size());
            int straddling = 0;
            for (int i = 0; i < expected.size(); i++) {
                byte[] actual = packets.get(i).bytes();
                assertArrayEquals(WireCanonical.of(expected.get(i)), WireCanonical.of(actual), "packet " + i);
                if (!Arrays.equals(expected.get(i), actual)) {
                    straddling++;
                    assertEquals(expected.get(i).length + 3, actual.length,
                            "only a nested size field split from its body keeps 4 bytes");
                }
            }
            assertTrue(straddling > 0 && straddling < 20, "a few packets straddle chunks: " + straddling);
        }
    }

    @Test
    void aDropWriterDropsWhenTheBufferIsFullAndMarksTheNextPacket() {
        try (InProcessService service = new InProcessService(2 * 4096, 4096, 1 << 20)) {
            ConcurrentLinkedQueue<Integer> committed = new ConcurrentLinkedQueue<>();
            // The service does not move chunks until told to: the SMB fills up.
            SharedMemoryArbiter arbiter = new SharedMemoryArbiter(service.abi.segment(), service.abi.pageSize(), request -> committed.add(request.chunksToMove()));
            TraceWriter<TestPacket> writer = arbiter.createTraceWriter(0, BufferExhaustedPolicy.DROP, new TestPacket());
            for (int i = 0; i < 400; i++) {
                writer.newTracePacket().payload(pattern(30, i));
                writer.finishTracePacket();
            }
            assertTrue(writer.packetsDropped() > 0, "two pages hold fewer than 400 packets of 36 bytes");
            assertTrue(arbiter.stats().exhaustions() > 0);
            service.reader.drainCompleteChunks((w, id, packets, complete, smb, off, size) -> service.buffer.copyChunkUntrusted(
                    InProcessService.chunk(1, w, id, packets, complete), smb, off, size));
            writer.newTracePacket().payload(new byte[] {7});
            writer.flush();
            service.reader.drainCompleteChunks((w, id, packets, complete, smb, off, size) -> service.buffer.copyChunkUntrusted(
                    InProcessService.chunk(1, w, id, packets, complete), smb, off, size));
            List<ReadPacket> packets = service.readAll();
            byte[] last = packets.get(packets.size() - 1).bytes();
            // previous_packet_dropped = PRESENT | SMB_FULL = 257 (field 42, varint: d0 02 81 02), then the payload.
            assertArrayEquals(new byte[] {(byte) 0xd0, 0x02, (byte) 0x81, 0x02, 0x0a, 0x01, 0x07}, last);
            assertEquals(400 - writer.packetsDropped() - writer.fragmentsDropped(), packets.size() - 1,
                    "every packet neither dropped nor cut by the drop marker is read");
            assertEquals(1, writer.fragmentsDropped(), "the packet in flight when the SMB ran out");
        }
    }

    @Test
    void aFragmentCutShortByAFullBufferCarriesTheDropMarker() {
        try (InProcessService service = new InProcessService(2 * 4096, 4096, 1 << 20)) {
            SharedMemoryArbiter arbiter = new SharedMemoryArbiter(service.abi.segment(), service.abi.pageSize(), request -> { });
            TraceWriter<TestPacket> writer = arbiter.createTraceWriter(0, BufferExhaustedPolicy.DROP, new TestPacket());
            writer.newTracePacket().payload(pattern(10, 1));
            writer.newTracePacket().payload(pattern(3 * 4096, 2));
            writer.flush();
            assertEquals(1, writer.fragmentsDropped());
            service.reader.drainCompleteChunks((w, id, packets, complete, smb, off, size) -> service.buffer.copyChunkUntrusted(
                    InProcessService.chunk(1, w, id, packets, complete), smb, off, size));
            List<ReadPacket> packets = service.readAll();
            assertEquals(1, packets.size(), "the cut packet disappears, its neighbour stays");
            assertArrayEquals(contiguous(pattern(10, 1), 0), packets.get(0).bytes());
            assertEquals(1, service.buffer.stats().traceWriterPacketLoss());
        }
    }

    @Test
    void anIdleWritersChunkIsReclaimedWhenTheBufferRunsOut() {
        try (InProcessService service = new InProcessService(4096, 4096, 1 << 20)) {
            SharedMemoryArbiter arbiter = new SharedMemoryArbiter(service.abi.segment(), service.abi.pageSize(), 1, service, Duration.ofSeconds(5));
            TraceWriter<TestPacket> first = arbiter.createTraceWriter(0, BufferExhaustedPolicy.STALL, new TestPacket());
            TraceWriter<TestPacket> second = arbiter.createTraceWriter(0, BufferExhaustedPolicy.STALL, new TestPacket());
            first.newTracePacket().payload(new byte[] {1});
            first.finishTracePacket();
            // The only chunk belongs to the idle first writer: the second one takes it back.
            second.newTracePacket().payload(new byte[] {2});
            second.finishTracePacket();
            assertEquals(1, arbiter.stats().chunksReclaimed());
            second.flush();
            first.newTracePacket().payload(new byte[] {3});
            first.flush();
            List<ReadPacket> packets = service.readAll();
            assertEquals(3, packets.size());
            List<String> seen = new ArrayList<>();
            for (ReadPacket p : packets) {
                seen.add(p.writerId() + ":" + p.bytes()[p.bytes().length - 1]);
            }
            assertTrue(seen.containsAll(List.of(first.writerId() + ":1", second.writerId() + ":2", first.writerId() + ":3")), seen.toString());
            assertTrue(packets.stream().allMatch(p -> p.droppedReasons() == 0), "reclaiming loses nothing");
        }
    }

    @Test
    void aSweepReturnsTheChunksOfWritersThatStoppedWriting() {
        try (InProcessService service = new InProcessService(8 * 4096, 4096, 1 << 20)) {
            SharedMemoryArbiter arbiter = new SharedMemoryArbiter(service.abi.segment(), service.abi.pageSize(), service);
            TraceWriter<TestPacket> quiet = arbiter.createTraceWriter(0, BufferExhaustedPolicy.STALL, new TestPacket());
            TraceWriter<TestPacket> busy = arbiter.createTraceWriter(0, BufferExhaustedPolicy.STALL, new TestPacket());
            quiet.newTracePacket().payload(new byte[] {1});
            quiet.finishTracePacket();
            busy.newTracePacket().payload(new byte[] {2});
            busy.finishTracePacket();
            assertEquals(0, arbiter.sweepIdleWriters(), "both wrote since the writers were created");
            busy.newTracePacket().payload(new byte[] {3});
            busy.finishTracePacket();
            assertEquals(1, arbiter.sweepIdleWriters(), "only the quiet writer is idle for a whole period");
            assertEquals(List.of(quiet.writerId()), service.readAll().stream().map(ReadPacket::writerId).toList());
            busy.newTracePacket().payload(new byte[] {4});
            assertEquals(0, arbiter.sweepIdleWriters(), "a writer in the middle of a packet keeps its chunk");
            busy.flush();
            assertEquals(3, service.readAll().size());
        }
    }

    @Test
    void twoThousandVirtualThreadsShareOneFourMegabyteBufferWithoutLoss() throws Exception {
        int threads = 2000;
        int packetsPerThread = 20;
        try (InProcessService service = new InProcessService(4 << 20, 4096, 16 << 20)) {
            SharedMemoryArbiter arbiter = new SharedMemoryArbiter(service.abi.segment(), service.abi.pageSize(), 1, service, Duration.ofSeconds(30));
            List<Future<Integer>> results = new ArrayList<>();
            try (ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
                for (int t = 0; t < threads; t++) {
                    int seed = t;
                    results.add(executor.submit(() -> {
                        try (TraceWriter<TestPacket> writer = arbiter.createTraceWriter(0, BufferExhaustedPolicy.STALL, new TestPacket())) {
                            for (int i = 0; i < packetsPerThread; i++) {
                                writer.newTracePacket().payload(pattern(40, seed * 31 + i));
                                writer.finishTracePacket();
                                Thread.yield();
                            }
                            return writer.writerId();
                        }
                    }));
                }
            }
            for (Future<Integer> result : results) {
                result.get();
            }
            List<ReadPacket> packets = service.readAll();
            assertEquals(threads * packetsPerThread, packets.size());
            assertTrue(packets.stream().allMatch(p -> p.droppedReasons() == 0));
            assertEquals(0, service.reader.abiViolations());
        }
    }

    @Test
    void aClosedWriterRefusesPacketsAndItsIdComesBackOnlyAfterTheOthers() {
        try (InProcessService service = new InProcessService(4 * 4096, 4096, 1 << 16)) {
            SharedMemoryArbiter arbiter = new SharedMemoryArbiter(service.abi.segment(), service.abi.pageSize(), service);
            TraceWriter<TestPacket> writer = arbiter.createTraceWriter(0, BufferExhaustedPolicy.STALL, new TestPacket());
            writer.close();
            writer.close();
            assertEquals("trace writer 1 is closed",
                    assertThrows(IllegalStateException.class, writer::newTracePacket).getMessage());
            // Ids are handed out round-robin, so the service never mistakes a new writer
            // for an old one whose chunks it still holds; closed ids do come back.
            assertEquals(2, arbiter.createTraceWriter(0, BufferExhaustedPolicy.STALL, new TestPacket()).writerId());
            for (int i = 0; i < MAX_WRITER_ID + 10; i++) {
                arbiter.createTraceWriter(0, BufferExhaustedPolicy.STALL, new TestPacket()).close();
            }
        }
    }

    static void assertPackets(List<byte[]> expected, List<ReadPacket> actual, int writerId) {
        assertEquals(expected.size(), actual.size(), "packet count");
        for (int i = 0; i < expected.size(); i++) {
            ReadPacket packet = actual.get(i);
            assertEquals(writerId, packet.writerId());
            assertEquals(0, packet.droppedReasons(), "packet " + i + " loss flags");
            if (!Arrays.equals(expected.get(i), packet.bytes())) {
                throw new AssertionError("packet " + i + " differs: expected " + expected.get(i).length
                        + " bytes, got " + packet.bytes().length);
            }
        }
    }
}
