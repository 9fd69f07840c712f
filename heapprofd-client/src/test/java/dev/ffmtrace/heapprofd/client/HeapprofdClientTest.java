package dev.ffmtrace.heapprofd.client;

import dev.ffmtrace.heapprofd.wire.ClientConfiguration;
import dev.ffmtrace.heapprofd.wire.WireRecord;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.UnixServerSocket;
import dev.ffmtrace.memory.UnixSocket;
import dev.ffmtrace.shmring.RecordSlot;
import dev.ffmtrace.shmring.SharedRingBuffer;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
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
    private static UnixServerSocket listen() {
        return UnixServerSocket.listen(UnixAddress.abstractName("ffmtrace-heapprofd-" + Os.pid() + "-" + System.nanoTime()), 1);
    }

    /** The service's half of the handshake: takes the /proc fds, sends the configuration in three pieces. */
    private static CompletableFuture<UnixSocket> serve(UnixServerSocket server, SharedRingBuffer ring,
                                                       ClientConfiguration configuration, List<String> procFiles) {
        return CompletableFuture.supplyAsync(() -> {
            UnixSocket client = server.accept();
            byte[] one = new byte[16];
            UnixSocket.Received hello = client.receive(one, 4);
            assertEquals(1, hello.bytes());
            for (int fd : hello.fds()) {
                try {
                    procFiles.add(Files.readSymbolicLink(Path.of("/proc/self/fd/" + fd)).toString());
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
                Os.closeFd(fd);
            }
            byte[] bytes = new byte[ClientConfiguration.SIZE];
            configuration.encodeTo(MemorySegment.ofArray(bytes), 0);
            client.send(Arrays.copyOfRange(bytes, 0, 100), ring.fd());
            client.send(Arrays.copyOfRange(bytes, 100, 3000));
            client.send(Arrays.copyOfRange(bytes, 3000, bytes.length));
            return client;
        });
    }

    private static List<WireRecord.Type> drain(SharedRingBuffer ring, List<long[]> fields) throws Exception {
        List<WireRecord.Type> types = new ArrayList<>();
        WireRecord reader = new WireRecord();
        RecordSlot slot = ring.newSlot();
        while (ring.beginRead(slot) == SharedRingBuffer.ReadResult.OK) {
            WireRecord.Type type = reader.read(slot.buffer(), slot.offset(), slot.length());
            types.add(type);
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
        try (UnixServerSocket server = listen(); SharedRingBuffer ring = SharedRingBuffer.create(64 << 10)) {
            CompletableFuture<UnixSocket> service = serve(server, ring, configuration, procFiles);
            try (HeapprofdClient client = HeapprofdClient.connect(server.address());
                 UnixSocket serviceEnd = service.get(30, TimeUnit.SECONDS)) {
                assertEquals(List.of("/proc/" + Os.pid() + "/maps", "/proc/" + Os.pid() + "/mem"), procFiles);
                assertEquals(configuration, client.configuration());
                int heap = client.registerHeap("java.ffm");
                int other = client.registerHeap("not.profiled");
                assertTrue(client.reportAllocation(heap, 0x1000, 64), "interval 1: every allocation");
                assertFalse(client.reportAllocation(other, 0x2000, 64), "a heap the configuration does not name");
                client.reportFree(heap, 0x1000);

                List<long[]> fields = new ArrayList<>();
                assertEquals(List.of(WireRecord.Type.HEAP_NAME, WireRecord.Type.HEAP_NAME, WireRecord.Type.MALLOC,
                        WireRecord.Type.FREE), drain(ring, fields));
                assertEquals(List.of(List.of(1L, 1L), List.of(2L, 0L), List.of(1L, 1L, 0x1000L, 64L, 64L),
                        List.of(1L, 2L, 0x1000L)), fields.stream().map(f -> Arrays.stream(f).boxed().toList()).toList(),
                        "the heap's allocation and free share its sequence numbers");
                byte[] wakeUps = new byte[16];
                assertTrue(serviceEnd.receive(wakeUps, 0).bytes() >= 1, "a byte after each record");

                serviceEnd.close();
                // The next wake-up finds the socket closed: the client stops, and says so without throwing.
                boolean recorded = true;
                for (int i = 0; i < 10 && recorded; i++) {
                    recorded = client.reportAllocation(heap, 0x3000 + i, 64);
                }
                assertFalse(recorded);
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
        try (UnixServerSocket server = listen()) {
            CompletableFuture<Void> service = CompletableFuture.runAsync(() -> {
                try (UnixSocket client = server.accept()) {
                    client.receive(new byte[16], 4).fds();
                    byte[] garbage = new byte[ClientConfiguration.SIZE];
                    Arrays.fill(garbage, (byte) 0x7f);
                    client.send(garbage);
                }
            });
            String message = assertThrows(HeapprofdException.class, () -> HeapprofdClient.connect(server.address()))
                    .getMessage();
            service.get(30, TimeUnit.SECONDS);
            assertTrue(message.endsWith("the configuration came without the ring's fd"), message);
        }
    }
}
