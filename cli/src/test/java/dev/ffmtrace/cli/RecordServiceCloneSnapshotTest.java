package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.ipc.IpcHost;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.service.ProducerPort;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.ipc.ConsumerPort;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import perfetto.protos.TraceOuterClass.Trace;
import perfetto.protos.TracePacketOuterClass;

/**
 * {@code record --service} with a CLONE_SNAPSHOT config, as Perfetto's {@code perfetto}
 * runs one against {@code traced}: the service reports each trigger a producer sends, and
 * the command clones the session through a consumer connection of its own into
 * {@code OUT.0}, {@code OUT.1}, ...
 */
class RecordServiceCloneSnapshotTest {
    private static final int EVENTS = RecordCloneSnapshotTest.EVENTS;

    @TempDir
    Path dir;

    @Test
    void eachTriggerTheServiceReportsIsClonedIntoTheNextFile() throws Exception {
        Path config = dir.resolve("clone.pbtxt");
        Files.writeString(config, """
                buffers { size_kb: 1024 fill_policy: RING_BUFFER }
                data_sources { config { name: "service_clone_test" } }
                trigger_config {
                  trigger_mode: CLONE_SNAPSHOT
                  trigger_timeout_ms: 600000
                  triggers { name: "snap" stop_delay_ms: 0 }
                }
                """);
        Path consumerSocket = dir.resolve("consumer.sock");
        UnixAddress producerSocket = UnixAddress.abstractName(
                "ffmtrace-service-clone-test-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
        Path out = dir.resolve("clone.pftrace");
        List<Path> clones = List.of(dir.resolve("clone.pftrace.0"), dir.resolve("clone.pftrace.1"));
        CompletableFuture<Void> written = new CompletableFuture<>();
        CliProcess record;
        try (TracingService service = new TracingService();
             ConsumerPort consumers = new ConsumerPort(service, "test");
             IpcHost host = IpcHost.listen(UnixAddress.path(consumerSocket));
             ProducerPort producers = ProducerPort.listen(service, producerSocket);
             ProducerConnection producer = ProducerConnection.connect(
                     ProducerConnection.Options.named("snapper").withSocket(producerSocket))) {
            host.exposeService(consumers.descriptor());
            producer.registerDataSource(DataSourceDescriptor.named("service_clone_test"), RecordCloneSnapshotTest.writing(written));
            record = CliProcess.start("record", "--service", consumerSocket.toString(), "--config", config.toString(),
                    "--out", out.toString());
            written.get(CliProcess.TIMEOUT_SECONDS, TimeUnit.SECONDS);
            for (Path clone : clones) {
                producer.activateTriggers(List.of("snap"), Duration.ofSeconds(CliProcess.TIMEOUT_SECONDS));
                record.awaitLine(line -> line.startsWith("  clone for trigger \"snap\" of snapper: ")
                        && line.endsWith(" packets written to " + clone));
            }
            record.kill("INT");
            ConvertAndDumpTest.Run run = record.await();
            assertEquals(130, run.exit(), run.err() + run.out());
            assertEquals("", run.err());
        }
        for (Path clone : clones) {
            Trace trace = Trace.parseFrom(Files.readAllBytes(clone));
            assertEquals(EVENTS, trace.getPacketList().stream()
                    .filter(packet -> packet.getTrackEvent().getName().startsWith("event-")).count(),
                    clone + ": the producer's events");
            List<TracePacketOuterClass.TracePacket> triggers = trace.getPacketList().stream()
                    .filter(TracePacketOuterClass.TracePacket::hasCloneSnapshotTrigger).toList();
            assertEquals(1, triggers.size(), clone.toString());
            assertEquals(List.of("snap", "snapper"), List.of(triggers.getFirst().getCloneSnapshotTrigger().getTriggerName(),
                    triggers.getFirst().getCloneSnapshotTrigger().getProducerName()));
        }
        assertEquals(1, Trace.parseFrom(Files.readAllBytes(clones.getFirst())).getPacketList().stream()
                .filter(TracePacketOuterClass.TracePacket::hasTrigger).count(), "the trigger moves into the first clone");
    }
}
