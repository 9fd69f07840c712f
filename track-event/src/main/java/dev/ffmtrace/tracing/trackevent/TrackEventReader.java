package dev.ffmtrace.tracing.trackevent;

import dev.ffmtrace.perfetto.protos.BuiltinClock;
import dev.ffmtrace.perfetto.protos.ClockSnapshot;
import dev.ffmtrace.perfetto.protos.DebugAnnotation;
import dev.ffmtrace.perfetto.protos.DebugAnnotationName;
import dev.ffmtrace.perfetto.protos.EventCategory;
import dev.ffmtrace.perfetto.protos.EventName;
import dev.ffmtrace.perfetto.protos.InternedData;
import dev.ffmtrace.perfetto.protos.ProcessDescriptor;
import dev.ffmtrace.perfetto.protos.ThreadDescriptor;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TracePacketDefaults;
import dev.ffmtrace.perfetto.protos.TrackDescriptor;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.perfetto.protos.TrackEventDefaults;
import dev.ffmtrace.protozero.ProtoField;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.protozero.RepeatedScalarIterator;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Decodes the tracks and events of a trace file the way Perfetto's trace processor reads
 * them, so that traces saying the same thing decode equal however they encode it. Per
 * sequence ({@code trusted_packet_sequence_id}) it resolves interned names,
 * {@code trace_packet_defaults} (the default track and timestamp clock) and incremental
 * clocks started by a clock snapshot (timestamps become absolute on the clock the
 * snapshot ties them to). A packet that needs incremental state its sequence does not
 * have (none was cleared yet, or data was lost since) is counted as undecodable and
 * skipped, as the trace processor skips it.
 *
 * <p>Meant for tests and tools, not the tracing fast path: it allocates freely.
 */
public final class TrackEventReader {
    /** Perfetto's default trace clock: where a timestamp with no clock id lies. */
    public static final int DEFAULT_CLOCK_ID = BuiltinClock.BUILTIN_CLOCK_BOOTTIME.number();

    /** A track descriptor's content. {@code parentUuid} is 0 for none; absent strings are null. */
    public record TrackInfo(long uuid, long parentUuid, String name, int pid, long tid, String processName,
                            String threadName, boolean counter, int childOrdering, Integer siblingOrderRank) {
    }

    /**
     * One TrackEvent with everything resolved. {@code trackUuid} comes from the packet's
     * defaults when the event has none; {@code clockId} and {@code timestamp} are absolute;
     * {@code type} is the number as written, also one a newer .proto added; debug
     * annotations read {@code name=value}.
     */
    public record Event(int clockId, long timestamp, int type, long trackUuid, String name, List<String> categories,
                        Long counterValue, Double doubleCounterValue, List<Long> flowIds,
                        List<Long> terminatingFlowIds, List<String> debugAnnotations) {
        /** {@link #type()} as the enum; null for a number this .proto does not define. */
        public TrackEvent.Type typeEnum() {
            return TrackEvent.Type.forNumber(type);
        }
    }

    /**
     * A trace's decoded content.
     *
     * @param tracks descriptors by uuid, in the order first seen
     * @param events events in trace order
     * @param lossMarkers packets flagged {@code previous_packet_dropped} after their sequence's first
     * @param undecodable packets skipped for want of incremental state
     */
    public record Decoded(Map<Long, TrackInfo> tracks, List<Event> events, long lossMarkers, long undecodable) {
    }

    private static final class Sequence {
        final Map<Long, String> eventNames = new HashMap<>();
        final Map<Long, String> categories = new HashMap<>();
        final Map<Long, String> annotationNames = new HashMap<>();
        /** Incremental clock id to {base clock id, current value on the base clock}. */
        final Map<Integer, long[]> incrementalClocks = new HashMap<>();
        boolean stateValid;
        int defaultClockId;
        long defaultTrackUuid;

        void clear() {
            eventNames.clear();
            categories.clear();
            annotationNames.clear();
            incrementalClocks.clear();
            defaultClockId = 0;
            defaultTrackUuid = 0;
            stateValid = true;
        }
    }

    private final Map<Integer, Sequence> sequences = new HashMap<>();
    private final Map<Long, TrackInfo> tracks = new LinkedHashMap<>();
    private final List<Event> events = new ArrayList<>();
    private long lossMarkers;
    private long undecodable;

