package dev.ffmtrace.ipc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.MemoryFile;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.ListeningSocket;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.memory.testing.CPrograms;
import dev.ffmtrace.memory.testing.Peers;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The C IPC client of the project's C producers ({@code native/include/perfetto_ipc.h},
 * driven by {@code perfetto_ipc_tool}): the frames it sends are the bytes Perfetto's
 * client sends ({@link Frames}, checked in {@link FramesGoldenTest}), and it reads a
 * service's frames, fds included, and survives malformed ones. Each test runs the tool as
 * built and built with ASan and UBSan, which end it with {@link CPrograms#SANITIZER_FINDING}
 * on an out-of-bounds read or undefined behaviour that the plain build would survive.
 */
class CClientTest {
    private static final HexFormat HEX = HexFormat.of();
    /** Status of a client that found the service broke the protocol; a signal would be 128 + n. */
    private static final int VIOLATION = 1;

    private static Path tool(boolean sanitized) {
        return sanitized ? CPrograms.sanitized("perfetto_ipc_tool") : CPrograms.program("perfetto_ipc_tool");
    }

    private static byte[] cFrame(Path tool, String... args) {
        return HEX.parseHex(Peers.startNative(tool, args).awaitSuccess().strip());
    }

    @ParameterizedTest(name = "sanitized: {0}")
    @ValueSource(booleans = {false, true})
    void itsBindAndInvokeFramesAreThoseOfPerfettosClient(boolean sanitized) {
        Path tool = tool(sanitized);
        assertEquals(HEX.formatHex(Frames.bindService(1, "ProducerPort")), HEX.formatHex(cFrame(tool, "bind", "1", "ProducerPort")));
        assertEquals(HEX.formatHex(Frames.bindService(300, "ConsumerPort")), HEX.formatHex(cFrame(tool, "bind", "300", "ConsumerPort")));
        byte[] small = {0x08, (byte) 0x96, 0x01};
        assertEquals(HEX.formatHex(Frames.invokeMethod(2, 1, 4, small, false)),
                HEX.formatHex(cFrame(tool, "invoke", "2", "1", "4", HEX.formatHex(small), "0")));
        assertEquals(HEX.formatHex(Frames.invokeMethod(7, 3, 5, new byte[0], true)),
                HEX.formatHex(cFrame(tool, "invoke", "7", "3", "5", "", "1")));
        byte[] large = new byte[200];
        Arrays.fill(large, (byte) 0x55);
        // Over 127 bytes, the invocation keeps ProtoZero's 4-byte size field.
        assertEquals(HEX.formatHex(Frames.invokeMethod(3, 1, 2, large, true)),
                HEX.formatHex(cFrame(tool, "invoke", "3", "1", "2", HEX.formatHex(large), "1")));
    }

    /** Runs the tool's receive mode against frames {@code server} sends; returns its exit status and output. */
    private record Received(int status, List<String> lines, String err) {
    }

    private interface Server {
        void serve(StreamSocket connection) throws Exception;
    }

    private static Received receive(Path tool, Server server) throws Exception {
        UnixAddress address = UnixAddress.abstractName("ffmtrace-c-client-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
        try (ListeningSocket listener = ListeningSocket.listen(address, 1)) {
            Peers.Peer peer = Peers.startNative(tool, "receive", "@" + address.name());
            try {
                try (StreamSocket connection = listener.accept()) {
                    server.serve(connection);
                }
                assertTrue(peer.process().waitFor(20, TimeUnit.SECONDS), "the client ends when the service hangs up");
                return new Received(peer.process().exitValue(), peer.out().get(10, TimeUnit.SECONDS).lines().toList(),
                        peer.err().get(10, TimeUnit.SECONDS));
            } finally {
                peer.process().destroyForcibly();
            }
        }
    }

    @ParameterizedTest(name = "sanitized: {0}")
    @ValueSource(booleans = {false, true})
    void itReadsRepliesStreamsAndTheFdThatComesWithThem(boolean sanitized) throws Exception {
        byte[] reply = {0x0a, 0x02, 'o', 'k'};
        Received received = receive(tool(sanitized), connection -> {
            byte[] frames = concat(Frames.bindServiceReply(1, 5, List.of("A", "B")),
                    Frames.invokeMethodReply(2, true, true, reply));
            try (MemoryFile file = MemoryFile.create("ffmtrace-c-client-fd", 4096)) {
                // Two frames in one message, the fd with them, as a reader may well get them.
                connection.send(frames, file.fd());
            }
            connection.send(Frames.invokeMethodReply(2, true, false, new byte[0]));
            connection.send(Frames.requestError(3, "no such method"));
        });
        assertEquals(0, received.status(), received.lines() + "\n" + received.err());
        assertEquals(List.of("1 1 1 0", "2 2 1 1 " + HEX.formatHex(reply), "2 2 1 0 ", "3 3 0 0 ", "end"),
                received.lines().stream().map(line -> line.startsWith("1 1 1 0") ? "1 1 1 0" : line).toList());
    }

    @ParameterizedTest(name = "sanitized: {0}")
    @ValueSource(booleans = {false, true})
    void malformedAndOversizedFramesEndTheConnectionNotTheProgram(boolean sanitized) throws Exception {
        Path tool = tool(sanitized);
        Random random = new Random(17);
        byte[] valid = concat(Frames.bindServiceReply(1, 5, List.of("InitializeConnection", "CommitData")),
                Frames.invokeMethodReply(2, true, true, new byte[] {0x1a, 0x02, 0x08, 0x04}));
        int violations = 0;
        for (int round = 0; round < 60; round++) {
            byte[] bytes;
            if (round == 0) {
                bytes = new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, 0x7f, 1, 2, 3};
            } else if (round % 2 == 0) {
                bytes = new byte[4 + random.nextInt(64)];
                random.nextBytes(bytes);
                int size = bytes.length - 4;
                bytes[0] = (byte) size;
                bytes[1] = 0;
                bytes[2] = 0;
                bytes[3] = 0;
            } else {
                bytes = valid.clone();
                for (int flips = 1 + random.nextInt(4); flips > 0; flips--) {
                    bytes[4 + random.nextInt(bytes.length - 4)] ^= (byte) (1 << random.nextInt(8));
                }
            }
            byte[] sent = bytes;
            Received received = receive(tool, connection -> connection.send(sent));
            assertTrue(received.status() == 0 || received.status() == VIOLATION,
                    "round " + round + ": status " + received.status() + " for " + HEX.formatHex(sent) + "\n" + received.err());
            String last = received.lines().getLast();
            assertEquals(received.status() == 0 ? "end" : "violation", last, "round " + round);
            violations += received.status() == VIOLATION ? 1 : 0;
        }
        assertTrue(violations > 0 && violations < 60, violations + " of 60 rounds found a violation");
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] both = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, both, a.length, b.length);
        return both;
    }
}
