package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.TextFormat;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.tracing.sdk.TrackEvent;
import dev.ffmtrace.tracing.service.ProducerPort;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.trackevent.TrackEventReader;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import perfetto.protos.TraceConfigOuterClass.TraceConfig;

/**
 * {@code produce} as a producer of a tracing service (ffmtrace's, in this JVM) that runs
 * three sessions at once, each selecting its categories with its
 * {@code track_event_config}: each trace holds the categories its session selected and no
 * other, as the issue's demo shows them.
 */
class ProduceSessionsTest {
    private static final String PLAIN = "";
    private static final String QUEUE_ONLY =
            "track_event_config { enabled_categories: \"queue\" disabled_categories: \"*\" }";
    private static final String DEBUG = "track_event_config { enabled_tags: \"debug\" }";

    @Test
    void eachSessionGetsTheCategoriesItsConfigSelects() throws Exception {
        UnixAddress address = UnixAddress.abstractName("ffmtrace-produce-sessions-" + UUID.randomUUID());
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address)) {
            CompletableFuture<ConvertAndDumpTest.Run> produce = CompletableFuture.supplyAsync(() -> ConvertAndDumpTest.run(
                    "produce", "--producer-socket", "@" + address.name(), "--sessions", "3"));
            List<TracingSession> sessions = List.of(service.startSession(config(PLAIN)),
                    service.startSession(config(QUEUE_ONLY)), service.startSession(config(DEBUG)));
            List<Set<String>> expected = List.of(Set.of("queue", "requests"), Set.of("queue"),
                    Set.of("demo.debug", "queue", "requests"));
            // The command runs in this JVM: its track_event instances are the facade's.
            assertTrue(TrackEvent.awaitSessions(3, Duration.ofSeconds(CliProcess.TIMEOUT_SECONDS)));
            for (int i = 0; i < sessions.size(); i++) {
                TracingSession session = sessions.get(i);
                Set<String> categories = expected.get(i);
                Await.until("the session's categories written", () -> {
                    session.flush(Duration.ofSeconds(CliProcess.TIMEOUT_SECONDS));
                    ByteArrayOutputStream snapshot = new ByteArrayOutputStream();
                    session.writeSnapshot(snapshot);
                    return categories(snapshot).containsAll(categories);
                });
            }
            for (int i = 0; i < sessions.size(); i++) {
                TracingSession session = sessions.get(i);
                session.stop();
                ByteArrayOutputStream trace = new ByteArrayOutputStream();
                session.writeTrace(trace);
                assertEquals(expected.get(i), categories(trace), "session " + i);
                session.close();
            }
            ConvertAndDumpTest.Run run = produce.get(CliProcess.TIMEOUT_SECONDS, TimeUnit.SECONDS);
            assertEquals(0, run.exit(), run.err() + run.out());
            assertEquals(3, run.out().lines().filter(line -> line.startsWith("started: ")).count(), run.out());
            assertEquals(3, run.out().lines().filter(line -> line.startsWith("stopped: ")).count(), run.out());
            assertTrue(run.out().contains("; sessions stopped: 3"), run.out());
        }
    }

    private static SessionConfig config(String trackEventConfig) throws Exception {
        TraceConfig.Builder config = TraceConfig.newBuilder();
        TextFormat.merge("buffers { size_kb: 4096 } data_sources { config { name: \"track_event\" "
                + trackEventConfig + " } }", config);
        return SessionConfig.parse(MemorySegment.ofArray(config.build().toByteArray()));
    }

    /** The categories of the trace's events (slice ends and counter values carry none). */
    private static Set<String> categories(ByteArrayOutputStream trace) {
        TrackEventReader.Decoded decoded = TrackEventReader.read(MemorySegment.ofArray(trace.toByteArray()));
        Set<String> categories = new TreeSet<>();
        for (TrackEventReader.Event event : decoded.events()) {
            categories.addAll(event.categories());
        }
        return categories;
    }
}
