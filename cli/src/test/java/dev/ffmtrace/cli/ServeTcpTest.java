package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.ipc.BoundService;
import dev.ffmtrace.ipc.IpcClient;
import dev.ffmtrace.ipc.PeerIdentity;
import dev.ffmtrace.ipc.Reply;
import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.memory.TcpAddress;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.perfetto.protos.InitializeConnectionRequest;
import dev.ffmtrace.perfetto.protos.InitializeConnectionResponse;
import dev.ffmtrace.protozero.HeapBuffered;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code serve}'s producer port on TCP, listed beside its Unix socket as Perfetto lists them. */
class ServeTcpTest {
    @TempDir
    Path dir;

    /** InitializeConnection's reply to a producer at {@code address}, decoded. */
    private static InitializeConnectionResponse.Decoder initialize(StreamAddress address) throws Exception {
        try (IpcClient client = IpcClient.connect(address)) {
            client.setPeerIdentity(new PeerIdentity(77, 1000, "guest-boot-id", "guest-a"));
            BoundService port = client.bindService("ProducerPort").get(30, TimeUnit.SECONDS);
            HeapBuffered<InitializeConnectionRequest> request = new HeapBuffered<>(InitializeConnectionRequest.FACTORY);
            request.get().setProducerName("remote-app");
            Reply reply = client.invoke(port, "InitializeConnection", request.toByteArray()).get(30, TimeUnit.SECONDS);
            assertTrue(reply.success());
            InitializeConnectionResponse.Decoder response = new InitializeConnectionResponse.Decoder();
            response.reset(MemorySegment.ofArray(reply.replyProto()));
            return response;
        }
    }

    /** The loopback TCP producer port {@code serve} printed it listens on (it was given port 0). */
    static TcpAddress tcpProducerSocket(CliProcess serve) throws InterruptedException {
        AtomicReference<String> tcp = new AtomicReference<>();
        serve.awaitLine(line -> {
            boolean match = line.startsWith("producer socket: 127.0.0.1:");
            if (match) {
                tcp.set(line.substring("producer socket: ".length()));
            }
            return match;
        });
        return TcpAddress.parse(tcp.get());
    }

    @Test
    void theProducerPortServesAUnixSocketAndATcpPortTheKernelChose() throws Exception {
        Path producer = dir.resolve("producer.sock");
        CliProcess serve = CliProcess.start("", List.of(), "serve", "--no-warm-up",
                "--consumer-socket", dir.resolve("consumer.sock").toString(),
                "--producer-socket", producer + ",127.0.0.1:0");
        try {
            TcpAddress address = tcpProducerSocket(serve);
            assertTrue(address.port() > 0, address.toString());
            assertTrue(initialize(address).useShmemEmulation(), "chunks travel in CommitData over TCP");
            assertFalse(initialize(UnixAddress.path(producer)).useShmemEmulation(), "and in shared memory here");
        } finally {
            serve.kill("TERM");
            serve.await();
        }
    }

    @Test
    void aProducerSocketListThatDoesNotParseIsAUsageError() throws Exception {
        for (String list : new String[] {"127.0.0.1:http", " , ", "127.0.0.1:5,127.0.0.1:5",
                                         "vsock://3:9000"}) {
            CliProcess serve = CliProcess.start("serve", "--no-warm-up", "--consumer-socket",
                    dir.resolve("c.sock").toString(), "--producer-socket", list);
            ConvertAndDumpTest.Run run = serve.await();
            assertEquals(CliFailure.USAGE, run.exit(), list + ": " + run.err());
            assertTrue(run.err().contains("--producer-socket"), run.err());
        }
    }
}
