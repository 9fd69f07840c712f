package dev.ffmtrace.cli;

import dev.ffmtrace.tracing.sdk.TrackEvent;
import dev.ffmtrace.tracing.trackevent.Category;
import dev.ffmtrace.tracing.trackevent.InternedName;
import dev.ffmtrace.tracing.trackevent.Track;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

/**
 * What {@code produce}'s demo threads write, through the {@link TrackEvent} facade, in
 * three categories that each session selects from with its {@code track_event_config}:
 * {@code requests} (on the thread's track, request slices with a nested parse slice that
 * carries a debug annotation, and an instant), {@code queue} (a slice on the thread's
 * "queue" track where it handles a request another thread enqueued, and the queue depth
 * on a counter track) and {@code demo.debug}, tagged "debug" so that only sessions that
 * ask for the tag get it (an instant per request).
 *
 * <p>The events have the shape of {@link DemoWorkload}'s, which {@code record} keeps until
 * it moves onto the facade: its demo writes through the writers of its in-process
 * service's data sources, one of them ("counters") a buffer of its own.
 */
final class FacadeDemoWorkload implements Runnable {
    static final Category REQUESTS = new Category("requests");
    static final Category QUEUE = new Category("queue");
    static final Category DEBUG = new Category("demo.debug", "debug");
    private static final InternedName REQUEST = InternedName.of("request");
    private static final InternedName PARSE = InternedName.of("parse");
    private static final InternedName BYTES = InternedName.of("bytes");
    private static final InternedName ENQUEUED = InternedName.of("enqueued");
    private static final InternedName HANDLED = InternedName.of("request handled");

    private final int index;
    private final AtomicBoolean stop;
    private final ConcurrentLinkedQueue<Long> handoffs;
    private final LongAdder requests;

    /** Decides the demo's categories ahead: each session's selection of them is made when it starts, not at a first event. */
    static void registerCategories() {
        TrackEvent.register(REQUESTS, QUEUE, DEBUG);
    }

    /**
     * @param handoffs the queue the threads share: each enqueues its requests and handles one
     * @param requests counts the requests the thread made
     */
    FacadeDemoWorkload(int index, AtomicBoolean stop, ConcurrentLinkedQueue<Long> handoffs, LongAdder requests) {
        this.index = index;
        this.stop = stop;
        this.handoffs = handoffs;
        this.requests = requests;
    }

    @Override
    public void run() {
        Track queue = Track.named(TrackEvent.processTrack(), "queue " + index);
        String depth = "queue depth " + index;
        long request = 0;
        try {
            while (!stop.get()) {
                request++;
                try (var _ = TrackEvent.slice(REQUESTS, REQUEST)) {
                    try (var _ = TrackEvent.slice(REQUESTS, PARSE, BYTES, 512 + request % 1024)) {
                        DemoWorkload.spin(2_000);
                    }
                    TrackEvent.instant(REQUESTS, ENQUEUED);
                }
                handoffs.add(request);
                if (handoffs.poll() != null) {
                    try (var _ = TrackEvent.slice(QUEUE, queue, "handle")) {
                        DemoWorkload.spin(3_000);
                    }
                }
                TrackEvent.counter(QUEUE, depth, handoffs.size());
                TrackEvent.instant(DEBUG, HANDLED);
                requests.increment();
                Thread.sleep(1);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
