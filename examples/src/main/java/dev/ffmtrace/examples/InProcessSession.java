package dev.ffmtrace.examples;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.service.DataSource;
import dev.ffmtrace.tracing.service.DataSourceWarning;
import dev.ffmtrace.tracing.service.ProducerOptions;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.trackevent.Category;
import dev.ffmtrace.tracing.trackevent.InternedName;
import dev.ffmtrace.tracing.trackevent.Track;
import dev.ffmtrace.tracing.trackevent.TrackEventWriter;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** A tracing service in this process: a producer, a session, threads writing TrackEvents, a trace file. */
public final class InProcessSession {
    static final Category WORK = new Category("work");
    static final InternedName TASK = InternedName.of("task");
    static final Track PROCESS = Track.process(Os.pid(), "in-process example");

    public static void main(String[] args) throws Exception {
        // The binary TraceConfig a session starts from: one 1 MiB buffer, the "track_event" data source.
        HeapBuffered<TraceConfig> traceConfig = new HeapBuffered<>(TraceConfig.FACTORY);
        traceConfig.get().addBuffers().setSizeKb(1024);
        traceConfig.get().addDataSources().setConfig().setName("track_event");

        try (TracingService service = new TracingService()) {           // closed last: it unmaps the SMBs
            DataSource trackEvents = service.connectProducer(ProducerOptions.of("example").withSmbSize(1 << 20))
                    .registerDataSource("track_event");
            try (TracingSession session = service.startSession(SessionConfig.parse(traceConfig.toSegment()))) {
                for (DataSourceWarning warning : session.warnings()) {  // e.g. a data source nobody registered
                    System.err.println("warning: " + warning.message());
                }
                List<Thread> threads = new ArrayList<>();
                for (int t = 0; t < 3; t++) {
                    threads.add(Thread.ofPlatform().name("worker-" + t).start(() -> {
                        Track thread = Track.thread(PROCESS, Os.tid(), Thread.currentThread().getName());
                        // A writer per thread, each its own sequence; closed before the session.
                        try (TrackEventWriter events = trackEvents.newTrackEventWriter(BufferExhaustedPolicy.STALL,
                                TrackEventWriter.Config.forThread(thread))) {
                            for (int i = 0; i < 5; i++) {
                                try (var _ = events.slice(WORK, TASK)) {
                                    events.instant(WORK, thread, "item " + i);
                                }
                            }
                        }
                    }));
                }
                for (Thread thread : threads) {
                    thread.join();
                }
                session.flush();                                         // the writers' chunks, into the buffer
                try (OutputStream out = Files.newOutputStream(Path.of(args[0]))) {
                    System.out.println("wrote " + session.writeTrace(out) + " bytes to " + args[0]);
                }
            }                                                            // session closed, then the service
        }
    }
}
