package dev.ffmtrace.tracing.trackevent;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.perfetto.protos.DebugAnnotation;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TrackEvent;

/**
 * Writes TrackEvents on one sequence (one {@link TracePacketSink}, one thread at a time).
 *
 * <p><b>Incremental state.</b> The sequence starts with a packet flagged
 * {@code SEQ_INCREMENTAL_STATE_CLEARED} (the very first also {@code first_packet_on_sequence})
 * that holds the sequence's {@code trace_packet_defaults} (the default track, whose events
 * then omit {@code track_uuid}, and the timestamp clock). With incremental timestamps, a
 * clock snapshot before the first timestamp starts Perfetto's sequence-scoped incremental
 * clock ({@value #INCREMENTAL_CLOCK_ID}) at that time: each event's timestamp is then the
 * delta from the previous one, one to three bytes instead of eight. Event and category names and debug
 * annotation names are interned (written once in {@code interned_data}, then referred to
 * by id); a track's descriptor is written once, its parents' first, before its first
 * event. Events carry {@code SEQ_NEEDS_INCREMENTAL_STATE}. Whenever the sink's
 * {@linkplain TracePacketSink#incrementalStateEpoch() epoch} moves (packets were dropped
 * or the service lost some) all of it is written anew before the next event.
 *
 * <p><b>Slices must nest on their track:</b> {@link #beginSlice} returns a token that the
 * matching {@link #endSlice} must present; ending a slice that is not the innermost open
 * one on the track, or with no slice open, is an {@link IllegalStateException} and writes
 * nothing. A disabled category writes nothing and returns token 0, which
 * {@code endSlice} accepts as a no-op; that costs one volatile load and a branch.
 *
 * <p><b>Time.</b> Each event reads the configured {@link TraceClock}, unless
 * {@link #atTimestamp} gave the next event its timestamp (traces generated offline). A
 * timestamp earlier than the previous one is written absolute, with its clock id.
 *
 * <p><b>Scopes.</b> {@link #slice(Category, InternedName)} begins a slice that the end of a
 * try-with-resources block ends; the scope object is one per writer, reused, so scoped
 * slices allocate nothing either:
 *
 * <pre>{@code
 * try (var slice = events.slice(RPC, HANDLE)) {
 *     events.instant(RPC, thread, CACHE_MISS);
 * }
 * }</pre>
 *
 * <p><b>Names.</b> An {@link InternedName} is interned once per sequence by identity; keep
 * it in a static field. Names made at run time go through the {@code String} overloads,
 * which intern per writer up to {@value #MAX_DYNAMIC_NAMES} names per incremental state
 * and write any further ones inline, so a stream of distinct names costs bytes, not memory.
 *
 * <p><b>Never throws into the application.</b> Once the writer, its TraceWriter or the
 * producer behind it is closed (or the sink fails), every call is a no-op counted in
 * {@link #discardedEvents()}. Only misuse throws: an {@code endSlice} out of order, a
 * counter value on a track that is not a counter, a scope closed twice.
 *
 * <p><b>Threads.</b> One thread writes at a time; the writer may pass from thread to thread
 * (an executor's tasks using it in turn, with the usual hand-off ordering). {@link #close()}
 * may be called from any thread, e.g. a shutdown hook: over a TraceWriter it waits for the
 * event being written to finish.
 *
 * <p>After warm-up, events with interned names allocate nothing.
 *
 * <p>Over 500 lines for its public API alone: the overloads, each kept small so that its
 * category check inlines into the caller. Writing an event is orchestrated here and done
 * by {@code SequenceState} (incremental state, descriptors, timestamps),
 * {@code InterningTable}, {@code EventBodyEncoder} (the one encoder of the event's fields)
 * and {@code OpenSlices}.
 */
public final class TrackEventWriter implements AutoCloseable {
    /** Perfetto's first sequence-scoped clock id: the clock whose timestamps are deltas. */
    public static final int INCREMENTAL_CLOCK_ID = 64;
    /** Names given as strings that one incremental state interns; further ones are written inline. */
    public static final int MAX_DYNAMIC_NAMES = 1024;

    /**
     * A slice begun by {@link #slice} and ended by {@link #close()}. The writer hands out
     * the same object for every scope, keeping a stack of the open ones: close scopes in
     * the reverse order of opening, as try-with-resources does.
     */
    public static final class SliceScope implements AutoCloseable {
        private final TrackEventWriter writer;

