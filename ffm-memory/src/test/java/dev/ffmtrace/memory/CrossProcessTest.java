package dev.ffmtrace.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ffmtrace.memory.internal.Native;
import dev.ffmtrace.memory.testing.CPrograms;
import dev.ffmtrace.memory.testing.Peers;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.function.Function;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A memfd shared with a second process, a C program and a JVM, over a Unix socket, both ways. */
class CrossProcessTest {
    private static final long SIZE = 3 * 4096 + 128;
    private static Path cPeer;

    @TempDir
    Path dir;

    @BeforeAll
    static void buildPeer() {
        cPeer = CPrograms.program("memfd_peer");
    }

    // The C tests also run the program built with ASan and UBSan, whose findings end it
    // with a status other than 0.
    @ParameterizedTest(name = "sanitized: {0}")
    @ValueSource(booleans = {false, true})
    void cProgramWritesIntoOurMemfdAndCannotShrinkIt(boolean sanitized) {
        Path peer = sanitized ? CPrograms.sanitized("memfd_peer") : cPeer;
        peerWritesIntoOurMemfd(args -> Peers.startNative(peer, args));
    }

    @Test
    void secondJvmWritesIntoOurMemfdAndCannotShrinkIt() {
        peerWritesIntoOurMemfd(args -> Peers.startJvm(MemoryPeer.class, args));
    }

    @ParameterizedTest(name = "sanitized: {0}")
    @ValueSource(booleans = {false, true})
    void weReadTheMemfdACProgramCreated(boolean sanitized) {
        Path peer = sanitized ? CPrograms.sanitized("memfd_peer") : cPeer;
        weReadPeersMemfd(args -> Peers.startNative(peer, args));
    }

    @Test
    void weReadTheMemfdASecondJvmCreated() {
        weReadPeersMemfd(args -> Peers.startJvm(MemoryPeer.class, args));
    }

    private void peerWritesIntoOurMemfd(Function<String[], Peers.Peer> start) {
        UnixAddress address = UnixAddress.path(dir.resolve("peer.sock"));
        try (ListeningSocket server = ListeningSocket.listen(address, 1);
             SharedMemory memory = SharedMemory.create("cross-process", SIZE)) {
            Peers.Peer peer = start.apply(new String[] {"receive", address.name(), Long.toString(SIZE), "7"});
            try (StreamSocket connection = server.accept()) {
                connection.send(new byte[] {'F'}, memory.fd());
                byte[] ack = new byte[1];
                assertEquals(1, connection.receive(ack, 0).bytes());
                assertEquals('W', ack[0]);
            }
            assertEquals("shrink: EPERM\n", peer.awaitSuccess());
            assertPattern(memory.segment(), 7);
            assertEquals(SIZE, Native.fstat(memory.fd()).size());
        }
    }

    private void weReadPeersMemfd(Function<String[], Peers.Peer> start) {
        UnixAddress address = UnixAddress.abstractName("ffmtrace-test-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
        try (ListeningSocket server = ListeningSocket.listen(address, 1)) {
            Peers.Peer peer = start.apply(new String[] {"send", "@" + address.name(), Long.toString(SIZE), "99"});
            try (StreamSocket connection = server.accept()) {
                StreamSocket.Received received = connection.receive(new byte[1], 1);
                assertEquals(1, received.fds().length);
                try (SharedMemory memory = SharedMemory.attach(received.fds()[0], SIZE, Seals.REQUIRED)) {
                    assertPattern(memory.segment(), 99);
                }
                connection.send(new byte[] {'A'});
            }
            peer.awaitSuccess();
        }
    }

    private static void assertPattern(MemorySegment segment, int seed) {
        for (long i = 0; i < segment.byteSize(); i++) {
            if (segment.get(Layouts.BYTE, i) != MemoryPeer.pattern(i, seed)) {
                throw new AssertionError("byte " + i + " is " + segment.get(Layouts.BYTE, i)
                        + ", expected " + MemoryPeer.pattern(i, seed));
            }
        }
    }
}
