package dev.ffmtrace.shmring;

import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.SPINLOCK_HOLDER_PID_OFFSET;
import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.SPINLOCK_LOCKED_OFFSET;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.Seals;
import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.ListeningSocket;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.memory.testing.CPrograms;
import dev.ffmtrace.memory.testing.Peers;
import java.nio.file.Path;
import java.util.function.Function;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * One buffer shared with a C process (native/src/ring_peer.c) and with a second JVM, both
 * ways: every record length from 1 byte to S - 8 once, in order, intact, in a one-page
 * ring, so the ring wraps about two thousand times.
 */
class SharedRingBufferCrossProcessTest {
    private static final long RING = 4096;
    static Path cPeer;

    @BeforeAll
    static void buildPeer() {
        cPeer = buildRingPeer();
    }

    static Path buildRingPeer() {
        return CPrograms.program("ring_peer");
    }

    static UnixAddress freshAddress() {
        return UnixAddress.abstractName("ffmtrace-shmring-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
    }

    // Both ways also with ring_peer built with ASan and UBSan, whose findings end it with a
    // status other than 0.
    @ParameterizedTest(name = "sanitized: {0}")
    @ValueSource(booleans = {false, true})
    void cWritesEveryLengthJavaReads(boolean sanitized) {
        Path peer = sanitized ? CPrograms.sanitized("ring_peer") : cPeer;
        peerWritesWeRead(args -> Peers.startNative(peer, args));
    }

    @ParameterizedTest(name = "sanitized: {0}")
    @ValueSource(booleans = {false, true})
    void javaWritesEveryLengthCReads(boolean sanitized) {
        Path peer = sanitized ? CPrograms.sanitized("ring_peer") : cPeer;
        weWritePeerReads(args -> Peers.startNative(peer, args));
    }

    @Test
    void secondJvmWritesEveryLengthWeRead() {
        peerWritesWeRead(args -> Peers.startJvm(RingPeer.class, args));
    }

    @Test
    void weWriteEveryLengthSecondJvmReads() {
        weWritePeerReads(args -> Peers.startJvm(RingPeer.class, args));
    }

    /** We create (the service), the peer attaches and writes. */
    private static void peerWritesWeRead(Function<String[], Peers.Peer> start) {
        UnixAddress address = freshAddress();
        try (ListeningSocket server = ListeningSocket.listen(address, 1);
             SharedRingBuffer buffer = SharedRingBuffer.create(RING)) {
            Peers.Peer peer = start.apply(new String[] {"@" + address.name(), "attach", "write-all"});
            try (StreamSocket connection = server.accept()) {
                connection.send(new byte[] {'F'}, buffer.fd());
                RingRecords.readAll(buffer);
            }
            assertEquals("wrote " + (RING - 8) + "\n", peer.awaitSuccess());
            SharedRingBuffer.Stats stats = buffer.stats();
            assertEquals(RING - 8, stats.numWritesSucceeded());
            assertEquals(RING - 8, stats.numReadsSucceeded());
            assertEquals((RING - 8) * (RING - 7) / 2, stats.bytesWritten());
            assertEquals(0, stats.numReadsCorrupt());
            assertEquals(0, stats.numWritesCorrupt());
            assertEquals(0, buffer.readAvailable());
        }
    }

    /** The peer creates (the service) and reads, we attach with the seal check and write. */
    private static void weWritePeerReads(Function<String[], Peers.Peer> start) {
        UnixAddress address = freshAddress();
        try (ListeningSocket server = ListeningSocket.listen(address, 1)) {
            Peers.Peer peer = start.apply(new String[] {"@" + address.name(), "create:" + RING, "read-all"});
            try (StreamSocket connection = server.accept();
                 SharedRingBuffer buffer = SharedRingBuffer.attach(connection.receive(new byte[1], 1).fds()[0], Seals.REQUIRED)) {
                assertEquals(RING, buffer.size());
                RingRecords.writeAll(buffer);
                assertEquals("read " + (RING - 8) + "\n", peer.awaitSuccess());
                assertEquals(RING - 8, buffer.stats().numReadsSucceeded());
            }
        }
    }

    @Test
    void aHolderThatDiedHoldingTheLockIsDetectedAndTheLockPoisoned() {
        UnixAddress address = freshAddress();
        try (ListeningSocket server = ListeningSocket.listen(address, 1);
             SharedRingBuffer buffer = SharedRingBuffer.create(RING)) {
            Peers.Peer peer = Peers.startNative(cPeer, "@" + address.name(), "attach", "hold-and-die");
            try (StreamSocket connection = server.accept()) {
                connection.send(new byte[] {'F'}, buffer.fd());
                assertEquals("holding\n", peer.awaitSuccess());
            }
            assertEquals(1, buffer.metadata().get(Layouts.BYTE, SPINLOCK_LOCKED_OFFSET));
            assertEquals(peer.process().pid(), buffer.metadata().get(Layouts.INT, SPINLOCK_HOLDER_PID_OFFSET));

            assertFalse(buffer.lock(SharedRingBuffer.LockMode.TRY));
            assertTrue(buffer.isSpinlockPoisoned());
            // Found dead at the first check, before any of the 1 ms sleeps a live holder costs.
            assertEquals(0, buffer.clientSpinlockBlockedUs(), "microseconds slept before the holder was found dead");
            assertFalse(buffer.lock(SharedRingBuffer.LockMode.BLOCKING), "a poisoned lock fails at once, blocking or not");
            assertEquals(2, buffer.stats().failedSpinlocks());
        }
    }
}
