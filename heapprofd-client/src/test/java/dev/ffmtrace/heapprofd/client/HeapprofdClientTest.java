package dev.ffmtrace.heapprofd.client;

import dev.ffmtrace.heapprofd.wire.AllocMetadata;
import dev.ffmtrace.heapprofd.wire.ClientConfiguration;
import dev.ffmtrace.heapprofd.wire.WireRecord;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.ListeningSocket;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.shmring.RecordSlot;
import dev.ffmtrace.shmring.SharedRingBuffer;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The client against the service's side of the handshake played here on a real socket: the
 * /proc fds it sends, a configuration sent in pieces with the ring's fd, the records it
 * writes, and what it does when the service goes away.
 */
class HeapprofdClientTest {
    private static ListeningSocket listen() {
        return ListeningSocket.listen(UnixAddress.abstractName("ffmtrace-heapprofd-" + Os.pid() + "-" + System.nanoTime()), 1);
    }

    private static UnixAddress addressOf(ListeningSocket server) {
        return (UnixAddress) server.address();
    }

    /** The service's half of the handshake: takes the /proc fds, sends the configuration in three pieces. */
    private static CompletableFuture<StreamSocket> serve(ListeningSocket server, SharedRingBuffer ring,
                                                       ClientConfiguration configuration, List<String> procFiles) {
        return CompletableFuture.supplyAsync(() -> {
            StreamSocket client = server.accept();
            byte[] one = new byte[16];
            StreamSocket.Received hello = client.receive(one, 4);
            assertEquals(1, hello.bytes());
            for (int fd : hello.fds()) {
                try {
                    procFiles.add(Files.readSymbolicLink(Path.of("/proc/self/fd/" + fd)).toString());
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
                Os.closeFd(fd);
            }
            // As the service: its reader sleeps until the first record's wake-up byte.
            ring.setReaderPaused();
            byte[] bytes = new byte[ClientConfiguration.SIZE];
            configuration.encodeTo(MemorySegment.ofArray(bytes), 0);
            client.send(Arrays.copyOfRange(bytes, 0, 100), ring.fd());
            client.send(Arrays.copyOfRange(bytes, 100, 3000));
            client.send(Arrays.copyOfRange(bytes, 3000, bytes.length));
            return client;
        });
    }

    /** The frames of a Java stack payload, innermost first, resolved with the definitions seen so far. */
    static List<String> javaFrames(MemorySegment payload, Map<Long, String> definitions) {
        byte[] bytes = payload.toArray(ValueLayout.JAVA_BYTE);
        List<String> frames = new ArrayList<>();
        int[] at = {0};
        while (at[0] < bytes.length) {
            long tag = varint(bytes, at);
            long id = tag >>> 1;
            if ((tag & 1) != 0) {
                int length = (int) varint(bytes, at);
                definitions.put(id, new String(bytes, at[0], length, StandardCharsets.UTF_8));
                at[0] += length;
            }
            assertTrue(definitions.containsKey(id), "frame " + id + " used before it was defined");
            frames.add(definitions.get(id));
        }
        return frames;
    }

    static long varint(byte[] bytes, int[] at) {
        long value = 0;
        for (int shift = 0; ; shift += 7) {
            byte b = bytes[at[0]++];
            value |= (long) (b & 0x7F) << shift;
            if (b >= 0) {
                return value;
            }
        }
    }

    private static List<WireRecord.Type> drain(SharedRingBuffer ring, List<long[]> fields) throws Exception {
        return drain(ring, fields, new ArrayList<>(), new HashMap<>());
    }

    private static List<WireRecord.Type> drain(SharedRingBuffer ring, List<long[]> fields, List<List<String>> stacks,
                                               Map<Long, String> definitions) throws Exception {
        List<WireRecord.Type> types = new ArrayList<>();
        WireRecord reader = new WireRecord();
        RecordSlot slot = ring.newSlot();
        while (ring.beginRead(slot) == SharedRingBuffer.ReadResult.OK) {
            WireRecord.Type type = reader.read(slot.buffer(), slot.offset(), slot.length());
            types.add(type);
            if (type == WireRecord.Type.MALLOC) {
                assertEquals(AllocMetadata.ARCH_JAVA, reader.alloc().arch());
                stacks.add(javaFrames(reader.copyStack(slot.buffer(), slot.offset()), definitions));
            }
            fields.add(switch (type) {
                case MALLOC -> new long[] {reader.alloc().heapId(), reader.alloc().sequenceNumber(),
                        reader.alloc().allocAddress(), reader.alloc().allocSize(), reader.alloc().sampleSize()};
                case FREE -> new long[] {reader.heapId(), reader.freeSequenceNumber(), reader.freeAddress()};
                case HEAP_NAME -> new long[] {reader.heapId(), reader.sampleInterval()};
            });
            ring.endRead(slot);
        }
        return types;
    }

    @Test
    void theHandshakeTheRecordsAndTheServicesGoing() throws Exception {
        ClientConfiguration configuration = new ClientConfiguration(0, 0, 0, 0,
                List.of(new ClientConfiguration.Heap("java.ffm", 1)), false, false, false, false);
        List<String> procFiles = new ArrayList<>();
        try (ListeningSocket server = listen(); SharedRingBuffer ring = SharedRingBuffer.create(64 << 10)) {
            CompletableFuture<StreamSocket> service = serve(server, ring, configuration, procFiles);
            try (HeapprofdClient client = HeapprofdClient.connect(addressOf(server));
                 StreamSocket serviceEnd = service.get(30, TimeUnit.SECONDS)) {
                assertEquals(List.of("/proc/" + Os.pid() + "/maps", "/proc/" + Os.pid() + "/mem"), procFiles);
                assertEquals(configuration, client.configuration());
                int heap = client.registerHeap("java.ffm");
                int other = client.registerHeap("not.profiled");
                assertTrue(client.reportAllocation(heap, 0x1000, 64), "interval 1: every allocation");
                assertFalse(client.reportAllocation(other, 0x2000, 64), "a heap the configuration does not name");
                client.reportFree(heap, 0x1000);

                List<long[]> fields = new ArrayList<>();
                List<List<String>> stacks = new ArrayList<>();
                assertEquals(List.of(WireRecord.Type.HEAP_NAME, WireRecord.Type.HEAP_NAME, WireRecord.Type.MALLOC,
                        WireRecord.Type.FREE), drain(ring, fields, stacks, new HashMap<>()));
                assertTrue(stacks.getFirst().getFirst().startsWith(
                        HeapprofdClientTest.class.getName() + ".theHandshakeTheRecordsAndTheServicesGoing(HeapprofdClientTest.java:"),
                        "the allocating frame first, the client's own left out: " + stacks.getFirst());
                assertEquals(List.of(List.of(1L, 1L), List.of(2L, 0L), List.of(1L, 1L, 0x1000L, 64L, 64L),
                        List.of(1L, 2L, 0x1000L)), fields.stream().map(f -> Arrays.stream(f).boxed().toList()).toList(),
                        "the heap's allocation and free share its sequence numbers");
                byte[] wakeUps = new byte[16];
                assertEquals(1, serviceEnd.receive(wakeUps, 0).bytes(),
                        "one byte: the first record's writer found the reader paused, the others did not");

                // The reader sleeps again, and the service goes: the next record's wake-up finds
                // the socket closed, and the client stops, saying so without throwing.
                ring.setReaderPaused();
                serviceEnd.close();
                assertFalse(client.reportAllocation(heap, 0x3000, 64));
                assertFalse(client.isActive());
                assertFalse(client.reportAllocation(heap, 0x4000, 64));
            }
        }
    }

    @Test
    void aServiceThatIsNotThereOrSendsGarbageIsAnExceptionNotACrash() throws Exception {
        assertTrue(assertThrows(HeapprofdException.class, () -> HeapprofdClient.connect(
                UnixAddress.abstractName("ffmtrace-nobody-" + System.nanoTime()))).getMessage()
                .startsWith("cannot connect to heapprofd"));
        try (ListeningSocket server = listen()) {
            CompletableFuture<Void> service = CompletableFuture.runAsync(() -> {
                try (StreamSocket client = server.accept()) {
                    client.receive(new byte[16], 4).fds();
                    byte[] garbage = new byte[ClientConfiguration.SIZE];
                    Arrays.fill(garbage, (byte) 0x7f);
                    client.send(garbage);
                }
            });
            String message = assertThrows(HeapprofdException.class, () -> HeapprofdClient.connect(addressOf(server)))
                    .getMessage();
            service.get(30, TimeUnit.SECONDS);
            assertTrue(message.endsWith("the configuration came without the ring's fd"), message);
        }
    }

    @Test
    void aProfiledArenaReportsItsAllocationsWithTheirStacksAndFreesThemOnClose() throws Exception {
        ClientConfiguration configuration = new ClientConfiguration(0, 0, 0, 0,
                List.of(new ClientConfiguration.Heap("java.ffm", 1)), false, false, false, false);
        try (ListeningSocket server = listen(); SharedRingBuffer ring = SharedRingBuffer.create(64 << 10)) {
            CompletableFuture<StreamSocket> service = serve(server, ring, configuration, new ArrayList<>());
            try (HeapprofdClient client = HeapprofdClient.connect(addressOf(server));
                 StreamSocket serviceEnd = service.get(30, TimeUnit.SECONDS)) {
                int heap = client.registerHeap("java.ffm");
                List<Long> addresses = new ArrayList<>();
                try (ProfiledArena arena = new ProfiledArena(Arena.ofShared(), client, heap)) {
                    for (int i = 0; i < 3; i++) {
                        addresses.add(allocateSomething(arena, 100 + i).address());
                    }
                }
                List<long[]> fields = new ArrayList<>();
                List<List<String>> stacks = new ArrayList<>();
                Map<Long, String> definitions = new HashMap<>();
                assertEquals(List.of(WireRecord.Type.HEAP_NAME, WireRecord.Type.MALLOC, WireRecord.Type.MALLOC,
                        WireRecord.Type.MALLOC, WireRecord.Type.FREE, WireRecord.Type.FREE, WireRecord.Type.FREE),
                        drain(ring, fields, stacks, definitions));
                for (int i = 0; i < 3; i++) {
                    assertEquals(addresses.get(i), fields.get(1 + i)[2]);
                    assertEquals(100 + i, fields.get(1 + i)[3]);
                    assertEquals(addresses.get(i), fields.get(4 + i)[2], "freed when the arena closed");
                    assertTrue(stacks.get(i).getFirst().startsWith(HeapprofdClientTest.class.getName() + ".allocateSomething("),
                            stacks.get(i).toString());
                    assertTrue(stacks.get(i).get(1).startsWith(HeapprofdClientTest.class.getName()
                            + ".aProfiledArenaReportsItsAllocationsWithTheirStacksAndFreesThemOnClose("));
                }
                assertEquals(stacks.get(0), stacks.get(1), "the same call site, its frames interned once");
                assertTrue(definitions.size() < 3 * stacks.getFirst().size());
            }
        }
    }

    private static MemorySegment allocateSomething(Arena arena, long size) {
        return arena.allocate(size);
    }

    @Test
    void adaptiveSamplingDoublesTheIntervalWhileTheRingIsShortOfRoom() throws Exception {
        // A threshold above the ring's size: every sampled allocation finds the ring short of room.
        ClientConfiguration configuration = new ClientConfiguration(0, 0, 1 << 20, 8,
                List.of(new ClientConfiguration.Heap("java.ffm", 1)), false, false, false, false);
        try (ListeningSocket server = listen(); SharedRingBuffer ring = SharedRingBuffer.create(64 << 10)) {
            CompletableFuture<StreamSocket> service = serve(server, ring, configuration, new ArrayList<>());
            try (HeapprofdClient client = HeapprofdClient.connect(addressOf(server));
                 StreamSocket serviceEnd = service.get(30, TimeUnit.SECONDS)) {
                int heap = client.registerHeap("java.ffm");
                for (int i = 0; i < 6; i++) {
                    client.reportAllocation(heap, 0x1000 + i, 64);
                }
                List<long[]> fields = new ArrayList<>();
                List<WireRecord.Type> types = drain(ring, fields);
                List<Long> intervals = new ArrayList<>();
                for (int i = 0; i < types.size(); i++) {
                    if (types.get(i) == WireRecord.Type.HEAP_NAME) {
                        intervals.add(fields.get(i)[1]);
                    }
                }
                assertEquals(List.of(1L, 2L, 4L, 8L), intervals, "doubled up to the maximum, then kept");
                assertEquals(6, types.stream().filter(t -> t == WireRecord.Type.MALLOC).count(),
                        "allocations of 64 bytes stay at least the interval: all sampled");
            }
        }
    }

    @Test
    void eachThreadsSamplerFollowsAnAdaptedIntervalAfterItsNextSample() throws Exception {
        // Every sample finds the ring short of room: the first doubles 1024 to the maximum, 2048.
        ClientConfiguration configuration = new ClientConfiguration(0, 0, 1 << 20, 2048,
                List.of(new ClientConfiguration.Heap("java.ffm", 1024)), false, false, false, false);
        try (ListeningSocket server = listen(); SharedRingBuffer ring = SharedRingBuffer.create(64 << 10);
             ExecutorService other = Executors.newSingleThreadExecutor()) {
            CompletableFuture<StreamSocket> service = serve(server, ring, configuration, new ArrayList<>());
            try (HeapprofdClient client = HeapprofdClient.connect(addressOf(server));
                 StreamSocket serviceEnd = service.get(30, TimeUnit.SECONDS)) {
                int heap = client.registerHeap("java.ffm");
                // Zero bytes never sample: the other thread's sampler exists, at 1024, before the doubling.
                assertFalse(other.submit(() -> client.reportAllocation(heap, 0, 0)).get());
                sampleOneByteAllocations(client, heap, 1L << 32, 2);
                other.submit(() -> sampleOneByteAllocations(client, heap, 2L << 32, 2)).get();
                Thread late = Thread.ofPlatform().start(() -> sampleOneByteAllocations(client, heap, 3L << 32, 1));
                late.join();

                List<long[]> fields = new ArrayList<>();
                List<WireRecord.Type> types = drain(ring, fields);
                Map<Long, List<Long>> weightsByThread = new HashMap<>();
                List<Long> intervals = new ArrayList<>();
                for (int i = 0; i < types.size(); i++) {
                    long[] f = fields.get(i);
                    switch (types.get(i)) {
                        case MALLOC -> weightsByThread.computeIfAbsent(f[2] >>> 32, _ -> new ArrayList<>()).add(f[4]);
                        case HEAP_NAME -> intervals.add(f[1]);
                        case FREE -> throw new AssertionError("no frees reported");
                    }
                }
                assertEquals(List.of(1024L, 2048L), intervals);
                // One-byte allocations cross one sample at a time: each weighs its sampler's interval.
                assertEquals(Map.of(1L, List.of(1024L, 2048L), 2L, List.of(1024L, 2048L), 3L, List.of(2048L)),
                        weightsByThread, "a gap drawn at 1024 weighs 1024; the next, and a new thread's first, 2048");
            }
        }
    }

    /** Reports one-byte allocations from {@code base} on until {@code samples} of them were recorded. */
    private static void sampleOneByteAllocations(HeapprofdClient client, int heap, long base, int samples) {
        for (long address = base; samples > 0; address++) {
            samples -= client.reportAllocation(heap, address, 1) ? 1 : 0;
        }
    }

    @Test
    void theSamplesOfManyThreadsAddUpToTheBytesTheyAllocated() throws Exception {
        long interval = 4096;
        int threads = 4;
        int allocations = 50_000;
        ClientConfiguration configuration = new ClientConfiguration(0, 0, 0, 0,
                List.of(new ClientConfiguration.Heap("java.ffm", interval)), false, false, false, false);
        try (ListeningSocket server = listen(); SharedRingBuffer ring = SharedRingBuffer.create(16 << 20)) {
            CompletableFuture<StreamSocket> service = serve(server, ring, configuration, new ArrayList<>());
            try (HeapprofdClient client = HeapprofdClient.connect(addressOf(server));
                 StreamSocket serviceEnd = service.get(30, TimeUnit.SECONDS)) {
                int heap = client.registerHeap("java.ffm");
                long[] allocated = new long[threads];
                List<Thread> started = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    int thread = t;
                    started.add(Thread.ofPlatform().start(() -> {
                        SplittableRandom sizes = new SplittableRandom(thread);
                        for (int i = 0; i < allocations; i++) {
                            long size = 1 + sizes.nextInt(256);
                            allocated[thread] += size;
                            client.reportAllocation(heap, ((long) thread << 32) + i, size);
                        }
                    }));
                }
                for (Thread thread : started) {
                    thread.join();
                }
                assertTrue(client.isActive(), "the ring had room for every sample");
                List<long[]> fields = new ArrayList<>();
                List<WireRecord.Type> types = drain(ring, fields);
                long[] sampled = new long[threads];
                Set<Long> sequenceNumbers = new HashSet<>();
                for (int i = 0; i < types.size(); i++) {
                    if (types.get(i) == WireRecord.Type.MALLOC) {
                        sampled[(int) (fields.get(i)[2] >>> 32)] += fields.get(i)[4];
                        assertTrue(sequenceNumbers.add(fields.get(i)[1]), "a sequence number twice");
                    }
                }
                long allocatedTotal = Arrays.stream(allocated).sum();
                long sampledTotal = Arrays.stream(sampled).sum();
                // About 1,600 samples per thread: a relative spread of 2.5% per thread, 1.25% in all.
                for (int t = 0; t < threads; t++) {
                    assertTrue(Math.abs(sampled[t] - allocated[t]) < 5 * allocated[t] / Math.sqrt(allocated[t] / (double) interval),
                            "thread " + t + ": " + sampled[t] + " sampled of " + allocated[t] + " bytes");
                }
                assertTrue(Math.abs(sampledTotal - allocatedTotal) < 5 * allocatedTotal / Math.sqrt(allocatedTotal / (double) interval),
                        sampledTotal + " sampled of " + allocatedTotal + " bytes");
            }
        }
    }

