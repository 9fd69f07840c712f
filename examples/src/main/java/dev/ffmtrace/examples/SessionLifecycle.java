package dev.ffmtrace.examples;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.service.DataSource;
import dev.ffmtrace.tracing.service.ProducerOptions;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.trackevent.Category;
import dev.ffmtrace.tracing.trackevent.Track;
import dev.ffmtrace.tracing.trackevent.TrackEventWriter;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/** A session the service runs by itself: it flushes, streams the trace into a file, and stops after its duration. */
public final class SessionLifecycle {
    static final Category WORK = new Category("work");

    public static void main(String[] args) throws Exception {
        SessionConfig config = SessionConfig.builder()              // checked here: errors name the field
                .buffer("main", 1024, OverwritePolicy.RING_BUFFER)  // a 1 MiB ring buffer
                .dataSource("track_event", "main")
                .durationMs(300)                                    // the service stops the session after it
                .flushPeriodMs(50)                                  // and takes the writers' chunks this often
                .writeIntoFile(100, 0)                              // streaming the trace to the output every 100 ms
                .build();
        try (TracingService service = new TracingService();
             FileChannel out = FileChannel.open(Path.of(args[0]), StandardOpenOption.CREATE,
                     StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            DataSource events = service.connectProducer(ProducerOptions.of("example")).registerDataSource("track_event");
            // The stop waits for the worker's last tick: its writer closes, so its chunks are
            // committed, before the service takes the last of the trace.
            AtomicBoolean stopping = new AtomicBoolean();
            CountDownLatch workerDone = new CountDownLatch(1);
            events.onStop(done -> {
                stopping.set(true);
                Thread.ofVirtual().start(() -> {
                    try {
                        workerDone.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    done.run();
                });
            });
            try (TracingSession session = service.startSession(config, out)) {
                Thread worker = Thread.ofPlatform().name("worker").start(() -> {
                    Track thread = Track.thread(Track.process(Os.pid(), "lifecycle example"), Os.tid(), "worker");
                    try (TrackEventWriter writer = events.newTrackEventWriter(BufferExhaustedPolicy.DROP,
                            TrackEventWriter.Config.forThread(thread))) {
                        int i = 0;
                        do {
                            writer.instant(WORK, thread, "tick " + i++);
                            Thread.sleep(5);
                        } while (!stopping.get());
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    } finally {
                        workerDone.countDown();
                    }
                });
                session.completion().get(10, TimeUnit.SECONDS);     // stopped, and the rest written out
                worker.join();
                System.out.println("stopped after " + config.durationMs() + " ms; trace in " + args[0]);
            }
        }
    }
}