        private SliceScope(TrackEventWriter writer) {
            this.writer = writer;
        }

        /** Ends the innermost scoped slice. */
        @Override
        public void close() {
            writer.endScope();
        }
    }

    /**
     * How a writer stamps and places its events.
     *
     * @param defaultTrack the track events go on when written to it without a
     *     {@code track_uuid} (Perfetto's {@code track_event_defaults}), normally the
     *     writing thread's track; null for none
     * @param clock the clock read for each event
     * @param incrementalTimestamps whether timestamps are deltas on the incremental clock
     */
    public record Config(Track defaultTrack, TraceClock clock, boolean incrementalTimestamps) {
        /** Monotonic clock, incremental timestamps, no default track. */
        public static final Config DEFAULT = new Config(null, TraceClock.MONOTONIC, true);

        public Config {
            if (clock == null) {
                throw new IllegalArgumentException("a TrackEventWriter needs a clock");
            }
        }

        /** The default config with {@code thread} as the default track. */
        public static Config forThread(Track thread) {
            return new Config(thread, TraceClock.MONOTONIC, true);
        }
    }

    private static final long NO_TIMESTAMP = Long.MIN_VALUE;

    private final TracePacketSink sink;
    private final Track defaultTrack;
    private final TraceClock clock;
    private final EventBodyEncoder encoder;
    private final SliceScope scope = new SliceScope(this);
    private final OpenSlices openSlices = new OpenSlices();
    /** No more events: closed, or the sink is gone. */
    private volatile boolean closed;
    /** Guarded by this: the sink is closed once, by whichever thread closes first. */
    private boolean sinkClosed;
    private long discardedEvents;

    private final InterningTable interning = new InterningTable();
    private final SequenceState sequence;
    private long nextTimestamp = NO_TIMESTAMP;

    /** A writer with {@link Config#DEFAULT}. */
    public TrackEventWriter(TracePacketSink sink) {
        this(sink, Config.DEFAULT);
    }

    /**
     * A writer with nowhere to write: every event is a counted no-op. What a data source
     * hands out while no session has started it, so application code needs no checks.
     */
    public static TrackEventWriter discarding(Config config) {
        return new TrackEventWriter(DiscardingSink.INSTANCE, config);
    }

    public TrackEventWriter(TracePacketSink sink, Config config) {
        this.sink = sink;
        this.defaultTrack = config.defaultTrack();
        this.encoder = new EventBodyEncoder(defaultTrack);
        this.clock = config.clock();
        this.sequence = new SequenceState(sink, interning, config);
        this.closed = !sink.isOpen();
    }

    /**
     * Gives the next event (or counter value, or end) this timestamp, on the writer's
     * clock, instead of reading the clock.
     */
    public TrackEventWriter atTimestamp(long timestamp) {
        if (timestamp < 0) {
            throw new IllegalArgumentException("a timestamp cannot be negative: " + timestamp);
        }
        nextTimestamp = timestamp;
        return this;
    }

    /** Begins a slice on {@code track}; returns the token {@link #endSlice} needs (0 if the category is disabled). */
    public long beginSlice(Category category, Track track, InternedName name) {
        // The check stays in this small method, which inlines into the caller; the event
        // itself is written out of line.
        if (!category.isEnabled()) {
            return skipped();
        }
        return beginSliceEnabled(category, track, name, null, 0, 0);
    }

    /**
     * Begins a slice named by a string made at run time (see the class comment on names);
     * returns the token {@link #endSlice} needs (0 if the category is disabled).
     */
    public long beginSlice(Category category, Track track, String name) {
        if (!category.isEnabled()) {
            return skipped();
        }
        return beginSliceEnabled(category, track, null, requireName(name), 0, 0);
    }

    /**
     * Begins a slice, optionally as the source of flow {@code flowId} and as the end of
     * flow {@code terminatingFlowId} (0: none).
     */
    public long beginSlice(Category category, Track track, InternedName name, long flowId, long terminatingFlowId) {
        if (!category.isEnabled()) {
            return skipped();
        }
        return beginSliceEnabled(category, track, name, null, flowId, terminatingFlowId);
    }