    @Test
    void theUnsampledPathAllocatesNothing() throws Exception {
        ClientConfiguration configuration = new ClientConfiguration(0, 0, 0, 0,
                List.of(new ClientConfiguration.Heap("java.ffm", 1L << 40)), false, false, false, false);
        com.sun.management.ThreadMXBean threads =
                (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        try (ListeningSocket server = listen(); SharedRingBuffer ring = SharedRingBuffer.create(64 << 10)) {
            CompletableFuture<StreamSocket> service = serve(server, ring, configuration, new ArrayList<>());
            try (HeapprofdClient client = HeapprofdClient.connect(addressOf(server));
                 StreamSocket serviceEnd = service.get(30, TimeUnit.SECONDS)) {
                int heap = client.registerHeap("java.ffm");
                int sampled = 0;
                for (int i = 0; i < 200_000; i++) {
                    sampled += client.reportAllocation(heap, i, 64) ? 1 : 0;
                }
                long before = threads.getCurrentThreadAllocatedBytes();
                for (int i = 0; i < 1_000_000; i++) {
                    sampled += client.reportAllocation(heap, i, 64) ? 1 : 0;
                }
                long allocated = threads.getCurrentThreadAllocatedBytes() - before;
                assertEquals(0, sampled, "an interval of 2^40 bytes: nothing sampled");
                assertTrue(allocated < 1_000, "allocated " + allocated + " bytes in 1,000,000 unsampled allocations");
            }
        }
    }
}