    private final TracePacket.Decoder packet = new TracePacket.Decoder();
    private final TrackEvent.Decoder event = new TrackEvent.Decoder();
    private final TrackDescriptor.Decoder descriptor = new TrackDescriptor.Decoder();
    private final InternedData.Decoder interned = new InternedData.Decoder();
    private final TracePacketDefaults.Decoder defaults = new TracePacketDefaults.Decoder();
    private final TrackEventDefaults.Decoder trackDefaults = new TrackEventDefaults.Decoder();
    private final ClockSnapshot.Decoder snapshot = new ClockSnapshot.Decoder();

    private TrackEventReader() {
    }

    /**
     * Decodes a {@code Trace}.
     *
     * @throws IllegalArgumentException if the bytes are not a well-formed trace
     */
    public static Decoded read(MemorySegment trace) {
        TrackEventReader reader = new TrackEventReader();
        Trace.Decoder decoder = new Trace.Decoder();
        decoder.reset(trace);
        RepeatedFieldIterator packets = decoder.packet(new RepeatedFieldIterator());
        while (packets.next()) {
            reader.readPacket(packets.field());
        }
        if (decoder.hasError()) {
            throw new IllegalArgumentException("not a well-formed trace: " + decoder.status());
        }
        return new Decoded(reader.tracks, reader.events, reader.lossMarkers, reader.undecodable);
    }

    private void readPacket(ProtoField bytes) {
        packet.reset(bytes);
        if (packet.hasError()) {
            throw new IllegalArgumentException("a trace packet is not well-formed: " + packet.status());
        }
        Sequence sequence = sequences.get(packet.trustedPacketSequenceId());
        boolean seen = sequence != null;
        if (!seen) {
            sequence = new Sequence();
            sequences.put(packet.trustedPacketSequenceId(), sequence);
        }
        if (packet.previousPacketDropped() != 0) {
            // A buffer that cannot know what came before a sequence's first packet flags it
            // (traced's does): a loss only after a packet of the sequence, as Perfetto's
            // trace processor counts it.
            if (seen) {
                lossMarkers++;
            }
            sequence.stateValid = false;
        }
        if ((packet.sequenceFlags() & TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED.number()) != 0
                || packet.incrementalStateCleared()) {
            sequence.clear();
        }
        if ((packet.sequenceFlags() & TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE.number()) != 0
                && !sequence.stateValid) {
            undecodable++;
            return;
        }
        if (packet.tracePacketDefaults(defaults)) {
            sequence.defaultClockId = defaults.timestampClockId();
            sequence.defaultTrackUuid = defaults.trackEventDefaults(trackDefaults) ? trackDefaults.trackUuid() : 0;
        }
        if (packet.clockSnapshot(snapshot)) {
            readClockSnapshot(sequence);
        }
        if (packet.internedData(interned)) {
            readInternedData(sequence);
        }
        if (packet.trackDescriptor(descriptor)) {
            readDescriptor();
        } else if (packet.trackEvent(event)) {
            readEvent(sequence);
        }
    }

    private void readClockSnapshot(Sequence sequence) {
        List<long[]> clocks = new ArrayList<>();
        RepeatedFieldIterator it = snapshot.clocks(new RepeatedFieldIterator());
        ClockSnapshot.Clock.Decoder clock = new ClockSnapshot.Clock.Decoder();
        int baseId = 0;
        long baseTimestamp = 0;
        while (it.next()) {
            clock.reset(it.field());
            clocks.add(new long[] {clock.clockId(), clock.timestamp(), clock.isIncremental() ? 1 : 0});
            if (!clock.isIncremental() && baseId == 0) {
                baseId = clock.clockId();
                baseTimestamp = clock.timestamp();
            }
        }
        for (long[] entry : clocks) {
            if (entry[2] == 1 && baseId != 0) {
                sequence.incrementalClocks.put((int) entry[0], new long[] {baseId, baseTimestamp});
            }
        }
    }

