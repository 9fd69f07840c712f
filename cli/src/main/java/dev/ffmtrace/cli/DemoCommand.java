package dev.ffmtrace.cli;

import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.memory.NativeException;
import dev.ffmtrace.memory.PeerCredentials;
import dev.ffmtrace.memory.Seals;
import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.ListeningSocket;
import dev.ffmtrace.memory.StreamSocket;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Two processes sharing one sealed memfd: this process creates it and hands it over a
 * Unix socket to a second JVM, which writes a message into it; this process reads the
 * message from its own mapping.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Share a sealed memfd with a second process: it writes, this one reads.")
final class DemoCommand implements Callable<Integer> {
    private static final long SIZE = 64 * 1024;
    /** Offset 0: the message length; the UTF-8 message follows. */
    private static final long MESSAGE_OFFSET = 8;

    @Option(names = "--peer", hidden = true, description = "Run as the writing peer, connecting to this socket.")
    String peerAddress;

    @Option(names = "--timeout", defaultValue = "30", paramLabel = "SECONDS",
            description = "How long to wait for the peer to connect, and then to write (default ${DEFAULT-VALUE}).")
    long timeoutSeconds;

    @Option(names = "--peer-program", hidden = true, paramLabel = "PROGRAM",
            description = "Run this program as the peer, with the peer's arguments, instead of a second JVM.")
    String peerProgram;

    @Override
    public Integer call() throws Exception {
        return peerAddress == null ? runOwner() : runPeer(UnixAddress.abstractName(peerAddress));
    }

    private int runOwner() throws IOException, InterruptedException, CliFailure {
        if (timeoutSeconds < 1) {
            throw new CliFailure("--timeout must be at least 1 second", CliFailure.USAGE);
        }
        UnixAddress address = UnixAddress.abstractName("ffmtrace-demo-" + ProcessHandle.current().pid());
        try (SharedMemory memory = SharedMemory.create("ffmtrace-demo", SIZE);
             ListeningSocket server = ListeningSocket.listen(address, 1)) {
            System.out.printf("owner  pid %d: created memfd fd=%d, %d bytes, sealed against resize: %b%n",
                    ProcessHandle.current().pid(), memory.fd(), memory.size(), memory.file().isSealedAgainstResize());
            Process peer = startPeer(address);
            try {
                return share(memory, server, peer);
            } finally {
                peer.destroyForcibly();
            }
        }
    }

    /**
     * Hands the memfd to the peer and reads what it wrote. Every wait is bounded: the
     * server closes when the peer exits or the timeout passes (which wakes the accept),
     * and the connection at the timeout (which wakes the receive).
     */
    private int share(SharedMemory memory, ListeningSocket server, Process peer) throws InterruptedException, CliFailure {
        peer.onExit().copy().completeOnTimeout(null, timeoutSeconds, TimeUnit.SECONDS).thenRun(server::close);
        StreamSocket connection;
        try {
            connection = server.accept();
        } catch (RuntimeException e) {
            throw new CliFailure(peer.isAlive()
                    ? "the peer (pid " + peer.pid() + ") did not connect within " + timeoutSeconds + " s"
                    : "the peer (pid " + peer.pid() + ") exited with status " + peer.exitValue() + " before connecting",
                    CliFailure.FAILED);
        }
        AtomicBoolean timedOut = new AtomicBoolean();
        try (connection) {
            CompletableFuture.runAsync(() -> {
                timedOut.set(true);
                connection.close();
            }, CompletableFuture.delayedExecutor(timeoutSeconds, TimeUnit.SECONDS));
            PeerCredentials credentials = connection.peerCredentials();
            System.out.printf("owner  pid %d: peer connected, kernel says pid %d uid %d%n",
                    ProcessHandle.current().pid(), credentials.pid(), credentials.uid());
            connection.send(new byte[] {'F'}, memory.fd());
            byte[] ack = new byte[1];
            if (connection.receive(ack, 0).bytes() != 1) {
                throw new CliFailure(timedOut.get() ? "the peer (pid " + peer.pid() + ") did not write within "
                        + timeoutSeconds + " s" : "the peer (pid " + peer.pid() + ") hung up without writing", CliFailure.FAILED);
            }
        } catch (RuntimeException e) {
            throw new CliFailure(timedOut.get() ? "the peer (pid " + peer.pid() + ") did not write within "
                    + timeoutSeconds + " s" : "the connection to the peer (pid " + peer.pid() + ") failed: "
                    + ErrorReporter.describe(e), CliFailure.FAILED);
        }
        if (!peer.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            throw new CliFailure("the peer (pid " + peer.pid() + ") did not exit within " + timeoutSeconds + " s",
                    CliFailure.FAILED);
        }
        if (peer.exitValue() != 0) {
            throw new CliFailure("the peer (pid " + peer.pid() + ") exited with status " + peer.exitValue(),
                    CliFailure.FAILED);
        }
        MemorySegment segment = memory.segment();
        int length = segment.get(Layouts.INT_UNALIGNED, 0);
        if (length < 0 || length > SIZE - MESSAGE_OFFSET) {
            throw new CliFailure("the peer wrote an invalid length " + length, CliFailure.FAILED);
        }
        byte[] message = segment.asSlice(MESSAGE_OFFSET, length).toArray(Layouts.BYTE);
        System.out.printf("owner  pid %d: read from the shared memory: \"%s\"%n",
                ProcessHandle.current().pid(), new String(message, StandardCharsets.UTF_8));
        System.out.printf("owner  pid %d: memfd still %d bytes%n", ProcessHandle.current().pid(),
                memory.file().currentSize());
        return 0;
    }

    private static int runPeer(UnixAddress address) {
        long pid = ProcessHandle.current().pid();
        try (StreamSocket socket = StreamSocket.connect(address)) {
            StreamSocket.Received received = socket.receive(new byte[1], 1);
            if (received.fds().length != 1) {
                System.err.println("peer: no memfd received");
                return 1;
            }
            try (SharedMemory memory = SharedMemory.attach(received.fds()[0], SIZE, Seals.REQUIRED)) {
                byte[] message = ("hello from pid " + pid + ", written straight into the shared mapping")
                        .getBytes(StandardCharsets.UTF_8);
                MemorySegment.copy(message, 0, memory.segment(), Layouts.BYTE, MESSAGE_OFFSET, message.length);
                memory.segment().set(Layouts.INT_UNALIGNED, 0, message.length);
                try {
                    memory.file().resize(0);
                    System.out.printf("peer   pid %d: shrinking the memfd succeeded (it was not sealed)%n", pid);
                } catch (NativeException e) {
                    System.out.printf("peer   pid %d: wrote %d bytes; tried to shrink the memfd: %s%n",
                            pid, message.length, e.getMessage());
                }
            }
            socket.send(new byte[] {'W'});
            return 0;
        }
    }

    private Process startPeer(UnixAddress address) throws IOException {
        List<String> command = new ArrayList<>(peerProgram == null ? FfmtraceCommand.javaCommand() : List.of(peerProgram));
        command.addAll(List.of("demo", "--peer", address.name()));
        return new ProcessBuilder(command).inheritIO().start();
    }
}
