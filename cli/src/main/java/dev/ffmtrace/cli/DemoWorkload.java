package dev.ffmtrace.cli;

import dev.ffmtrace.tracing.sdk.TrackEvent;
import dev.ffmtrace.tracing.trackevent.Category;
import dev.ffmtrace.tracing.trackevent.InternedName;
import dev.ffmtrace.tracing.trackevent.Track;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

/**
 * What a demo thread of {@code record} and {@code produce} writes, through the
 * {@link TrackEvent} facade, in three categories that each session selects from with its
 * {@code track_event_config}: {@code requests} (on the thread's track, request slices with
 * a nested parse slice that carries a debug annotation, an instant, and a "stopped"
 * instant once the thread sees the stop), {@code queue} (a slice on the thread's "queue"
 * track where it handles a request another thread enqueued, and the queue depth on a
 * counter track) and {@code demo.debug}, tagged "debug" so that only sessions that ask
 * for the tag get it (an instant per request).
 */
final class DemoWorkload implements Runnable {
    static final Category REQUESTS = new Category("requests");
    static final Category QUEUE = new Category("queue");
    static final Category DEBUG = new Category("demo.debug", "debug");
    private static final InternedName REQUEST = InternedName.of("request");
    private static final InternedName PARSE = InternedName.of("parse");
    private static final InternedName BYTES = InternedName.of("bytes");
    private static final InternedName ENQUEUED = InternedName.of("enqueued");
    private static final InternedName HANDLED = InternedName.of("request handled");
    private static final InternedName STOPPED = InternedName.of("stopped");

    /**
     * What the threads share: the go they wait for, the stop they look for, the queue each
     * enqueues its requests on and handles one from, and the count of their requests.
     */
    record Shared(CountDownLatch go, AtomicBoolean stop, ConcurrentLinkedQueue<Long> handoffs, LongAdder requests) {
        Shared() {
            this(new CountDownLatch(1), new AtomicBoolean(), new ConcurrentLinkedQueue<>(), new LongAdder());
        }
    }

    private final int index;
    private final Shared shared;

    /** Decides the demo's categories ahead: each session's selection of them is made when it starts, not at a first event. */
    static void registerCategories() {
        TrackEvent.register(REQUESTS, QUEUE, DEBUG);
    }

    DemoWorkload(int index, Shared shared) {
        this.index = index;
        this.shared = shared;
    }

    @Override
    public void run() {
        Track queue = Track.named(TrackEvent.processTrack(), "queue " + index);
        String depth = "queue depth " + index;
        long request = 0;
        try {
            shared.go().await();
            // One request at least, however soon the session stops: the thread is in its trace.
            do {
                request++;
                try (var _ = TrackEvent.slice(REQUESTS, REQUEST)) {
                    try (var _ = TrackEvent.slice(REQUESTS, PARSE, BYTES, 512 + request % 1024)) {
                        spin(2_000);
                    }
                    TrackEvent.instant(REQUESTS, ENQUEUED);
                }
                shared.handoffs().add(request);
                if (shared.handoffs().poll() != null) {
                    try (var _ = TrackEvent.slice(QUEUE, queue, "handle")) {
                        spin(3_000);
                    }
                }
                TrackEvent.counter(QUEUE, depth, shared.handoffs().size());
                TrackEvent.instant(DEBUG, HANDLED);
                shared.requests().increment();
                Thread.sleep(1);
            } while (!shared.stop().get());
            // Written after the stop was asked, which waits for it: the trace shows the thread ran until then.
            TrackEvent.instant(REQUESTS, STOPPED);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Works for {@code nanos}, as a request's parsing or handling would. */
    private static void spin(long nanos) {
        long until = System.nanoTime() + nanos;
        while (System.nanoTime() < until) {
            Thread.onSpinWait();
        }
    }
}
