package dev.ffmtrace.cli;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.trackevent.Category;
import dev.ffmtrace.tracing.trackevent.InternedName;
import dev.ffmtrace.tracing.trackevent.Track;
import dev.ffmtrace.tracing.trackevent.TrackEventWriter;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

/**
 * What {@code record}'s demo producer threads write, through the TrackEvent API: per
 * thread, a thread track under the process track with nested request slices (one with a
 * debug annotation) and an instant, a custom "queue" track where the thread handles a
 * request another thread enqueued (a flow links the two), and a counter track of the
 * queue depth, written on the "counters" data source. Once it sees the stop, a thread
 * ends with a "stopped" instant on its track.
 */
final class DemoWorkload implements Runnable {
    /** Where a thread's writers come from: a data source of the in-process service, or a producer connection's instance. */
    @FunctionalInterface
    interface WriterSource {
        TrackEventWriter newTrackEventWriter(BufferExhaustedPolicy policy, TrackEventWriter.Config config);
    }

    /** What the threads wrote: request slices begun (each also a flow's start), and events the writers discarded. */
    record Counts(LongAdder requests, LongAdder discardedEvents) {
        Counts() {
            this(new LongAdder(), new LongAdder());
        }
    }

    private static final Category REQUESTS = new Category("requests");
    private static final InternedName REQUEST = InternedName.of("request");
    private static final InternedName PARSE = InternedName.of("parse");
    private static final InternedName ENQUEUED = InternedName.of("enqueued");
    private static final InternedName HANDLE = InternedName.of("handle");
    private static final InternedName BYTES = InternedName.of("bytes");
    private static final InternedName STOPPED = InternedName.of("stopped");

    private final int index;
    private final Track process;
    private final WriterSource events;
    private final WriterSource counters;
    private final AtomicBoolean stop;
    private final ConcurrentLinkedQueue<Long> handoffs;
    private final Counts counts;

    DemoWorkload(int index, Track process, WriterSource events, WriterSource counters, AtomicBoolean stop,
                 ConcurrentLinkedQueue<Long> handoffs) {
        this(index, process, events, counters, stop, handoffs, new Counts());
    }

    DemoWorkload(int index, Track process, WriterSource events, WriterSource counters, AtomicBoolean stop,
                 ConcurrentLinkedQueue<Long> handoffs, Counts counts) {
        this.index = index;
        this.process = process;
        this.events = events;
        this.counters = counters;
        this.stop = stop;
        this.handoffs = handoffs;
        this.counts = counts;
    }

    @Override
    public void run() {
        Track thread = Track.thread(process, Os.tid(), "demo worker " + index);
        Track queue = Track.named(process, "queue " + index);
        Track depth = Track.counter(process, "queue depth " + index);
        try (TrackEventWriter writer = events.newTrackEventWriter(BufferExhaustedPolicy.STALL,
                     TrackEventWriter.Config.forThread(thread));
             TrackEventWriter counterWriter = counters.newTrackEventWriter(BufferExhaustedPolicy.DROP,
                     TrackEventWriter.Config.DEFAULT)) {
            long request = 0;
            // One request at least, however soon the recording stops: its thread is in the trace.
            do {
                long flow = ((long) (index + 1) << 40) | ++request;
                long outer = writer.beginSlice(REQUESTS, thread, REQUEST, flow, 0);
                counts.requests().increment();
                long parse = writer.beginSlice(REQUESTS, thread, PARSE, BYTES, 512 + request % 1024);
                spin(2_000);
                writer.endSlice(thread, parse);
                writer.instant(REQUESTS, thread, ENQUEUED);
                writer.endSlice(thread, outer);
                handoffs.add(flow);
                Long picked = handoffs.poll();
                if (picked != null) {
                    long handle = writer.beginSlice(REQUESTS, queue, HANDLE, 0, picked);
                    spin(3_000);
                    writer.endSlice(queue, handle);
                }
                counterWriter.counter(depth, handoffs.size());
                Thread.sleep(1);
            } while (!stop.get());
            // Written after the stop was asked, which waits for it: the trace shows the thread ran until then.
            writer.instant(REQUESTS, thread, STOPPED);
            counts.discardedEvents().add(writer.discardedEvents() + counterWriter.discardedEvents());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Works for {@code nanos}, as a request's parsing or handling would. */
    static void spin(long nanos) {
        long until = System.nanoTime() + nanos;
        while (System.nanoTime() < until) {
            Thread.onSpinWait();
        }
    }
}
