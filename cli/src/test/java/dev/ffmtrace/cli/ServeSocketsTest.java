package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.ListeningSocket;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.memory.testing.CPrograms;
import dev.ffmtrace.memory.testing.OtherUser;
import dev.ffmtrace.tracing.consumer.ConsumerConnection;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@code serve} does with the paths it is given (issue #27, item 9): a file that is
 * not a socket and a socket a live service accepts on are left alone and refused; only a
 * stale socket is replaced; the sockets get {@code --socket-mode}, the owner's only by default.
 */
class ServeSocketsTest {
    private static final long TIMEOUT_MS = 60_000;

    @TempDir
    Path dir;

    private static String permissions(Path path) throws Exception {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(path, LinkOption.NOFOLLOW_LINKS));
    }

    /** QueryServiceState from a program of another user, as perfetto_ipc_tool prints it. */
    private static OtherUser.Run queryAsOtherUser(Path socket) {
        return OtherUser.run(List.of(CPrograms.program("perfetto_ipc_tool").toString(), "call", socket.toString(),
                "ConsumerPort", "QueryServiceState", ""));
    }

    /** serve in a process of its own: one that serves when it should refuse fails the test, not hangs it. */
    private static ConvertAndDumpTest.Run serve(String... args) throws Exception {
        CliProcess serve = CliProcess.start(Stream.concat(Stream.of("serve"), Stream.of(args)).toArray(String[]::new));
        serve.process().getOutputStream().close();
        return serve.await();
    }

    @Test
    void aFileThatIsNotASocketIsRefusedAndKept() throws Exception {
        Path important = dir.resolve("important.txt");
        Files.writeString(important, "keep me");
        ConvertAndDumpTest.Run run = serve("--consumer-socket", important.toString(),
                "--producer-socket", dir.resolve("producer.sock").toString());
        assertEquals(2, run.exit(), run.err());
        assertEquals(1, run.err().lines().count(), run.err());
        assertTrue(run.err().contains(important + ": exists and is not a socket"), run.err());
        assertEquals("keep me", Files.readString(important));

        Path link = dir.resolve("link.sock");
        Files.createSymbolicLink(link, important);
        run = serve("--consumer-socket", link.toString(),
                "--producer-socket", dir.resolve("producer.sock").toString());
        assertEquals(2, run.exit(), run.err());
        assertTrue(Files.isSymbolicLink(link), "a link is not a socket, whatever it points at");
        assertEquals("keep me", Files.readString(important));
    }

    @Test
    void aSocketALiveServiceAcceptsOnIsRefusedAndKeepsServing() throws Exception {
        UnixAddress address = UnixAddress.path(dir.resolve("live.sock"));
        try (ListeningSocket live = ListeningSocket.listen(address, 4)) {
            ConvertAndDumpTest.Run run = serve("--consumer-socket", address.toString(),
                    "--producer-socket", dir.resolve("producer.sock").toString());
            assertEquals(1, run.exit(), run.err());
            assertTrue(run.err().contains(address + ": another service listens on it"), run.err());
            // serve's own probe is in the backlog first; then a client of the live service gets in.
            live.accept().close();
            try (StreamSocket client = StreamSocket.connect(address); StreamSocket accepted = live.accept()) {
                client.send(new byte[] {42});
                assertEquals(1, accepted.receive(new byte[1], 0).bytes(), "the live service still serves");
            }
        }
    }

    @Test
    void aStaleSocketIsReplacedAndTheSocketsGetTheirMode() throws Exception {
        String reason = OtherUser.unavailableReason();
        OtherUser.openForTraversal(dir);
        Path consumer = dir.resolve("consumer.sock");
        Path producer = dir.resolve("producer.sock");
        // A stale socket: a second name of a socket whose service has closed (and removed the first name).
        try (ListeningSocket gone = ListeningSocket.listen(UnixAddress.path(dir.resolve("gone.sock")), 1)) {
            Files.createLink(consumer, dir.resolve("gone.sock"));
        }
        CliProcess serve = CliProcess.start("", List.of(), "serve", "--no-warm-up", "--consumer-socket", consumer.toString(),
                "--producer-socket", producer.toString(), "--socket-mode", "0666");
        try {
            serve.awaitLine(line -> line.equals("consumer socket: " + consumer));
            assertEquals("rw-rw-rw-", permissions(consumer));
            assertEquals("rw-rw-rw-", permissions(producer));
            try (ConsumerConnection client = ConsumerConnection.connect(UnixAddress.path(consumer), TIMEOUT_MS)) {
                assertTrue(client.queryServiceState(TIMEOUT_MS).length > 0, "the new socket is served");
            }
            if (reason == null) {
                OtherUser.Run other = queryAsOtherUser(consumer);
                assertEquals(0, other.exit(), other.out() + other.err());
                assertTrue(other.out().startsWith("1 0 "), "another user is served at 0666: " + other.out());
            }
        } finally {
            serve.kill("TERM");
            serve.await();
        }
    }

    @Test
    void theSocketsAreTheOwnersOnlyByDefault() throws Exception {
        String reason = OtherUser.unavailableReason();
        OtherUser.openForTraversal(dir);
        Path consumer = dir.resolve("consumer.sock");
        Path producer = dir.resolve("producer.sock");
        CliProcess serve = CliProcess.start("", List.of(), "serve", "--no-warm-up", "--consumer-socket", consumer.toString(),
                "--producer-socket", producer.toString());
        try {
            serve.awaitLine(line -> line.equals("consumer socket: " + consumer));
            assertEquals("rw-------", permissions(consumer));
            assertEquals("rw-------", permissions(producer));
            assumeTrue(reason == null, reason);
            OtherUser.Run other = queryAsOtherUser(consumer);
            assertEquals(3, other.exit(), other.out() + other.err());
            assertEquals("connect 13", other.out().strip(), "EACCES for another user");
        } finally {
            serve.kill("TERM");
            serve.await();
        }
    }

    @Test
    void aSocketModeThatIsNotOctalBitsIsAUsageError() throws Exception {
        ConvertAndDumpTest.Run run = serve("--socket-mode", "0999",
                "--consumer-socket", dir.resolve("c.sock").toString(),
                "--producer-socket", dir.resolve("p.sock").toString());
        assertEquals(2, run.exit(), run.err());
        assertTrue(run.err().contains("--socket-mode 0999"), run.err());
    }
}
