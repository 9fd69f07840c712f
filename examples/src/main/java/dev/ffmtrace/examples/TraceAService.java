package dev.ffmtrace.examples;

import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.tracing.sdk.TrackEvent;
import dev.ffmtrace.tracing.sdk.Tracing;
import dev.ffmtrace.tracing.sdk.TracingOptions;
import dev.ffmtrace.tracing.trackevent.Category;
import java.nio.file.Path;
import java.time.Duration;

/**
 * A Java service traced into the system's tracing service (traced, or `ffmtrace serve`):
 * it waits for SESSIONS sessions to record track events, handles ITERATIONS requests, and
 * ends; with -Dtrigger=NAME it then activates trigger NAME, as a service does on an
 * anomaly. Usage: TraceAService SESSIONS ITERATIONS [PRODUCER_SOCKET]
 */
public final class TraceAService {
    static final Category REQUESTS = new Category("requests");
    static final Category QUEUE = new Category("queue");
    static final Category DETAIL = new Category("demo.debug", "debug");   // off unless a session asks for "debug"

    public static void main(String[] args) throws Exception {
        int sessions = Integer.parseInt(args[0]);
        int iterations = Integer.parseInt(args[1]);
        TracingOptions options = TracingOptions.named("trace-a-service");
        Tracing.initialize(args.length > 2 ? options.withSystemBackend(UnixAddress.path(Path.of(args[2])))
                : options.withSystemBackend());                         // Perfetto's default producer socket
        TrackEvent.register(REQUESTS, QUEUE, DETAIL);
        if (!TrackEvent.awaitSessions(sessions, Duration.ofMinutes(1))) {    // not to miss the first requests
            throw new IllegalStateException("no " + sessions + " sessions recorded track events within a minute");
        }
        for (int i = 0; i < iterations; i++) {
            try (var _ = TrackEvent.slice(REQUESTS, "request")) {
                TrackEvent.instant(QUEUE, "dequeue");
                TrackEvent.instant(DETAIL, "detail");
                TrackEvent.counter(QUEUE, "queue length", iterations - i);
            }
        }
        String trigger = System.getProperty("trigger");
        if (trigger != null) {
            Tracing.activateTrigger(trigger);       // a STOP_TRACING session keeps what led here
        }
        Tracing.shutdown();                                             // commits what the writers hold
        System.out.println("handled " + iterations + " requests");
    }
}
