package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.ipc.BoundService;
import dev.ffmtrace.ipc.IpcClient;
import dev.ffmtrace.memory.FileDescriptorChannel;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.testing.CPrograms;
import dev.ffmtrace.memory.testing.HeldClient;
import dev.ffmtrace.tracing.service.ipc.ConsumerConnection;
import java.io.FileInputStream;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import perfetto.protos.DataSourceDescriptorOuterClass.DataSourceDescriptor;
import perfetto.protos.ProducerPort.InitializeConnectionRequest;
import perfetto.protos.ProducerPort.RegisterDataSourceRequest;
import perfetto.protos.TraceConfigOuterClass.TraceConfig;

/**
 * Issue #27: SIGTERM ends {@code serve} whatever its clients do. With a producer that never
 * takes a command (so never acknowledges a stop), a session writing into a pipe that is full
 * and never read, and a consumer that never reads its replies, all at once, the daemon still
 * closes every session and socket and prints "stopped" before its shutdown hook gives up
 * (which would end the JVM without that line).
 */
class ServeShutdownTest {
    /** A hang detector for the calls that must be answered. */
    private static final long TIMEOUT_MS = 60_000;

    @TempDir
    Path dir;

    @Test
    void sigtermEndsServeThoughAProducerAnOutputAndAConsumerAllStall() throws Exception {
        Path consumerSocket = dir.resolve("consumer.sock");
        Path producerSocket = dir.resolve("producer.sock");
        CliProcess serve = CliProcess.start("serve", "--no-warm-up", "--consumer-socket", consumerSocket.toString(),
                "--producer-socket", producerSocket.toString());
        serve.awaitLine(line -> line.equals("consumer socket: " + consumerSocket));
        List<AutoCloseable> attackers = new ArrayList<>();
        try {
            // A producer that registers its data sources and never asks for a command: a stop
            // that waits for it to acknowledge waits for ever. Its 100 long names make each
            // QueryServiceState reply about 100 KB.
            IpcClient producer = IpcClient.connect(UnixAddress.path(producerSocket));
            attackers.add(producer);
            BoundService port = producer.bindService("ProducerPort").get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            assertTrue(producer.invoke(port, "InitializeConnection", InitializeConnectionRequest.newBuilder()
                    .setProducerName("deaf").build().toByteArray()).get(TIMEOUT_MS, TimeUnit.MILLISECONDS).success());
            List<String> names = new ArrayList<>(List.of("deaf"));
            for (int i = 0; i < 100; i++) {
                names.add(i + "w".repeat(1000));
            }
            for (String name : names) {
                assertTrue(producer.invoke(port, "RegisterDataSource", RegisterDataSourceRequest.newBuilder()
                        .setDataSourceDescriptor(DataSourceDescriptor.newBuilder().setName(name)).build().toByteArray())
                        .get(TIMEOUT_MS, TimeUnit.MILLISECONDS).success());
            }

            // A session of that data source writing into a pipe whose reader never reads, full
            // before the service gets it: the service's first write into it blocks.
            Path fifo = dir.resolve("fifo");
            assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
            CompletableFuture<InputStream> reader = CompletableFuture.supplyAsync(() -> {
                try {
                    return new FileInputStream(fifo.toFile());
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            FileDescriptorChannel pipe = FileDescriptorChannel.openForWriting(fifo);
            attackers.add(pipe);
            attackers.add(reader.get(TIMEOUT_MS, TimeUnit.MILLISECONDS));
            assertEquals(64 * 1024, pipe.write(ByteBuffer.allocate(64 * 1024)), "Linux's pipe holds 64 KiB");
            ConsumerConnection owner = ConsumerConnection.connect(UnixAddress.path(consumerSocket), TIMEOUT_MS);
            attackers.add(owner);
            byte[] config = TraceConfig.newBuilder()
                    .addBuffers(TraceConfig.BufferConfig.newBuilder().setSizeKb(256))
                    .addDataSources(TraceConfig.DataSource.newBuilder()
                            .setConfig(perfetto.protos.DataSourceConfigOuterClass.DataSourceConfig.newBuilder().setName("deaf")))
                    .setWriteIntoFile(true).setFileWritePeriodMs(100)
                    .setDataSourceStopTimeoutMs(60_000).setFlushTimeoutMs(60_000)
                    .build().toByteArray();
            CompletableFuture<ConsumerConnection.TracingDisabled> disabled = owner.enableTracing(config, pipe.fd());
            // Answered after the EnableTracing on the consumer's worker: the session is in.
            owner.queryServiceState(TIMEOUT_MS);

            // A consumer that asks for the state again and again and never reads a reply.
            List<String> calls = new ArrayList<>(List.of(CPrograms.program("perfetto_ipc_tool").toString(), "call",
                    consumerSocket.toString(), "ConsumerPort"));
            for (int i = 0; i < 20; i++) {
                calls.addAll(List.of("!QueryServiceState", ""));
            }
            HeldClient deafConsumer = HeldClient.start(-1, calls);
            attackers.add(deafConsumer);
            deafConsumer.awaitHeld();

            long start = System.nanoTime();
            serve.kill("TERM");
            ConvertAndDumpTest.Run end = serve.await();
            long millis = (System.nanoTime() - start) / 1_000_000;
            System.out.println("serve ended " + millis + " ms after SIGTERM");
            assertEquals(143, end.exit(), end.err());
            assertTrue(end.out().contains("stopping on a signal"), end.out());
            assertTrue(end.out().lines().anyMatch(line -> line.equals("stopped")), "every session and socket closed: "
                    + end.out());
            assertFalse(Files.exists(consumerSocket));
            assertFalse(Files.exists(producerSocket));
            assertTrue(disabled.isDone(), "the session's owner heard it end");
        } finally {
            for (AutoCloseable attacker : attackers.reversed()) {
                attacker.close();
            }
        }
    }
}