    private long beginSliceEnabled(Category category, Track track, InternedName name, String stringName, long flowId,
                                   long terminatingFlowId) {
        if (closed) {
            return discarded();
        }
        try {
            if (flowId == 0 && terminatingFlowId == 0) {
                writeSimpleEvent(category, track, name, stringName, TrackEvent.Type.TYPE_SLICE_BEGIN, takeTimestamp());
            } else {
                TrackEvent event = startEvent(category, track, name, null, TrackEvent.Type.TYPE_SLICE_BEGIN,
                        takeTimestamp());
                addFlows(event, flowId, terminatingFlowId);
            }
            return finishBegin(track);
        } catch (RuntimeException e) {
            return failed(e);
        }
    }

    /** Begins a slice with one integer debug annotation. */
    public long beginSlice(Category category, Track track, InternedName name, InternedName argument, long value) {
        if (!category.isEnabled()) {
            return skipped();
        }
        return beginAnnotatedSlice(category, track, name, argument, EventBodyEncoder.INT_VALUE_TAG, value, false);
    }

    /** Begins a slice with one floating-point debug annotation. */
    public long beginSlice(Category category, Track track, InternedName name, InternedName argument, double value) {
        if (!category.isEnabled()) {
            return skipped();
        }
        return beginAnnotatedSlice(category, track, name, argument, EventBodyEncoder.DOUBLE_VALUE_TAG,
                Double.doubleToRawLongBits(value), true);
    }

    /** Begins a slice with one boolean debug annotation. */
    public long beginSlice(Category category, Track track, InternedName name, InternedName argument, boolean value) {
        if (!category.isEnabled()) {
            return skipped();
        }
        return beginAnnotatedSlice(category, track, name, argument, EventBodyEncoder.BOOL_VALUE_TAG, value ? 1 : 0, false);
    }

    /**
     * The numeric and boolean beginSlice overloads: the annotation's value tag, its bits, and
     * whether they are fixed64.
     */
    private long beginAnnotatedSlice(Category category, Track track, InternedName name, InternedName argument,
                                     byte valueTag, long value, boolean fixed64) {
        if (closed) {
            return discarded();
        }
        try {
            TracePacket packet = sequence.startPacket(track, takeTimestamp());
            long nameIid = interning.intern(packet, category, name, argument);
            int n = encoder.encode(TrackEvent.Type.TYPE_SLICE_BEGIN, track, categoryIid(category), nameIid);
            encoder.appendAnnotated(packet, n, interning.annotationIid(argument), valueTag, value, fixed64);
            return finishBegin(track);
        } catch (RuntimeException e) {
            return failed(e);
        }
    }

    /** Begins a slice with one string debug annotation. */
    public long beginSlice(Category category, Track track, InternedName name, InternedName argument, String value) {
        if (!category.isEnabled()) {
            return skipped();
        }
        if (closed) {
            return discarded();
        }
        try {
            beginAnnotated(category, track, name, argument).setStringValue(value);
            return finishBegin(track);
        } catch (RuntimeException e) {
            return failed(e);
        }
    }

