package dev.ffmtrace.tracing.trackevent;

import dev.ffmtrace.memory.Native;
import dev.ffmtrace.perfetto.protos.InternedData;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * Writes TrackEvents on one sequence (one {@link TraceWriter}, one thread at a time).
 *
 * <p>Event and category names and debug annotation names are interned: written once per
 * sequence in {@code interned_data} and referred to by id afterwards. A track's
 * descriptor is written once per sequence, its parents' first, before its first event.
 * The first packet after the sequence's state was (re)started carries
 * {@code SEQ_INCREMENTAL_STATE_CLEARED} (and the very first {@code first_packet_on_sequence});
 * events carry {@code SEQ_NEEDS_INCREMENTAL_STATE}. When the writer drops packets (the
 * SMB was full) the interned names and descriptors may be lost with them, so the state is
 * started again and everything is written anew.
 *
 * <p>Slices must nest on their track: {@link #beginSlice} returns a token that the
 * matching {@link #endSlice} must present; ending a slice that is not the innermost open
 * one on the track, or with no slice open, is an {@link IllegalStateException} and writes
 * nothing. A disabled category writes nothing and returns token 0, which
 * {@code endSlice} accepts as a no-op. Timestamps are CLOCK_BOOTTIME, the clock Perfetto
 * uses by default. After warm-up, events with interned names allocate nothing.
 */
public final class TrackEventWriter implements AutoCloseable {
    private final TraceWriter<TracePacket> writer;
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment clockScratch = arena.allocate(16, 8);

    private long[] nameIids = new long[64];
    private long[] annotationIids = new long[16];
    private long[] categoryIids = new long[16];
    private boolean[] described = new boolean[64];
    private int[] openSlices = new int[64];
    private long nextIid = 1;
    private boolean stateCleared;
    private boolean firstPacket = true;
    private long dropsSeen;

    public TrackEventWriter(TraceWriter<TracePacket> writer) {
        this.writer = writer;
    }

    /** Begins a slice on {@code track}; returns the token {@link #endSlice} needs (0 if the category is disabled). */
    public long beginSlice(Category category, Track track, InternedName name) {
        return beginSlice(category, track, name, 0, 0);
    }

    /**
     * Begins a slice, optionally as the source of flow {@code flowId} and as the end of
     * flow {@code terminatingFlowId} (0: none).
     */
    public long beginSlice(Category category, Track track, InternedName name, long flowId, long terminatingFlowId) {
        if (!category.isEnabled()) {
            return 0;
        }
        TrackEvent event = startEvent(category, track, name, null, TrackEvent.Type.TYPE_SLICE_BEGIN);
        addFlows(event, flowId, terminatingFlowId);
        return finishBegin(track);
    }

    /** Begins a slice with one integer debug annotation. */
    public long beginSlice(Category category, Track track, InternedName name, InternedName argument, long value) {
        if (!category.isEnabled()) {
            return 0;
        }
        TrackEvent event = startEvent(category, track, name, argument, TrackEvent.Type.TYPE_SLICE_BEGIN);
        var annotation = event.addDebugAnnotations();
        annotation.setNameIid(annotationIids[argument.index]);
        annotation.setIntValue(value);
        return finishBegin(track);
    }

    /** Begins a slice with one string debug annotation. */
    public long beginSlice(Category category, Track track, InternedName name, InternedName argument, String value) {
        if (!category.isEnabled()) {
            return 0;
        }
        TrackEvent event = startEvent(category, track, name, argument, TrackEvent.Type.TYPE_SLICE_BEGIN);
        var annotation = event.addDebugAnnotations();
        annotation.setNameIid(annotationIids[argument.index]);
        annotation.setStringValue(value);
        return finishBegin(track);
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
        int depth = track.index < openSlices.length ? openSlices[track.index] : 0;
        if (depth == 0) {
            throw new IllegalStateException("endSlice on a track with no open slice (track " + track.uuid() + ")");
        }
        if (slice != token(track, depth)) {
            throw new IllegalStateException("endSlice of a slice that is not the innermost open one on track "
                    + track.uuid() + ": slices on a track must nest");
        }
        openSlices[track.index] = depth - 1;
        TracePacket packet = startPacket();
        TrackEvent event = packet.setTrackEvent();
        event.setType(TrackEvent.Type.TYPE_SLICE_END);
        event.setTrackUuid(track.uuid());
        writer.finishTracePacket();
    }

    /** A slice of known start and duration: a begin and an end written back to back. */
    public void completeSlice(Category category, Track track, InternedName name, long startNanos, long durationNanos) {
        if (!category.isEnabled()) {
            return;
        }
        if (durationNanos < 0) {
            throw new IllegalArgumentException("a slice cannot last " + durationNanos + " ns");
        }
        startEvent(category, track, name, null, TrackEvent.Type.TYPE_SLICE_BEGIN, startNanos);
        writer.finishTracePacket();
        TracePacket end = startPacket(startNanos + durationNanos);
        TrackEvent event = end.setTrackEvent();
        event.setType(TrackEvent.Type.TYPE_SLICE_END);
        event.setTrackUuid(track.uuid());
        writer.finishTracePacket();
    }

    /** An instant event on {@code track}. */
    public void instant(Category category, Track track, InternedName name) {
        if (!category.isEnabled()) {
            return;
        }
        startEvent(category, track, name, null, TrackEvent.Type.TYPE_INSTANT);
        writer.finishTracePacket();
    }

    /** An integer value on a counter track. */
    public void counter(Track track, long value) {
        requireCounter(track);
        counterEvent(track).setCounterValue(value);
        writer.finishTracePacket();
    }

    /** A floating-point value on a counter track. */
    public void counter(Track track, double value) {
        requireCounter(track);
        counterEvent(track).setDoubleCounterValue(value);
        writer.finishTracePacket();
    }

    /** Flushes the underlying writer. */
    public void flush() {
        writer.flush();
    }

    @Override
    public void close() {
        writer.close();
        arena.close();
    }

    // ---- internals ----

    private long finishBegin(Track track) {
        writer.finishTracePacket();
        openSlices = ensure(openSlices, track.index);
        int depth = ++openSlices[track.index];
        return token(track, depth);
    }

    private static long token(Track track, int depth) {
        return ((long) track.index << 32) | depth;
    }

    private TrackEvent counterEvent(Track track) {
        TracePacket packet = startPacketDescribing(track, now());
        TrackEvent event = packet.setTrackEvent();
        event.setType(TrackEvent.Type.TYPE_COUNTER);
        event.setTrackUuid(track.uuid());
        return event;
    }

    private TrackEvent startEvent(Category category, Track track, InternedName name, InternedName argument, int type) {
        return startEvent(category, track, name, argument, type, now());
    }

    /** Writes what the event needs first (state reset, descriptors, interned names), then starts it. */
    private TrackEvent startEvent(Category category, Track track, InternedName name, InternedName argument,
                                  int type, long timestamp) {
        TracePacket packet = startPacketDescribing(track, timestamp);
        boolean newCategory = intern(category);
        boolean newName = intern(name);
        boolean newArgument = argument != null && internAnnotation(argument);
        if (newCategory || newName || newArgument) {
            InternedData interned = packet.setInternedData();
            if (newCategory) {
                var entry = interned.addEventCategories();
                entry.setIid(categoryIids[category.index]);
                entry.setName(category.name());
            }
            if (newName) {
                var entry = interned.addEventNames();
                entry.setIid(nameIids[name.index]);
                entry.setName(name.name());
            }
            if (newArgument) {
                var entry = interned.addDebugAnnotationNames();
                entry.setIid(annotationIids[argument.index]);
                entry.setName(argument.name());
            }
        }
        TrackEvent event = packet.setTrackEvent();
        event.setType(type);
        event.setTrackUuid(track.uuid());
        event.addCategoryIids(categoryIids[category.index]);
        event.setNameIid(nameIids[name.index]);
        return event;
    }

    private TracePacket startPacketDescribing(Track track, long timestamp) {
        checkForDrops();
        describe(track);
        return startPacket(timestamp);
    }

    private TracePacket startPacket() {
        checkForDrops();
        return startPacket(now());
    }

    private TracePacket startPacket(long timestamp) {
        TracePacket packet = writer.newTracePacket();
        packet.setTimestamp(timestamp);
        int flags = TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE;
        if (!stateCleared) {
            flags |= TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED;
            stateCleared = true;
        }
        packet.setSequenceFlags(flags);
        if (firstPacket) {
            packet.setFirstPacketOnSequence(true);
            firstPacket = false;
        }
        return packet;
    }

    private void describe(Track track) {
        if (track.index < described.length && described[track.index]) {
            return;
        }
        if (track.parent() != null) {
            describe(track.parent());
        }
        TracePacket packet = writer.newTracePacket();
        if (!stateCleared) {
            packet.setSequenceFlags(TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED);
            stateCleared = true;
        }
        if (firstPacket) {
            packet.setFirstPacketOnSequence(true);
            firstPacket = false;
        }
        track.describe(packet.setTrackDescriptor());
        writer.finishTracePacket();
        described = ensure(described, track.index);
        described[track.index] = true;
    }

    /** Gives {@code category} an id on this sequence; true if it is new (its name must be written). */
    private boolean intern(Category category) {
        categoryIids = ensure(categoryIids, category.index);
        if (categoryIids[category.index] != 0) {
            return false;
        }
        categoryIids[category.index] = nextIid++;
        return true;
    }

    private boolean intern(InternedName name) {
        nameIids = ensure(nameIids, name.index);
        if (nameIids[name.index] != 0) {
            return false;
        }
        nameIids[name.index] = nextIid++;
        return true;
    }

    private boolean internAnnotation(InternedName name) {
        annotationIids = ensure(annotationIids, name.index);
        if (annotationIids[name.index] != 0) {
            return false;
        }
        annotationIids[name.index] = nextIid++;
        return true;
    }

    /** Starts the sequence's state again if the writer dropped anything since the last event. */
    private void checkForDrops() {
        long drops = writer.packetsDropped() + writer.fragmentsDropped();
        if (drops != dropsSeen) {
            dropsSeen = drops;
            Arrays.fill(nameIids, 0);
            Arrays.fill(annotationIids, 0);
            Arrays.fill(categoryIids, 0);
            Arrays.fill(described, false);
            nextIid = 1;
            stateCleared = false;
        }
    }

    private long now() {
        return Native.clockGetTimeNanos(Native.CLOCK_BOOTTIME, clockScratch);
    }

    private static void requireCounter(Track track) {
        if (!track.isCounter()) {
            throw new IllegalArgumentException("counter values go on a counter track (Track.counter)");
        }
    }

    private static long[] ensure(long[] array, int index) {
        return index < array.length ? array : Arrays.copyOf(array, Math.max(index + 1, array.length * 2));
    }

    private static int[] ensure(int[] array, int index) {
        return index < array.length ? array : Arrays.copyOf(array, Math.max(index + 1, array.length * 2));
    }

    private static boolean[] ensure(boolean[] array, int index) {
        return index < array.length ? array : Arrays.copyOf(array, Math.max(index + 1, array.length * 2));
    }

    private static void addFlows(TrackEvent event, long flowId, long terminatingFlowId) {
        if (flowId != 0) {
            event.addFlowIds(flowId);
        }
        if (terminatingFlowId != 0) {
            event.addTerminatingFlowIds(terminatingFlowId);
        }
    }
}
