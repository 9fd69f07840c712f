package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.ipc.IpcHost;
import dev.ffmtrace.ipc.IpcClient;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.producer.internal.DataSourceHandler;
import dev.ffmtrace.tracing.producer.internal.DataSourceInstance;
import dev.ffmtrace.tracing.service.ProducerPort;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.consumer.ConsumerConnection;
import dev.ffmtrace.tracing.service.ipc.ConsumerPort;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import perfetto.protos.TraceConfigOuterClass.TraceConfig;
import perfetto.protos.TraceOuterClass.Trace;
import perfetto.protos.TracePacketOuterClass.TracePacket;

/** {@code record --service} against a service with the consumer port, and {@code serve} as a daemon process. */
class ServiceCommandsTest {
    private static final long TIMEOUT_MS = 30_000;

    @TempDir
    Path dir;

    private Path config(String name, String text) throws Exception {
        Path file = dir.resolve(name);
        Files.writeString(file, text);
        return file;
    }

    private static final String BUFFER = "buffers { size_kb: 1024 fill_policy: RING_BUFFER }\n"
            + "data_sources { config { name: \"track_event\" } }\n";

    /** The track events of a trace, and whether it ends with the service's stats. */
    private static long trackEvents(Path trace) throws Exception {
        Trace parsed = Trace.parseFrom(Files.readAllBytes(trace));
        assertTrue(parsed.getPacketList().stream().anyMatch(TracePacket::hasTraceStats), "the service's stats are in");
        assertTrue(parsed.getPacketList().stream().anyMatch(TracePacket::hasTraceConfig), "the service's config is in");
        return parsed.getPacketList().stream().filter(TracePacket::hasTrackEvent).count();
    }

    @Test
    void recordOnAServiceThroughItsConsumerPort() throws Exception {
        Path socket = dir.resolve("consumer.sock");
        try (TracingService service = new TracingService();
             ConsumerPort port = new ConsumerPort(service, "test");
             IpcHost host = IpcHost.listen(UnixAddress.path(socket));
             ProducerPort producers = ProducerPort.listen(service, UnixAddress.path(dir.resolve("producer.sock")));
             ProducerConnection producer = ProducerConnection.connect(
                     ProducerConnection.Options.named("app").withSocket(producers.address()))) {
            host.exposeService(port.descriptor());
            // The data source writes at each flush, and the service flushes it at every stop: each
            // session has events however late its threads run.
            producer.registerDataSource(DataSourceDescriptor.named("track_event"), new DataSourceHandler() {
                @Override
                public void onStart(DataSourceInstance instance) {
                }

                @Override
                public void onFlush(DataSourceInstance instance) {
                    try (TraceWriter<dev.ffmtrace.perfetto.protos.TracePacket> w =
                                 instance.newTraceWriter(BufferExhaustedPolicy.DROP)) {
                        for (int i = 0; i < 100; i++) {
                            w.newTracePacket().setTrackEvent().setName("e" + i);
                            w.finishTracePacket();
                        }
                    }
                }
            });
            assertTrue(producer.awaitConnected(Duration.ofSeconds(CliProcess.TIMEOUT_SECONDS)));
            assertTrue(producer.sync().get(CliProcess.TIMEOUT_SECONDS, TimeUnit.SECONDS), "the registration is in");
            Path trace = dir.resolve("trace.pftrace");
            ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("record", "--service", socket.toString(),
                    "--config", config("c.pbtxt", BUFFER + "duration_ms: 300\n").toString(), "--out", trace.toString());
            assertEquals(0, run.exit(), run.err() + run.out());
            assertTrue(run.out().contains("recording on the service at " + socket), run.out());
            assertTrue(trackEvents(trace) > 0);

            Path file = dir.resolve("file.pftrace");
            run = ConvertAndDumpTest.run("record", "--service", socket.toString(), "--config",
                    config("f.pbtxt", BUFFER + "duration_ms: 300\nwrite_into_file: true\nfile_write_period_ms: 100\n")
                            .toString(), "--out", file.toString());
            assertEquals(0, run.exit(), run.err() + run.out());
            assertTrue(run.out().contains("the service wrote "), run.out());
            assertTrue(trackEvents(file) > 0);
            assertEquals(0, port.sessionCount(), "record frees its session");

            Path refused = dir.resolve("refused.pftrace");
            run = ConvertAndDumpTest.run("record", "--service", socket.toString(), "--config",
                    config("long.pbtxt", BUFFER + "duration_ms: 604800001\n").toString(), "--out", refused.toString());
            assertEquals(1, run.exit());
            assertEquals("ffmtrace record: --service " + socket
                    + ": Requested too long trace (604800001ms  > 604800000 ms)\n", run.err());
            assertFalse(Files.exists(refused), "no trace, no file");
        }
    }

