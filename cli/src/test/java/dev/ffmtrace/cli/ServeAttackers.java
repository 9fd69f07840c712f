package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.ipc.BoundService;
import dev.ffmtrace.ipc.IpcClient;
import dev.ffmtrace.memory.FileDescriptorChannel;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.testing.CPrograms;
import dev.ffmtrace.memory.testing.HeldClient;
import dev.ffmtrace.tracing.consumer.ConsumerConnection;
import java.io.FileInputStream;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import perfetto.protos.DataSourceConfigOuterClass.DataSourceConfig;
import perfetto.protos.DataSourceDescriptorOuterClass.DataSourceDescriptor;
import perfetto.protos.ProducerPort.InitializeConnectionRequest;
import perfetto.protos.ProducerPort.RegisterDataSourceRequest;
import perfetto.protos.TraceConfigOuterClass.TraceConfig;

/**
 * Clients of a {@code serve} process that misbehave at once (issue #27): a producer that
 * never takes a command, a session writing into a full pipe nobody reads, a consumer that
 * never reads its replies, consumers that connect and idle. {@link #close()} makes them all
 * leave, the pipe's reader too.
 */
final class ServeAttackers implements AutoCloseable {
    /** A hang detector for the calls that must be answered. */
    private static final long TIMEOUT_MS = 60_000;
    /** The data source the deaf producer registers and the pipe's session traces. */
    static final String DEAF = "deaf";

    private final Path consumerSocket;
    private final Path producerSocket;
    private final Path dir;
    private final List<AutoCloseable> open = new ArrayList<>();

    ServeAttackers(Path consumerSocket, Path producerSocket, Path dir) {
        this.consumerSocket = consumerSocket;
        this.producerSocket = producerSocket;
        this.dir = dir;
    }

    /**
     * A producer that registers {@value #DEAF} and 100 data sources with 1,000-byte names
     * (each QueryServiceState reply about 100 KB), and never asks for a command: a stop that
     * waits for it to acknowledge waits for ever.
     */
    void deafProducer() throws Exception {
        IpcClient producer = IpcClient.connect(UnixAddress.path(producerSocket));
        open.add(producer);
        BoundService port = producer.bindService("ProducerPort").get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        assertTrue(producer.invoke(port, "InitializeConnection", InitializeConnectionRequest.newBuilder()
                .setProducerName(DEAF).build().toByteArray()).get(TIMEOUT_MS, TimeUnit.MILLISECONDS).success());
        List<String> names = new ArrayList<>(List.of(DEAF));
        for (int i = 0; i < 100; i++) {
            names.add(i + "w".repeat(1000));
        }
        for (String name : names) {
            assertTrue(producer.invoke(port, "RegisterDataSource", RegisterDataSourceRequest.newBuilder()
                    .setDataSourceDescriptor(DataSourceDescriptor.newBuilder().setName(name)).build().toByteArray())
                    .get(TIMEOUT_MS, TimeUnit.MILLISECONDS).success());
        }
    }

    /**
     * A session of {@value #DEAF} writing into a pipe whose reader never reads, full before
     * the service gets it, so that its first write blocks; flush and stop timeouts of a
     * minute. Returns when the session is in; the future is its EnableTracing reply.
     */
    CompletableFuture<ConsumerConnection.TracingDisabled> sessionIntoAFullPipe(String name) throws Exception {
        Path fifo = dir.resolve(name + ".fifo");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
        CompletableFuture<FileInputStream> reader = CompletableFuture.supplyAsync(() -> {
            try {
                return new FileInputStream(fifo.toFile());
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        FileDescriptorChannel pipe = FileDescriptorChannel.openForWriting(fifo);
        open.add(pipe);
        open.add(reader.get(TIMEOUT_MS, TimeUnit.MILLISECONDS));
        assertEquals(64 * 1024, pipe.write(ByteBuffer.allocate(64 * 1024)), "Linux's pipe holds 64 KiB");
        ConsumerConnection owner = ConsumerConnection.connect(UnixAddress.path(consumerSocket), TIMEOUT_MS);
        open.add(owner);
        byte[] config = TraceConfig.newBuilder()
                .addBuffers(TraceConfig.BufferConfig.newBuilder().setSizeKb(256))
                .addDataSources(TraceConfig.DataSource.newBuilder().setConfig(DataSourceConfig.newBuilder().setName(DEAF)))
                .setWriteIntoFile(true).setFileWritePeriodMs(100)
                .setDataSourceStopTimeoutMs(60_000).setFlushTimeoutMs(60_000)
                .build().toByteArray();
        CompletableFuture<ConsumerConnection.TracingDisabled> disabled = owner.enableTracing(config, pipe.fd());
        // Answered after the EnableTracing on the consumer's worker: the session is in.
        assertNotNull(owner.queryServiceState(TIMEOUT_MS));
        return disabled;
    }

    /** A consumer that asks for the service's state 20 times and never reads a reply. */
    void deafConsumer() {
        List<String> calls = new ArrayList<>(List.of(CPrograms.program("perfetto_ipc_tool").toString(), "call",
                consumerSocket.toString(), "ConsumerPort"));
        for (int i = 0; i < 20; i++) {
            calls.addAll(List.of("!QueryServiceState", ""));
        }
        HeldClient client = HeldClient.start(-1, calls);
        open.add(client);
        client.awaitHeld();
    }

    /** {@code count} consumers, each answered once, then holding their connections. */
    void idleConsumers(int count) throws Exception {
        for (int i = 0; i < count; i++) {
            ConsumerConnection consumer = ConsumerConnection.connect(UnixAddress.path(consumerSocket), TIMEOUT_MS);
            open.add(consumer);
            assertNotNull(consumer.queryServiceState(TIMEOUT_MS));
        }
    }

    /** Every attacker leaves: connections closed, processes ended, the pipe's both ends closed. */
    @Override
    public void close() throws Exception {
        for (AutoCloseable attacker : open.reversed()) {
            attacker.close();
        }
        open.clear();
    }
}
