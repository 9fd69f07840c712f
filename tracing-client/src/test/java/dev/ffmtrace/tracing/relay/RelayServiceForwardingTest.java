package dev.ffmtrace.tracing.relay;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.ListeningSocket;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.memory.TcpAddress;
import dev.ffmtrace.memory.UnixAddress;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The relay forwards a producer's bytes as they are: tens of megabytes each way, sent in
 * writes of every size, arrive whole and in order, after the one SetPeerIdentity frame
 * the relay puts first. What a relayed trace loses must be lost elsewhere.
 */
class RelayServiceForwardingTest {
    private static final int UP_BYTES = 48 << 20;
    private static final int DOWN_BYTES = 8 << 20;
    private static final byte[] MARKER = {-1, -1, -1, -1, -1, -1, -1, -1};

    /** {@code size} bytes from {@code seed}, as writes of 1 byte to 200 KiB. */
    private static byte[] send(StreamSocket to, long seed, int size) throws Exception {
        MessageDigest digest = MessageDigest.getInstance("SHA-256");
        SplittableRandom random = new SplittableRandom(seed);
        byte[] buffer = new byte[200 << 10];
        for (int sent = 0; sent < size; ) {
            int length = Math.min(size - sent, 1 + random.nextInt(buffer.length));
            for (int i = 0; i < length; i++) {
                buffer[i] = (byte) random.nextInt();
            }
            to.sendBytes(buffer, length, -1);
            digest.update(buffer, 0, length);
            sent += length;
        }
        return digest.digest();
    }

    /** The digest of the next {@code size} bytes. */
    private static byte[] receive(StreamSocket from, int size) throws Exception {
        MessageDigest digest = MessageDigest.getInstance("SHA-256");
        byte[] buffer = new byte[64 << 10];
        int[] noFds = new int[0];
        for (int received = 0; received < size; ) {
            int n = from.receive(buffer, noFds);
            assertTrue(n > 0, "the stream ended after " + received + " of " + size + " bytes");
            n = Math.min(n, size - received);
            digest.update(buffer, 0, n);
            received += n;
        }
        return digest.digest();
    }

    /** Reads past one IPC frame: a 4-byte little-endian length, then the frame. */
    private static void skipFrame(StreamSocket from) {
        byte[] header = new byte[4];
        int[] noFds = new int[0];
        readFully(from, header, noFds);
        int length = (header[0] & 0xff) | (header[1] & 0xff) << 8 | (header[2] & 0xff) << 16 | (header[3] & 0xff) << 24;
        readFully(from, new byte[length], noFds);
    }

    private static void readFully(StreamSocket from, byte[] into, int[] noFds) {
        byte[] one = new byte[1];
        for (int i = 0; i < into.length; i++) {
            // A byte at a time: what follows the frame must stay in the socket for the digest.
            assertEquals(1, from.receive(one, noFds), "the stream ended inside a frame");
            into[i] = one[0];
        }
    }

    @Test
    void aProducersBytesCrossTheRelayWholeAndInOrderBothWays() throws Exception {
        try (ListeningSocket host = ListeningSocket.listen(TcpAddress.loopback(0), 4)) {
            RelayService.Options options = RelayService.Options.of(
                    UnixAddress.abstractName("ffmtrace-relay-bytes-" + System.nanoTime()), host.address());
            try (RelayService relay = RelayService.start(options);
                 StreamSocket producer = StreamSocket.connect(options.producerSocket())) {
                // A marker no frame header can be (a 4 GiB frame), so that the host tells the
                // forwarded connection from the relay's own RelayPort client, which binds next.
                producer.sendBytes(MARKER, MARKER.length, -1);
                CompletableFuture<byte[]> sent = CompletableFuture.supplyAsync(() -> {
                    try {
                        return send(producer, 38, UP_BYTES);
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                }, Thread::startVirtualThread);
                StreamSocket forwarded = null;
                while (forwarded == null) {
                    StreamSocket connection = host.accept();
                    skipFrame(connection);
                    byte[] head = new byte[MARKER.length];
                    readFully(connection, head, new int[0]);
                    if (Arrays.equals(MARKER, head)) {
                        forwarded = connection;
                    } else {
                        connection.close();
                    }
                }
                try (StreamSocket fromRelay = forwarded) {
                    byte[] up = receive(fromRelay, UP_BYTES);
                    assertArrayEquals(sent.get(60, TimeUnit.SECONDS), up, "every byte up, in order");
                    CompletableFuture<byte[]> down = CompletableFuture.supplyAsync(() -> {
                        try {
                            return receive(producer, DOWN_BYTES);
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    }, Thread::startVirtualThread);
                    assertArrayEquals(send(fromRelay, 83, DOWN_BYTES), down.get(60, TimeUnit.SECONDS),
                            "every byte down, in order");
                }
                assertTrue(relay.awaitNoProducers(Duration.ofSeconds(30)), "the host's end ends the forwarding");
            }
        }
    }
}