    @Test
    void recordOnAServiceStopsOnSigintAndStillWritesTheTrace() throws Exception {
        Path socket = dir.resolve("consumer.sock");
        try (TracingService service = new TracingService();
             ConsumerPort port = new ConsumerPort(service, "test");
             IpcHost host = IpcHost.listen(UnixAddress.path(socket))) {
            host.exposeService(port.descriptor());
            Path trace = dir.resolve("interrupted.pftrace");
            CliProcess record = CliProcess.start("record", "--service", socket.toString(), "--config",
                    config("long.pbtxt", BUFFER + "duration_ms: 600000\n").toString(), "--out", trace.toString());
            record.awaitLine(line -> line.startsWith("recording on the service at "));
            record.kill("INT");
            ConvertAndDumpTest.Run run = record.await();
            assertEquals(130, run.exit(), run.err() + run.out());
            assertTrue(run.out().contains("stopping early on a signal"), run.out());
            Trace parsed = Trace.parseFrom(Files.readAllBytes(trace));
            assertTrue(parsed.getPacketList().stream().anyMatch(p -> p.hasServiceEvent()
                    && p.getServiceEvent().getTracingDisabled()), "the service disabled tracing before the readback");
            Await.until("record's session is freed", () -> port.sessionCount() == 0);
        }
    }

    @Test
    void recordOnAServiceRefusesDemoOptionsAndAMissingSocket() throws Exception {
        Path config = config("c.pbtxt", BUFFER);
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("record", "--service", dir.resolve("none").toString(),
                "--config", config.toString(), "--out", dir.resolve("t").toString(), "--threads", "2");
        assertEquals(2, run.exit());
        assertTrue(run.err().contains("--snapshot, --c-producer, --threads and --producer-socket do not apply"), run.err());
        run = ConvertAndDumpTest.run("record", "--service", dir.resolve("none").toString(),
                "--config", config.toString(), "--out", dir.resolve("t").toString());
        assertEquals(1, run.exit());
        assertTrue(run.err().startsWith("ffmtrace record: --service " + dir.resolve("none") + ": cannot connect: connect("),
                run.err());
        assertEquals(1, run.err().lines().count());
    }

    @Test
    void serveRunsBothPortsUntilSigtermAndRemovesTheirSockets() throws Exception {
        Path socket = dir.resolve("served.sock");
        Path producerSocket = dir.resolve("producers.sock");
        CliProcess serve = CliProcess.start("export PERFETTO_CONSUMER_SOCK_NAME=" + socket
                + " PERFETTO_PRODUCER_SOCK_NAME=" + producerSocket, List.of(), "serve");
        // The producer socket's line comes first: once the consumer's is out, both listen.
        serve.awaitLine(line -> line.equals("consumer socket: " + socket));
        try (IpcClient producer = IpcClient.connect(UnixAddress.path(producerSocket))) {
            assertTrue(producer.bindService("ProducerPort").get(TIMEOUT_MS, TimeUnit.MILLISECONDS)
                    .methodIds().containsKey("CommitData"), "the producer port is served");
        }
        byte[] traceConfig = TraceConfig.newBuilder()
                .addBuffers(TraceConfig.BufferConfig.newBuilder().setSizeKb(256))
                .setDurationMs(100).build().toByteArray();
        try (ConsumerConnection consumer = ConsumerConnection.connect(UnixAddress.path(socket), TIMEOUT_MS)) {
            CompletableFuture<ConsumerConnection.TracingDisabled> disabled = consumer.enableTracing(traceConfig, -1);
            assertTrue(disabled.get(TIMEOUT_MS, TimeUnit.MILLISECONDS).ok());
            Trace trace = Trace.parseFrom(consumer.readBuffers(TIMEOUT_MS));
            assertTrue(trace.getPacketList().stream().anyMatch(TracePacket::hasTraceStats));
            perfetto.protos.TracingServiceStateOuterClass.TracingServiceState state =
                    perfetto.protos.TracingServiceStateOuterClass.TracingServiceState.parseFrom(
                            consumer.queryServiceState(TIMEOUT_MS));
            assertEquals(ServeCommand.VERSION, state.getTracingServiceVersion());
            assertEquals(1, state.getNumSessions());
        }
        Path trace = dir.resolve("served.pftrace");
        ConvertAndDumpTest.Run record = ConvertAndDumpTest.run("record", "--service", socket.toString(),
                "--config", config("c.pbtxt", BUFFER + "duration_ms: 100\n").toString(), "--out", trace.toString());
        assertEquals(0, record.exit(), record.err() + record.out());
        assertEquals(0, trackEvents(trace), "nobody produces track events in the daemon");

        serve.kill("TERM");
        ConvertAndDumpTest.Run end = serve.await();
        assertEquals(143, end.exit(), end.err());
        assertTrue(end.out().contains("stopping on a signal"), end.out());
        // Before it served, it ran its commit path on a trace of its own, in a service of its own (the
        // QueryServiceState above counted one session: the consumer's).
        assertTrue(end.out().lines().anyMatch(line -> line.matches(
                "warm-up: [1-9][0-9]* chunks committed \\([1-9][0-9]* patches\\) in [1-9][0-9]* rounds, [0-9]+ ms;"
                        + " the JIT (settled|did not settle)")),
                end.out());
        assertFalse(Files.exists(socket), "the socket file is removed");
        assertFalse(Files.exists(producerSocket), "the producer socket file is removed");
    }
}