    /**
     * Ends the innermost open slice on {@code track}, which must be the one {@code slice}
     * names.
     *
     * @throws IllegalStateException if no slice is open on the track or another one is innermost
     */
    public void endSlice(Track track, long slice) {
        if (slice == 0) {
            return;
        }
        if (closed) {
            discarded();
            return;
        }
        try {
            openSlices.close(track, slice);
        } catch (IllegalStateException e) {
            nextTimestamp = NO_TIMESTAMP;
            throw e;
        }
        try {
            writeSimpleEvent(Category.NONE, track, null, null, TrackEvent.Type.TYPE_SLICE_END, takeTimestamp());
            sink.finishTracePacket();
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    /**
     * Ends the innermost slice on {@code track} whichever writer began it: for a track that
     * several writers write in turn (the SDK's virtual threads borrow writers), whose
     * nesting no one writer sees. The trace processor nests a track's slices by time.
     */
    public void endSliceOnSharedTrack(Track track) {
        if (closed) {
            discarded();
            return;
        }
        try {
            writeSimpleEvent(Category.NONE, track, null, null, TrackEvent.Type.TYPE_SLICE_END, takeTimestamp());
            sink.finishTracePacket();
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    /**
     * Begins a slice on the writer's default track and returns the scope whose
     * {@link SliceScope#close()} ends it.
     *
     * @throws IllegalStateException if the writer has no default track (see {@link Config})
     */
    public SliceScope slice(Category category, InternedName name) {
        return slice(category, defaultTrackOrThrow(), name);
    }

    /** Begins a slice on {@code track} and returns the scope whose {@link SliceScope#close()} ends it. */
    public SliceScope slice(Category category, Track track, InternedName name) {
        return pushScope(track, beginSlice(category, track, name));
    }

    /** A scoped slice on {@code track} named by a string made at run time. */
    public SliceScope slice(Category category, Track track, String name) {
        return pushScope(track, beginSlice(category, track, name));
    }

    /** A scoped slice on the default track named by a string made at run time. */
    public SliceScope slice(Category category, String name) {
        Track track = defaultTrackOrThrow();
        return pushScope(track, beginSlice(category, track, name));
    }

    /** A slice of known start and duration: a begin and an end written back to back. */
    public void completeSlice(Category category, Track track, InternedName name, long startNanos, long durationNanos) {
        if (!category.isEnabled()) {
            skipped();
            return;
        }
        if (durationNanos < 0) {
            throw new IllegalArgumentException("a slice cannot last " + durationNanos + " ns");
        }
        nextTimestamp = NO_TIMESTAMP;
        if (closed) {
            discarded();
            return;
        }
        try {
            writeSimpleEvent(category, track, name, null, TrackEvent.Type.TYPE_SLICE_BEGIN, startNanos);
            sink.finishTracePacket();
            writeSimpleEvent(Category.NONE, track, null, null, TrackEvent.Type.TYPE_SLICE_END, startNanos + durationNanos);
            sink.finishTracePacket();
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    /** An instant event on {@code track}; {@code name} may be null. */
    public void instant(Category category, Track track, InternedName name) {
        if (!category.isEnabled()) {
            skipped();
            return;
        }
        instantEnabled(category, track, name, null);
    }

    /** An instant event with no name on {@code track}. */
    public void instant(Category category, Track track) {
        instant(category, track, (InternedName) null);
    }

    /** An instant event named by a string made at run time (see the class comment on names). */
    public void instant(Category category, Track track, String name) {
        if (!category.isEnabled()) {
            skipped();
            return;
        }
        instantEnabled(category, track, null, requireName(name));
    }

    private void instantEnabled(Category category, Track track, InternedName name, String stringName) {
        if (closed) {
            discarded();
            return;
        }
        try {
            writeSimpleEvent(category, track, name, stringName, TrackEvent.Type.TYPE_INSTANT, takeTimestamp());
            sink.finishTracePacket();
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    /** An integer value on a counter track. */
    public void counter(Track track, long value) {
        counterValue(track, value, false);
    }

    /** A floating-point value on a counter track. */
    public void counter(Track track, double value) {
        counterValue(track, Double.doubleToRawLongBits(value), true);
    }

    /** Both counter overloads: the value's bits, and whether they are a double's. */
    private void counterValue(Track track, long bits, boolean isDouble) {
        requireCounter(track);
        if (closed) {
            discarded();
            return;
        }
        try {
            TrackEvent event = counterEvent(track);
            if (isDouble) {
                event.setDoubleCounterValue(Double.longBitsToDouble(bits));
            } else {
                event.setCounterValue(bits);
            }
            sink.finishTracePacket();
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    /**
     * Writes {@code track}'s descriptor (and its parents') now if this sequence has not
     * written it yet; otherwise that happens before the track's first event.
     */
    public void describe(Track track) {
        if (closed) {
            discarded();
            return;
        }
        try {
            sequence.describe(track);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    /** Flushes the sink; a no-op once the writer is closed. */
    public void flush() {
        if (closed) {
            return;
        }
        try {
            sink.flush();
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    /**
     * Events not written because the writer, its sink or what the sink writes into was
     * closed, or the sink failed.
     */
    public long discardedEvents() {
        return discardedEvents;
    }

    /** Whether events can still be written. */
    public boolean isOpen() {
        return !closed && sink.isOpen();
    }

    /**
     * Closes the sink; later calls are counted no-ops. Never throws: a sink already closed
     * under the writer (its producer disconnected) is fine. Any thread may call it.
     */
    @Override
    public void close() {
        closed = true;
        synchronized (this) {
            if (sinkClosed) {
                return;
            }
            sinkClosed = true;
        }
        try {
            sink.close();
        } catch (RuntimeException e) {
            discardedEvents++;
        }
    }

    // ---- internals ----

    private long discarded() {
        nextTimestamp = NO_TIMESTAMP;
        discardedEvents++;
        return 0;
    }

    /**
     * An event failed below the writer. If the sink is gone (closed, unmapped, or its
     * stream broke) the writer closes; otherwise the event alone is lost. Either way the
     * application carries on.
     */
    private long failed(RuntimeException e) {
        nextTimestamp = NO_TIMESTAMP;
        discardedEvents++;
        if (!sink.isOpen()) {
            closed = true;
        }
        return 0;
    }

    private static String requireName(String name) {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("an event name cannot be null or empty");
        }
        return name;
    }

    private Track defaultTrackOrThrow() {
        if (defaultTrack == null) {
            throw new IllegalStateException("slice(category, name) needs a default track: give the writer one"
                    + " (TrackEventWriter.Config.forThread) or name the track");
        }
        return defaultTrack;
    }

    private SliceScope pushScope(Track track, long token) {
        openSlices.pushScope(track, token);
        return scope;
    }

    private void endScope() {
        Track track = openSlices.innermostScopeTrack();
        endSlice(track, openSlices.popScope());
    }

    /** A disabled category's event: writes nothing, and a timestamp given for it is spent. */
    private long skipped() {
        nextTimestamp = NO_TIMESTAMP;
        return 0;
    }

    private long takeTimestamp() {
        long timestamp = nextTimestamp;
        if (timestamp == NO_TIMESTAMP) {
            return clock == TraceClock.MONOTONIC
                    ? System.nanoTime()
                    : Os.clockNanos(Os.CLOCK_BOOTTIME);
        }
        nextTimestamp = NO_TIMESTAMP;
        return timestamp;
    }

    private DebugAnnotation beginAnnotated(Category category, Track track, InternedName name, InternedName argument) {
        TrackEvent event = startEvent(category, track, name, argument, TrackEvent.Type.TYPE_SLICE_BEGIN, takeTimestamp());
        DebugAnnotation annotation = event.addDebugAnnotations();
        annotation.setNameIid(interning.annotationIid(argument));
        return annotation;
    }

    private long finishBegin(Track track) {
        sink.finishTracePacket();
        return openSlices.open(track);
    }

    private TrackEvent counterEvent(Track track) {
        return startEvent(Category.NONE, track, null, null, TrackEvent.Type.TYPE_COUNTER, takeTimestamp());
    }

    /**
     * Writes an event that has no fields beyond its type, track, category and name (an
     * interned one or {@code stringName}).
     */
    private void writeSimpleEvent(Category category, Track track, InternedName name, String stringName,
                                  TrackEvent.Type type, long timestamp) {
        TracePacket packet = sequence.startPacket(track, timestamp);
        long nameIid = stringName == null
                ? interning.intern(packet, category, name, null)
                : interning.internString(packet, category, stringName);
        int n = encoder.encode(type, track, categoryIid(category), nameIid);
        if (nameIid == InterningTable.INLINE_NAME) {
            encoder.open(packet, n).setName(stringName);
            return;
        }
        encoder.append(packet, n);
    }

    /** The iid {@link #interning} gave {@code category}; 0 for {@link Category#NONE}, which has none. */
    private long categoryIid(Category category) {
        return category == Category.NONE ? 0 : interning.categoryIid(category);
    }

    /** Writes what the event needs first (state, descriptors, interned names), then starts it. */
    private TrackEvent startEvent(Category category, Track track, InternedName name, InternedName argument,
                                  TrackEvent.Type type, long timestamp) {
        TracePacket packet = sequence.startPacket(track, timestamp);
        long nameIid = interning.intern(packet, category, name, argument);
        return encoder.open(packet, encoder.encode(type, track, categoryIid(category), nameIid));
    }

    private static void requireCounter(Track track) {
        if (!track.isCounter()) {
            throw new IllegalArgumentException("counter values go on a counter track (Track.counter)");
        }
    }

    private static void addFlows(TrackEvent event, long flowId, long terminatingFlowId) {
        if (flowId != 0) {
            event.addFlowIds(flowId);
        }
        if (terminatingFlowId != 0) {
            event.addTerminatingFlowIds(terminatingFlowId);
        }
    }

    /** The sink of {@link #discarding}: never open, so the writer never asks it for a packet. */
    private enum DiscardingSink implements TracePacketSink {
        INSTANCE;

        @Override
        public TracePacket newTracePacket() {
            throw new IllegalStateException("a discarding sink takes no packets");
        }

        @Override
        public void finishTracePacket() {
        }

        @Override
        public long incrementalStateEpoch() {
            return 0;
        }

        @Override
        public boolean isOpen() {
            return false;
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    }
}
