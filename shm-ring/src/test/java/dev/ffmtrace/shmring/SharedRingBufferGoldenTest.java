package dev.ffmtrace.shmring;

import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.METADATA_SIZE;
import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.PID_NAMESPACES_OFFSET;
import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.PID_NAMESPACE_SLOTS;
import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.WRITE_POS_OFFSET;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.ListeningSocket;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.memory.testing.Peers;
import java.lang.foreign.MemorySegment;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/**
 * The metadata page and the first records after one known sequence of operations, byte
 * for byte; the same sequence run by the C implementation on a buffer we created must
 * leave the same bytes.
 */
class SharedRingBufferGoldenTest {
    private static final long RING = 4096;

    /** 144 bytes, 8 per line: the layout of SharedRingBufferDescriptor. */
    private static final String METADATA = String.join("",
            "0001000000000000", // locked 0, poisoned 1, pad, holder pid 0 (released)
            "8000000000000000", // read_pos 128
            "8000000000000000", // write_pos 128
            "0000000000000000", // client_spinlock_blocked_us
            "0100000000000000", // failed_spinlocks: the poisoned lock
            "0100000000000000", // error_state HIT_TIMEOUT
            "0100000000000000", // shutting_down
            "0100000000000000", // reader_paused
            "6900000000000000", // bytes_written 5 + 100
            "0200000000000000", // num_writes_succeeded
            "0100000000000000", // num_writes_corrupt
            "0200000000000000", // num_writes_overflow: too big, no space
            "0200000000000000", // num_reads_succeeded
            "0100000000000000", // num_reads_corrupt
            "0100000000000000", // num_reads_nodata
            "0000000000000000", // failed_spinlocks copy: never written
            "0000000000000000", // client_spinlock_blocked_us copy: never written
            "0000000000000000"); // error_state copy: never written

    /** The first 26 ring bytes: record 0 (5 bytes, padded to 16) and the start of record 1 (100 bytes). */
    private static final String RING_START = String.join("",
            "0500000000000000", "05880b8e11000000",
            "6400000000000000", "75f8");

    @Test
    void javaLeavesTheGoldenBytes() {
        try (SharedRingBuffer buffer = SharedRingBuffer.create(RING)) {
            runSequence(buffer);
            assertGolden(buffer);
        }
    }

    @Test
    void cLeavesTheSameBytesInOurBuffer() {
        UnixAddress address = SharedRingBufferCrossProcessTest.freshAddress();
        try (ListeningSocket server = ListeningSocket.listen(address, 1);
             SharedRingBuffer buffer = SharedRingBuffer.create(RING)) {
            Peers.Peer peer = Peers.startNative(SharedRingBufferCrossProcessTest.buildRingPeer(),
                    "@" + address.name(), "attach", "golden");
            try (StreamSocket connection = server.accept()) {
                connection.send(new byte[] {'F'}, buffer.fd());
                byte[] done = new byte[1];
                assertEquals(1, connection.receive(done, 0).bytes());
                assertEquals('G', done[0]);
            }
            peer.awaitSuccess();
            assertGolden(buffer);
        }
    }

    /** Keep in step with golden() in native/src/ring_peer.c. */
    private static void runSequence(SharedRingBuffer buffer) {
        RecordSlot slot = buffer.newSlot();
        long[] lengths = {5, 100};
        for (int k = 0; k < lengths.length; k++) {
            assertTrue(buffer.lock(SharedRingBuffer.LockMode.TRY));
            assertEquals(SharedRingBuffer.WriteResult.OK, buffer.beginWrite(slot, lengths[k]));
            buffer.unlock();
            for (long i = 0; i < lengths[k]; i++) {
                slot.buffer().set(Layouts.BYTE, slot.offset() + i, RingRecords.pattern(k, lengths[k], i));
            }
            buffer.endWrite(slot);
        }
        assertEquals(SharedRingBuffer.ReadResult.OK, buffer.beginRead(slot));
        assertEquals(5, slot.length());
        buffer.endRead(slot);

        assertTrue(buffer.lock(SharedRingBuffer.LockMode.TRY));
        assertEquals(SharedRingBuffer.WriteResult.TOO_BIG, buffer.beginWrite(slot, RING - 7));
        assertEquals(SharedRingBuffer.WriteResult.NO_SPACE, buffer.beginWrite(slot, 4000));
        buffer.unlock();
        assertEquals(SharedRingBuffer.ReadResult.OK, buffer.beginRead(slot));
        assertEquals(100, slot.length());
        buffer.endRead(slot);
        assertEquals(SharedRingBuffer.ReadResult.NO_DATA, buffer.beginRead(slot));

        MemorySegment meta = buffer.metadata();
        long saved = meta.get(Layouts.LONG, WRITE_POS_OFFSET);
        meta.set(Layouts.LONG, WRITE_POS_OFFSET, saved + 1);
        assertTrue(buffer.lock(SharedRingBuffer.LockMode.TRY));
        assertEquals(SharedRingBuffer.WriteResult.CORRUPT, buffer.beginWrite(slot, 1));
        buffer.unlock();
        assertEquals(SharedRingBuffer.ReadResult.CORRUPT, buffer.beginRead(slot));
        meta.set(Layouts.LONG, WRITE_POS_OFFSET, saved);

        buffer.setErrorState(SharedRingBuffer.ErrorState.HIT_TIMEOUT);
        buffer.setShuttingDown();
        buffer.setReaderPaused();
        buffer.poisonSpinlock();
        assertFalse(buffer.lock(SharedRingBuffer.LockMode.TRY));
    }

    private static void assertGolden(SharedRingBuffer buffer) {
        HexFormat hex = HexFormat.of();
        assertEquals(METADATA, hex.formatHex(buffer.metadata().asSlice(0, METADATA_SIZE).toArray(Layouts.BYTE)));
        // ffmtrace's table after Perfetto's bytes: one entry, our namespace, whoever attached.
        long[] namespaces = buffer.metadata().asSlice(PID_NAMESPACES_OFFSET, 8L * PID_NAMESPACE_SLOTS).toArray(Layouts.LONG);
        long[] ours = new long[PID_NAMESPACE_SLOTS];
        ours[0] = Os.pidNamespaceId();
        assertArrayEquals(ours, namespaces);
        assertEquals(RING_START, hex.formatHex(ringStart(buffer)));
        assertEquals(new SharedRingBuffer.Stats(105, 2, 1, 2, 2, 1, 1, 1, 0, 1), buffer.stats());
        assertEquals(SharedRingBuffer.ErrorState.HIT_TIMEOUT, buffer.errorState());
        assertTrue(buffer.isShuttingDown());
        assertTrue(buffer.getAndResetReaderPaused());
        assertFalse(buffer.getAndResetReaderPaused());
    }

    private static byte[] ringStart(SharedRingBuffer buffer) {
        RecordSlot slot = buffer.newSlot();
        return slot.buffer().asSlice(0, RING_START.length() / 2).toArray(Layouts.BYTE);
    }
}
