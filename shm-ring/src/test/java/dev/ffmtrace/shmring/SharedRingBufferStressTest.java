package dev.ffmtrace.shmring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.ListeningSocket;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.memory.testing.Peers;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * Two processes writing at once and one reading: a C writer (id 2) and a Java writer
 * thread (id 1) contend for the spinlock across processes, while this thread reads. Every
 * record has a random length, a per-writer sequence number and an FNV-1a checksum; the
 * reader checks each one and, at the end, that no record of either writer is missing.
 * Runs 2 seconds; {@code -Dshmring.stress.seconds=N} runs longer.
 */
class SharedRingBufferStressTest {
    private static final long RING = 16384;
    private static final int MAX_LENGTH = 3000;
    private static final double SECONDS = Double.parseDouble(System.getProperty("shmring.stress.seconds", "2"));

    @Test
    void twoProcessesWriteRandomRecordsAndEveryOneArrivesIntact() throws Exception {
        UnixAddress address = SharedRingBufferCrossProcessTest.freshAddress();
        try (ListeningSocket server = ListeningSocket.listen(address, 1);
             SharedRingBuffer buffer = SharedRingBuffer.create(RING)) {
            Peers.Peer peer = Peers.startNative(SharedRingBufferCrossProcessTest.buildRingPeer(), "@" + address.name(),
                    "attach", "stress-write", Double.toString(SECONDS), "2", Long.toString(System.nanoTime()),
                    Integer.toString(MAX_LENGTH));
            try (StreamSocket connection = server.accept()) {
                connection.send(new byte[] {'F'}, buffer.fd());
            }
            CompletableFuture<Integer> javaWriter = CompletableFuture.supplyAsync(() -> write(buffer));

            long[] received = new long[3];
            long deadline = System.nanoTime() + (long) ((SECONDS + 60) * 1e9);
            RecordSlot slot = buffer.newSlot();
            byte[] copy = new byte[MAX_LENGTH];
            while (true) {
                SharedRingBuffer.ReadResult result = buffer.beginRead(slot);
                if (result == SharedRingBuffer.ReadResult.OK) {
                    check(slot, copy, received);
                    buffer.endRead(slot);
                    continue;
                }
                assertEquals(SharedRingBuffer.ReadResult.NO_DATA, result, () -> "stats " + buffer.stats());
                if (javaWriter.isDone() && !peer.process().isAlive() && buffer.readAvailable() == 0) {
                    break;
                }
                assertTrue(System.nanoTime() < deadline, "stress test overran");
                Thread.yield();
            }
            long cWrote = Long.parseLong(peer.awaitSuccess().trim().substring("wrote ".length()));
            assertEquals(javaWriter.get().longValue(), received[1], "records from the Java writer");
            assertEquals(cWrote, received[2], "records from the C writer");
            assertTrue(received[1] > 0 && received[2] > 0, "both writers wrote");
            SharedRingBuffer.Stats stats = buffer.stats();
            assertEquals(received[1] + received[2], stats.numReadsSucceeded());
            assertEquals(stats.numWritesSucceeded(), stats.numReadsSucceeded());
            assertEquals(0, stats.numReadsCorrupt() + stats.numWritesCorrupt());
        }
    }

    private static void check(RecordSlot slot, byte[] copy, long[] received) {
        long length = slot.length();
        assertTrue(length >= RingRecords.STRESS_MIN_LENGTH && length <= MAX_LENGTH, "length " + length);
        int n = (int) length;
        // The payload is the other process's memory: copy it once, then check the copy.
        MemorySegment.copy(slot.buffer(), Layouts.BYTE, slot.offset(), copy, 0, n);
        ByteBuffer view = ByteBuffer.wrap(copy).order(ByteOrder.LITTLE_ENDIAN);
        int sequence = view.getInt(0);
        int writer = view.getInt(4);
        assertTrue(writer == 1 || writer == 2, "writer id " + writer);
        assertEquals(RingRecords.fnv1a(copy, n - 4), view.getInt(n - 4), "checksum of a record of writer " + writer);
        assertEquals(received[writer], sequence, "sequence of writer " + writer);
        received[writer]++;
    }

    /** Writer 1: the same record format as ring_peer's stress-write, for SECONDS. */
    private static int write(SharedRingBuffer buffer) {
        SplittableRandom random = new SplittableRandom();
        RecordSlot slot = buffer.newSlot();
        byte[] record = new byte[MAX_LENGTH];
        ByteBuffer view = ByteBuffer.wrap(record).order(ByteOrder.LITTLE_ENDIAN);
        long end = System.nanoTime() + (long) (SECONDS * 1e9);
        long deadline = end + RingRecords.DEADLINE_NANOS;
        int sequence = 0;
        // One record at least, however late this thread starts.
        do {
            int length = random.nextInt(RingRecords.STRESS_MIN_LENGTH, MAX_LENGTH + 1);
            view.putInt(0, sequence);
            view.putInt(4, 1);
            for (int i = 8; i < length - 4; i++) {
                record[i] = (byte) random.nextInt();
            }
            view.putInt(length - 4, RingRecords.fnv1a(record, length - 4));
            RingRecords.reserve(buffer, slot, length, deadline);
            MemorySegment.copy(record, 0, slot.buffer(), Layouts.BYTE, slot.offset(), length);
            buffer.endWrite(slot);
            sequence++;
        } while (System.nanoTime() < end);
        return sequence;
    }
}
