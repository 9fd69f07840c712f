package dev.ffmtrace.examples;

import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.sdk.TrackEvent;
import dev.ffmtrace.tracing.sdk.Tracing;
import dev.ffmtrace.tracing.sdk.TracingOptions;
import dev.ffmtrace.tracing.service.DataSourceWarning;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.trackevent.Category;
import dev.ffmtrace.tracing.trackevent.InternedName;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** A tracing service in this process, the SDK its producer: a session, threads writing TrackEvents, a trace file. */
public final class InProcessSession {
    static final Category WORK = new Category("work");
    static final InternedName TASK = InternedName.of("task");

    public static void main(String[] args) throws Exception {
        // The binary TraceConfig a session starts from: one 1 MiB buffer, the "track_event" data source.
        HeapBuffered<TraceConfig> traceConfig = new HeapBuffered<>(TraceConfig.FACTORY);
        traceConfig.get().addBuffers().setSizeKb(1024);
        traceConfig.get().addDataSources().setConfig().setName("track_event");

        try (TracingService service = new TracingService()) {           // closed last: it unmaps the SMBs
            Tracing.initialize(TracingOptions.named("example").withInProcessBackend(service));
            TrackEvent.register(WORK);
            try {
                Tracing.awaitRegistrations(Duration.ofSeconds(10));      // track_event offered to the service
                try (TracingSession session = service.startSession(SessionConfig.parse(traceConfig.toSegment()))) {
                    for (DataSourceWarning warning : session.warnings()) {  // e.g. a data source nobody registered
                        System.err.println("warning: " + warning.message());
                    }
                    TrackEvent.awaitSessions(1, Duration.ofSeconds(10)); // started once the SDK hears of it
                    List<Thread> threads = new ArrayList<>();
                    for (int t = 0; t < 3; t++) {
                        // Each thread's events go on its own track, through a writer of its own.
                        threads.add(Thread.ofPlatform().name("worker-" + t).start(() -> {
                            for (int i = 0; i < 5; i++) {
                                try (var _ = TrackEvent.slice(WORK, TASK)) {
                                    TrackEvent.instant(WORK, "item " + i);
                                }
                            }
                        }));
                    }
                    for (Thread thread : threads) {
                        thread.join();
                    }
                    session.flush();                                     // the writers' chunks, into the buffer
                    try (OutputStream out = Files.newOutputStream(Path.of(args[0]))) {
                        System.out.println("wrote " + session.writeTrace(out) + " bytes to " + args[0]);
                    }
                }                                                        // session closed
            } finally {
                Tracing.shutdown();                                      // then the SDK, then the service
            }
        }
    }
}
