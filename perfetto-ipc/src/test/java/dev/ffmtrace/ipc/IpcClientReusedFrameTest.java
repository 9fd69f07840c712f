package dev.ffmtrace.ipc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.ListeningSocket;
import dev.ffmtrace.memory.StreamSocket;
import java.io.ByteArrayOutputStream;
import java.util.Arrays;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The drop-reply invocation a client encodes into buffers it reuses (the commit path's)
 * puts on the wire the frames a fresh encoding does, whatever sizes came before.
 */
class IpcClientReusedFrameTest {
    private static final BoundService SERVICE = new BoundService("ProducerPort", 3, Map.of("CommitData", 5));

    @Test
    void reusedFramesAreTheFramesAFreshEncodingGives() throws Exception {
        UnixAddress address = UnixAddress.abstractName("ffmtrace-reused-frame-" + System.nanoTime());
        // Sizes that shrink and grow: a stale byte of a longer frame would show.
        int[] sizes = {300, 5, 0, 127, 128, 4000, 17};
        ByteArrayOutputStream expected = new ByteArrayOutputStream();
        try (ListeningSocket server = ListeningSocket.listen(address, 1);
             IpcClient client = IpcClient.connect(address);
             StreamSocket peer = server.accept()) {
            for (int i = 0; i < sizes.length; i++) {
                byte[] args = new byte[sizes[i] + 9];
                Arrays.fill(args, (byte) (i + 1));
                client.invokeDropReply(SERVICE, "CommitData", args, sizes[i]);
                expected.writeBytes(Frames.invokeMethod(i + 1, 3, 5, Arrays.copyOf(args, sizes[i]), true));
            }
            byte[] received = new byte[expected.size()];
            int at = 0;
            while (at < received.length) {
                byte[] part = new byte[received.length - at];
                StreamSocket.Received got = peer.receive(part, 0);
                assertTrue(got.bytes() > 0, "the client hung up early");
                System.arraycopy(part, 0, received, at, got.bytes());
                at += got.bytes();
            }
            assertArrayEquals(expected.toByteArray(), received);
            assertThrows(IllegalArgumentException.class,
                    () -> client.invokeDropReply(SERVICE, "CommitData", new byte[Frames.MAX_PAYLOAD], Frames.MAX_PAYLOAD));
        }
    }
}
