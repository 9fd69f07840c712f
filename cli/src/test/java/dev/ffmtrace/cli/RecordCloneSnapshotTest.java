package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.producer.internal.DataSourceHandler;
import dev.ffmtrace.tracing.producer.internal.DataSourceInstance;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import perfetto.protos.TraceOuterClass.Trace;

/**
 * {@code record} as a CLONE_SNAPSHOT session's consumer, as Perfetto's {@code perfetto}
 * is: a producer of another process (the test's, through {@code --producer-socket}) sends
 * the triggers, and each one becomes a clone of the running session in {@code OUT.0},
 * {@code OUT.1}, ...; the session's own trace is empty, as Perfetto's ReadBuffers returns
 * nothing for such a session.
 */
class RecordCloneSnapshotTest {
    private static final String DATA_SOURCE = "clone_test";
    static final int EVENTS = 100;
    private static final ProducerConnection.RetryDelays FAST = new ProducerConnection.RetryDelays(
            Duration.ofMillis(50), Duration.ofMillis(50), Duration.ofMillis(200), Duration.ofMillis(200));

    @TempDir
    Path dir;

    /** Writes {@value #EVENTS} named events as soon as its instance starts (shared with RecordServiceCloneSnapshotTest). */
    static DataSourceHandler writing(CompletableFuture<Void> written) {
        return new DataSourceHandler() {
            @Override
            public void onStart(DataSourceInstance instance) {
                try (TraceWriter<TracePacket> writer = instance.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                    for (int i = 0; i < EVENTS; i++) {
                        writer.newTracePacket().setTrackEvent().setName("event-" + i);
                        writer.finishTracePacket();
                    }
                }
                written.complete(null);
            }
        };
    }

    /**
     * Two triggers, two clones; the first one's file cannot be written (a directory is in
     * its way), which is one line on stderr, and the second still goes to {@code OUT.1}.
     */
    @Test
    void eachCloneTriggerWritesACloneOfTheRunningSessionIntoTheNextFile() throws Exception {
        Path config = dir.resolve("clone.pbtxt");
        Files.writeString(config, """
                buffers { size_kb: 1024 fill_policy: RING_BUFFER }
                data_sources { config { name: "clone_test" } }
                trigger_config {
                  trigger_mode: CLONE_SNAPSHOT
                  trigger_timeout_ms: 600000
                  triggers { name: "snap" stop_delay_ms: 0 }
                }
                """);
        Path out = dir.resolve("clone.pftrace");
        Path first = dir.resolve("clone.pftrace.0");
        Path second = dir.resolve("clone.pftrace.1");
        Files.createDirectory(first);
        String socket = "@ffmtrace-clone-test-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
        CliProcess record = CliProcess.start("record", "--config", config.toString(), "--out", out.toString(),
                "--producer-socket", socket);
        CompletableFuture<Void> written = new CompletableFuture<>();
        try (ProducerConnection producer = ProducerConnection.connect(ProducerConnection.Options.named("snapper")
                .withSocket(UnixAddress.parse(socket)).withRetryDelays(FAST))) {
            assertTrue(producer.awaitConnected(Duration.ofSeconds(CliProcess.TIMEOUT_SECONDS)));
            // Registered once the session runs (its warnings are printed before this line), so it waits for us.
            record.awaitLine(line -> line.startsWith("recording "));
            producer.registerDataSource(DataSourceDescriptor.named(DATA_SOURCE), writing(written));
            written.get(CliProcess.TIMEOUT_SECONDS, TimeUnit.SECONDS);
            producer.activateTriggers(List.of("snap"), Duration.ofSeconds(CliProcess.TIMEOUT_SECONDS));
            producer.activateTriggers(List.of("snap"), Duration.ofSeconds(CliProcess.TIMEOUT_SECONDS));
            record.awaitLine(line -> line.endsWith(" packets written to " + second));
        }
        record.kill("INT");
        ConvertAndDumpTest.Run run = record.await();
        assertEquals(130, run.exit(), run.err() + run.out());
        // The data source is registered once the session runs: the warning says the session waits for it.
        assertEquals(List.of("ffmtrace record: warning: data source \"clone_test\" (#0): no connected producer has"
                        + " registered it (the session starts it when one does)",
                "ffmtrace record: --out " + first + ": is a directory (the recording goes on)"),
                run.err().lines().toList());
        assertTrue(run.out().contains("producers connect at " + socket), run.out());

        assertEquals(0, Files.size(out), "the session itself is read through clones only, as in Perfetto");
        Trace clone = Trace.parseFrom(Files.readAllBytes(second));
        long events = clone.getPacketList().stream()
                .filter(packet -> packet.getTrackEvent().getName().startsWith("event-")).count();
        assertEquals(EVENTS, events, "the producer's events, flushed before the clone");
        List<perfetto.protos.TriggerOuterClass.Trigger> cloneTriggers = clone.getPacketList().stream()
                .filter(perfetto.protos.TracePacketOuterClass.TracePacket::hasCloneSnapshotTrigger)
                .map(perfetto.protos.TracePacketOuterClass.TracePacket::getCloneSnapshotTrigger).toList();
        assertEquals(1, cloneTriggers.size());
        assertEquals(List.of("snap", "snapper"),
                List.of(cloneTriggers.getFirst().getTriggerName(), cloneTriggers.getFirst().getProducerName()));
        assertEquals(2, clone.getPacketList().stream().filter(packet -> packet.hasTrigger()).count(),
                "the triggers move into the first clone made: the failed one made none");
        assertTrue(clone.getPacketList().stream().anyMatch(packet -> packet.hasTraceStats()), "the clone's stats");
        assertEquals(List.of("clone.pbtxt", "clone.pftrace", "clone.pftrace.0", "clone.pftrace.1"),
                listDir(), "no temporary file left");
    }

    private List<String> listDir() throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(file -> file.getFileName().toString()).sorted().toList();
        }
    }
}