    private void readInternedData(Sequence sequence) {
        RepeatedFieldIterator it = interned.eventNames(new RepeatedFieldIterator());
        EventName.Decoder name = new EventName.Decoder();
        while (it.next()) {
            name.reset(it.field());
            sequence.eventNames.put(name.iid(), name.name());
        }
        it = interned.eventCategories(new RepeatedFieldIterator());
        EventCategory.Decoder category = new EventCategory.Decoder();
        while (it.next()) {
            category.reset(it.field());
            sequence.categories.put(category.iid(), category.name());
        }
        it = interned.debugAnnotationNames(new RepeatedFieldIterator());
        DebugAnnotationName.Decoder annotationName = new DebugAnnotationName.Decoder();
        while (it.next()) {
            annotationName.reset(it.field());
            sequence.annotationNames.put(annotationName.iid(), annotationName.name());
        }
    }

    private void readDescriptor() {
        ProcessDescriptor.Decoder process = new ProcessDescriptor.Decoder();
        ThreadDescriptor.Decoder thread = new ThreadDescriptor.Decoder();
        boolean isProcess = descriptor.process(process);
        boolean isThread = descriptor.thread(thread);
        int pid = isThread ? thread.pid() : isProcess ? process.pid() : 0;
        tracks.putIfAbsent(descriptor.uuid(), new TrackInfo(descriptor.uuid(), descriptor.parentUuid(),
                descriptor.hasName() ? descriptor.name() : null, pid, isThread ? thread.tid() : 0,
                isProcess && process.hasProcessName() ? process.processName() : null,
                isThread && thread.hasThreadName() ? thread.threadName() : null, descriptor.hasCounter(),
                descriptor.childOrdering(), descriptor.hasSiblingOrderRank() ? descriptor.siblingOrderRank() : null));
    }

    private void readEvent(Sequence sequence) {
        int clockId = packet.hasTimestampClockId() ? packet.timestampClockId()
                : sequence.defaultClockId != 0 ? sequence.defaultClockId : DEFAULT_CLOCK_ID;
        long timestamp = packet.timestamp();
        long[] incremental = sequence.incrementalClocks.get(clockId);
        if (incremental != null) {
            incremental[1] += timestamp;
            clockId = (int) incremental[0];
            timestamp = incremental[1];
        }
        String name = event.hasName() ? event.name()
                : event.hasNameIid() ? sequence.eventNames.get(event.nameIid()) : null;
        List<String> categories = new ArrayList<>();
        RepeatedScalarIterator iids = event.categoryIids(new RepeatedScalarIterator());
        while (iids.next()) {
            categories.add(sequence.categories.get(iids.value()));
        }
        RepeatedFieldIterator names = event.categories(new RepeatedFieldIterator());
        while (names.next()) {
            categories.add(names.field().asString());
        }
        events.add(new Event(clockId, timestamp, event.type(),
                event.hasTrackUuid() ? event.trackUuid() : sequence.defaultTrackUuid, name, categories,
                event.hasCounterValue() ? event.counterValue() : null,
                event.hasDoubleCounterValue() ? event.doubleCounterValue() : null,
                values(event.flowIds(new RepeatedScalarIterator())),
                values(event.terminatingFlowIds(new RepeatedScalarIterator())), debugAnnotations(sequence)));
    }

    private List<String> debugAnnotations(Sequence sequence) {
        List<String> annotations = new ArrayList<>();
        RepeatedFieldIterator it = event.debugAnnotations(new RepeatedFieldIterator());
        DebugAnnotation.Decoder annotation = new DebugAnnotation.Decoder();
        while (it.next()) {
            annotation.reset(it.field());
            String name = annotation.hasName() ? annotation.name()
                    : sequence.annotationNames.get(annotation.nameIid());
            String value = annotation.hasIntValue() ? Long.toString(annotation.intValue())
                    : annotation.hasUintValue() ? Long.toUnsignedString(annotation.uintValue())
                    : annotation.hasBoolValue() ? Boolean.toString(annotation.boolValue())
                    : annotation.hasDoubleValue() ? Double.toString(annotation.doubleValue())
                    : annotation.hasStringValue() ? annotation.stringValueValue()
                    : annotation.hasPointerValue() ? "0x" + Long.toHexString(annotation.pointerValue())
                    : "?";
            annotations.add(name + "=" + value);
        }
        return annotations;
    }

    private static List<Long> values(RepeatedScalarIterator it) {
        List<Long> values = new ArrayList<>();
        while (it.next()) {
            values.add(it.value());
        }
        return values;
    }
}
