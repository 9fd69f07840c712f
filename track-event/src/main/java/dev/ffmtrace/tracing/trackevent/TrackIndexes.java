package dev.ffmtrace.tracing.trackevent;

import java.lang.ref.Cleaner;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Small indexes for live tracks, reused once a track is unreachable. A writer keeps
 * per-track state (described, open slices) in arrays indexed by them: with indexes that
 * only grew, every track ever made would widen those arrays for good, and a service that
 * gives each virtual thread a track makes millions. A writer tells a reused index's new
 * track from its old one by uuid.
 */
final class TrackIndexes {
    private static final Cleaner CLEANER = Cleaner.create(task -> {
        Thread thread = new Thread(task, "ffmtrace-track-indexes");
        thread.setDaemon(true);
        return thread;
    });
    private static final ConcurrentLinkedQueue<Integer> FREE = new ConcurrentLinkedQueue<>();
    private static final AtomicInteger NEXT = new AtomicInteger();

    private TrackIndexes() {
    }

    /** An index for {@code track}, given back once the track is unreachable. */
    static int acquire(Track track) {
        Integer free = FREE.poll();
        int index = free != null ? free : NEXT.getAndIncrement();
        CLEANER.register(track, () -> FREE.add(index));
        return index;
    }

    /** How many indexes were ever handed out: one more than the highest. */
    static int handedOut() {
        return NEXT.get();
    }
}
