package dev.ffmtrace.examples;

import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.sdk.TrackEvent;
import dev.ffmtrace.tracing.sdk.Tracing;
import dev.ffmtrace.tracing.sdk.TracingOptions;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.trackevent.Category;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
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
        // The stop waits for the worker's last tick: the session records until the observer
        // lets go, then the SDK commits the worker's chunks before the service takes the rest.
        AtomicBoolean stopping = new AtomicBoolean();
        CountDownLatch workerDone = new CountDownLatch(1);
        TrackEvent.SessionObserver lastTick = new TrackEvent.SessionObserver() {
            @Override
            public void onStop(TrackEvent.SessionStop stop) {
                Runnable done = stop.handleStopAsynchronously();
                stopping.set(true);
                Thread.ofVirtual().start(() -> {
                    try {
                        workerDone.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    done.run();
                });
            }
        };
        try (TracingService service = new TracingService();
             FileChannel out = FileChannel.open(Path.of(args[0]), StandardOpenOption.CREATE,
                     StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            Tracing.initialize(TracingOptions.named("example").withInProcessBackend(service));
            TrackEvent.register(WORK);
            TrackEvent.addSessionObserver(lastTick);
            try {
                Tracing.awaitRegistrations(Duration.ofSeconds(10));      // track_event offered to the service
                try (TracingSession session = service.startSession(config, out)) {
                    TrackEvent.awaitSessions(1, Duration.ofSeconds(10)); // started once the SDK hears of it
                    Thread worker = Thread.ofPlatform().name("worker").start(() -> {
                        int i = 0;
                        try {
                            do {
                                TrackEvent.instant(WORK, "tick " + i++);
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
            } finally {
                TrackEvent.removeSessionObserver(lastTick);
                Tracing.shutdown();
            }
        }
    }
}
