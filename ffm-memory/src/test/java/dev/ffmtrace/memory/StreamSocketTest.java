package dev.ffmtrace.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.internal.Native;
import dev.ffmtrace.memory.testing.Syscalls;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StreamSocketTest {
    @TempDir
    Path dir;

    private static UnixAddress uniqueAbstract() {
        return UnixAddress.abstractName("ffmtrace-test-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
    }

    @Test
    void bytesAndDescriptorsTravelOverAnAbstractSocket() {
        UnixAddress address = uniqueAbstract();
        try (ListeningSocket server = ListeningSocket.listen(address, 4);
             StreamSocket client = StreamSocket.connect(address);
             StreamSocket accepted = server.accept();
             SharedMemory a = SharedMemory.create("fd-a", 4096);
             SharedMemory b = SharedMemory.create("fd-b", 8192)) {
            client.send("hello".getBytes(), a.fd(), b.fd());
            byte[] buffer = new byte[16];
            StreamSocket.Received received = accepted.receive(buffer, 4);
            assertEquals(5, received.bytes());
            assertEquals("hello", new String(buffer, 0, 5));
            assertEquals(2, received.fds().length);
            try (SharedMemory a2 = SharedMemory.attach(received.fds()[0], 4096, Seals.REQUIRED);
                 SharedMemory b2 = SharedMemory.attach(received.fds()[1], 8192, Seals.REQUIRED)) {
                a.segment().set(Layouts.INT, 0, 1234);
                assertEquals(1234, a2.segment().get(Layouts.INT, 0));
                b2.segment().set(Layouts.INT, 4, 5678);
                assertEquals(5678, b.segment().get(Layouts.INT, 4));
            }
        }
    }

    @Test
    void filesystemSocketIsRemovedOnClose() {
        Path path = dir.resolve("service.sock");
        UnixAddress address = UnixAddress.path(path);
        try (ListeningSocket server = ListeningSocket.listen(address, 1);
             StreamSocket client = StreamSocket.connect(address);
             StreamSocket accepted = server.accept()) {
            assertTrue(Files.exists(path));
            accepted.send(new byte[] {1, 2, 3});
            byte[] buffer = new byte[3];
            assertEquals(3, client.receive(buffer, 0).bytes());
            assertArrayEquals(new byte[] {1, 2, 3}, buffer);
        }
        assertTrue(Files.notExists(path));
    }

    @Test
    void peerCredentialsAreTheConnectingProcess() {
        UnixAddress address = uniqueAbstract();
        try (ListeningSocket server = ListeningSocket.listen(address, 1);
             StreamSocket _ = StreamSocket.connect(address);
             StreamSocket accepted = server.accept()) {
            PeerCredentials peer = accepted.peerCredentials();
            assertEquals(ProcessHandle.current().pid(), peer.pid());
            assertEquals(Native.getuid(), peer.uid());
        }
    }

    @Test
    void nonBlockingByteReportsFullSocketAndClosedPeerDistinctly() {
        UnixAddress address = uniqueAbstract();
        try (ListeningSocket server = ListeningSocket.listen(address, 1);
             StreamSocket client = StreamSocket.connect(address)) {
            StreamSocket accepted = server.accept();
            assertEquals(StreamSocket.SendResult.SENT, client.trySendByte((byte) 1));
            StreamSocket.SendResult result;
            int sent = 1;
            while ((result = client.trySendByte((byte) 1)) == StreamSocket.SendResult.SENT) {
                sent++;
                if (sent > 64 << 20) {
                    throw new AssertionError("socket never filled");
                }
            }
            assertEquals(StreamSocket.SendResult.WOULD_BLOCK, result);
            accepted.close();
            assertEquals(StreamSocket.SendResult.PEER_CLOSED, client.trySendByte((byte) 1));
        }
    }

    @Test
    void aSendWithATimeoutGoesWholeToAPeerThatReadsAndFailsOnOneThatDoesNot() throws Exception {
        UnixAddress address = uniqueAbstract();
        try (ListeningSocket server = ListeningSocket.listen(address, 1);
             StreamSocket client = StreamSocket.connect(address);
             StreamSocket accepted = server.accept();
             SharedMemory file = SharedMemory.create("with-first-part", 4096)) {
            // Many times what the socket holds: sent in parts, each once poll says there is
            // room; a timeout no reader misses, so only the parts' order is under test.
            accepted.setSendTimeout(Duration.ofHours(1));
            byte[] big = new byte[8 << 20];
            for (int i = 0; i < big.length; i++) {
                big[i] = (byte) (i * 31 + (i >>> 13));
            }
            CompletableFuture<StreamSocket.Received> first = new CompletableFuture<>();
            CompletableFuture<byte[]> read = CompletableFuture.supplyAsync(() -> {
                byte[] into = new byte[big.length];
                byte[] part = new byte[64 * 1024];
                int at = 0;
                while (at < into.length) {
                    StreamSocket.Received received = client.receive(part, 1);
                    if (at == 0) {
                        first.complete(received);
                    }
                    System.arraycopy(part, 0, into, at, received.bytes());
                    at += received.bytes();
                }
                return into;
            });
            accepted.send(big, file.fd());
            assertTrue(Arrays.equals(big, read.get()), "the bytes arrived whole and in order");
            int[] fds = first.get().fds();
            assertEquals(1, fds.length, "the descriptor came with the first part");
            StreamSocket.closeReceived(fds);

            // Now nobody reads: the send fails at its timeout, not before.
            accepted.setSendTimeout(Duration.ofMillis(100));
            long start = System.nanoTime();
            NativeException timedOut = assertThrows(NativeException.class, () -> accepted.send(big));
            assertTrue(timedOut.timedOut(), timedOut.getMessage());
            assertTrue(System.nanoTime() - start >= Duration.ofMillis(100).toNanos());
        }
    }

    @Test
    @SuppressWarnings("try") // closing the client inside its block is the point
    void receiveSeesEndOfStreamAndCloseWakesABlockedAccept() throws Exception {
        UnixAddress address = uniqueAbstract();
        ListeningSocket server = ListeningSocket.listen(address, 1);
        try (StreamSocket client = StreamSocket.connect(address); StreamSocket accepted = server.accept()) {
            client.close();
            assertEquals(0, accepted.receive(new byte[8], 2).bytes());
        }
        AtomicInteger acceptingTid = new AtomicInteger();
        CompletableFuture<Throwable> blocked = CompletableFuture.supplyAsync(() -> {
            acceptingTid.set(Os.tid());
            try {
                server.accept().close();
                return null;
            } catch (RuntimeException e) {
                return e;
            }
        });
        while (acceptingTid.get() == 0) {
            Thread.onSpinWait();
        }
        Syscalls.awaitBlockedIn(Os.pid(), acceptingTid.get(), Syscalls.Call.ACCEPT4);
        server.close();
        assertTrue(blocked.get() instanceof NativeException, "accept must fail once the server is closed");
    }

    @Test
    void tooManyDescriptorsAreClosedNotLeaked() {
        UnixAddress address = uniqueAbstract();
        try (ListeningSocket server = ListeningSocket.listen(address, 1);
             StreamSocket client = StreamSocket.connect(address);
             StreamSocket accepted = server.accept();
             SharedMemory a = SharedMemory.create("a", 4096);
             SharedMemory b = SharedMemory.create("b", 4096)) {
            client.send(new byte[] {9}, a.fd(), b.fd());
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> accepted.receive(new byte[1], 1));
            assertEquals("peer sent more than 1 descriptors; the extra ones were dropped by the kernel and the rest closed",
                    e.getMessage());
        }
    }

    @Test
    void badArgumentsAreRejectedClearly() {
        assertEquals("Unix socket name longer than 107 bytes: " + "s".repeat(108),
                assertThrows(IllegalArgumentException.class, () -> UnixAddress.abstractName("s".repeat(108))).getMessage());
        assertEquals("a Unix socket address needs a name",
                assertThrows(IllegalArgumentException.class, () -> UnixAddress.abstractName("")).getMessage());
        NativeException refused = assertThrows(NativeException.class,
                () -> StreamSocket.connect(UnixAddress.path(dir.resolve("nobody.sock"))));
        assertEquals("connect(" + dir.resolve("nobody.sock") + ") failed: ENOENT (No such file or directory)",
                refused.getMessage());
        UnixAddress address = uniqueAbstract();
        try (ListeningSocket _ = ListeningSocket.listen(address, 1)) {
            NativeException inUse = assertThrows(NativeException.class, () -> ListeningSocket.listen(address, 1));
            assertEquals("EADDRINUSE", inUse.errnoName());
            try (StreamSocket client = StreamSocket.connect(address)) {
                assertEquals("a send needs at least one byte (descriptors cannot travel alone)",
                        assertThrows(IllegalArgumentException.class, () -> client.send(new byte[0])).getMessage());
                assertEquals("maxFds must be 0..253, got 300",
                        assertThrows(IllegalArgumentException.class, () -> client.receive(new byte[1], 300)).getMessage());
            }
        }
    }
}
