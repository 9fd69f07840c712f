package dev.ffmtrace.jvm;

import dev.ffmtrace.perfetto.protos.BuiltinClock;
import dev.ffmtrace.perfetto.protos.DebugAnnotation;
import dev.ffmtrace.perfetto.protos.InternedData;
import dev.ffmtrace.perfetto.protos.PerfSample;
import dev.ffmtrace.perfetto.protos.Profiling;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TrackDescriptor;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.protozero.ProtoWire;
import dev.ffmtrace.tracing.trackevent.TracePacketSink;
import dev.ffmtrace.tracing.util.LongMap;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes the JVM's packets on one sequence: track descriptors, slices, instants and
 * counters as TrackEvents, CPU samples as {@code PerfSample}s, and whatever raw packet a
 * caller builds ({@link #packet}). Timestamps are CLOCK_REALTIME nanoseconds, JFR's own
 * clock, named once in the sequence's {@code trace_packet_defaults}: a live session's
 * clock snapshots, or the converter's, move them onto the trace's timeline.
 *
 * <p>Names, annotation names, frames and callstacks are interned on the sequence; the
 * entries new to a packet are collected before it opens and written in its
 * {@code interned_data}. When the sink's incremental-state epoch moves, everything is
 * interned and described again after a packet that clears the state.
 */
final class JvmPacketWriter {
    private static final int REALTIME = BuiltinClock.BUILTIN_CLOCK_REALTIME.number();
    private static final int CLEARED = TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED.number();
    private static final int NEEDS_STATE = TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE.number();
    private static final long TYPE_TAG = ProtoWire.makeTag(TrackEvent.TYPE_FIELD_NUMBER, ProtoWire.WIRE_TYPE_VARINT);
    /** Room before a hand-encoded TrackEvent for its packet's timestamp, flags and the event's own tag and length. */
    private static final int PACKET_HEAD_ROOM = 32;
    private static final long TIMESTAMP_TAG =
            ProtoWire.makeTag(TracePacket.TIMESTAMP_FIELD_NUMBER, ProtoWire.WIRE_TYPE_VARINT);
    private static final long SEQUENCE_FLAGS_TAG =
            ProtoWire.makeTag(TracePacket.SEQUENCE_FLAGS_FIELD_NUMBER, ProtoWire.WIRE_TYPE_VARINT);
    private static final long TRACK_EVENT_TAG =
            ProtoWire.makeTag(TracePacket.TRACK_EVENT_FIELD_NUMBER, ProtoWire.WIRE_TYPE_LENGTH_DELIMITED);
    private static final long TRACK_UUID_TAG =
            ProtoWire.makeTag(TrackEvent.TRACK_UUID_FIELD_NUMBER, ProtoWire.WIRE_TYPE_VARINT);
    private static final long NAME_IID_TAG = ProtoWire.makeTag(TrackEvent.NAME_IID_FIELD_NUMBER, ProtoWire.WIRE_TYPE_VARINT);
    private static final long FLOW_IDS_TAG = ProtoWire.makeTag(TrackEvent.FLOW_IDS_FIELD_NUMBER, ProtoWire.WIRE_TYPE_FIXED64);
    private static final long TERMINATING_FLOW_IDS_TAG =
            ProtoWire.makeTag(TrackEvent.TERMINATING_FLOW_IDS_FIELD_NUMBER, ProtoWire.WIRE_TYPE_FIXED64);
    private static final long DEBUG_ANNOTATIONS_TAG =
            ProtoWire.makeTag(TrackEvent.DEBUG_ANNOTATIONS_FIELD_NUMBER, ProtoWire.WIRE_TYPE_LENGTH_DELIMITED);
    // An annotation's own tags are all one byte: its field ids are below 16.
    private static final long ANNOTATION_NAME_IID_TAG =
            ProtoWire.makeTag(DebugAnnotation.NAME_IID_FIELD_NUMBER, ProtoWire.WIRE_TYPE_VARINT);
    private static final long INT_VALUE_TAG = ProtoWire.makeTag(DebugAnnotation.INT_VALUE_FIELD_NUMBER, ProtoWire.WIRE_TYPE_VARINT);
    private static final long DOUBLE_VALUE_TAG =
            ProtoWire.makeTag(DebugAnnotation.DOUBLE_VALUE_FIELD_NUMBER, ProtoWire.WIRE_TYPE_FIXED64);
    private static final long BOOL_VALUE_TAG =
            ProtoWire.makeTag(DebugAnnotation.BOOL_VALUE_FIELD_NUMBER, ProtoWire.WIRE_TYPE_VARINT);
    private static final long STRING_VALUE_TAG =
            ProtoWire.makeTag(DebugAnnotation.STRING_VALUE_FIELD_NUMBER, ProtoWire.WIRE_TYPE_LENGTH_DELIMITED);

    /**
     * Keys interned on the sequence, numbered from 1, and those a packet has yet to write.
     * The same few names come with every event of a type, as the same string objects: a
     * small table of the last ones by identity (slotted by the string's cached hash)
     * answers them before the map, whose lookup (equals, unboxing) was a fifth of a
     * conversion's time (JfrConversionBenchmark). Keys whose hash is computed each time
     * (stacks) go straight to the map.
     */
    private final class Interner<K> {
        private static final int RECENT = 16;
        private final Map<K, Long> ids = new HashMap<>();
        private final List<K> pending = new ArrayList<>();
        private final Object[] recentKeys;
        private final long[] recentIids = new long[RECENT];

        Interner(boolean recent) {
            this.recentKeys = recent ? new Object[RECENT] : null;
        }

        long iid(K key) {
            int slot = 0;
            if (recentKeys != null) {
                slot = key.hashCode() & (RECENT - 1);
                if (recentKeys[slot] == key) {
                    return recentIids[slot];
                }
            }
            Long iid = ids.get(key);
            if (iid == null) {
                iid = (long) ids.size() + 1;
                ids.put(key, iid);
                pending.add(key);
                anyPending = true;
            }
            if (recentKeys != null) {
                recentKeys[slot] = key;
                recentIids[slot] = iid;
            }
            return iid;
        }

        void reset() {
            ids.clear();
            pending.clear();
            if (recentKeys != null) {
                Arrays.fill(recentKeys, null);
            }
        }
    }

    private final TracePacketSink sink;
    /** Tracks described on the sequence, by uuid: a lookup with no hashing of the track's object (two a slice). */
    private final LongMap<JvmTrack> described = new LongMap<>();
    private final Interner<String> eventNames = new Interner<>(true);
    private final Interner<String> annotationNames = new Interner<>(true);
    private final Interner<String> functionNames = new Interner<>(true);
    private final Interner<String> mappingPaths = new Interner<>(true);
    private final Interner<String> mappings = new Interner<>(true);
    private final Interner<JavaFrame> frames = new Interner<>(false);
    private final Interner<List<Long>> callstacks = new Interner<>(false);
    private final List<Interner<?>> tables = List.of(eventNames, annotationNames, functionNames, mappingPaths,
            mappings, frames, callstacks);
    /** The TrackEvent being encoded by hand ({@link #event}), after room for its packet's first fields. */
    private byte[] body = new byte[256];
    /** Whether some table has entries no packet wrote yet. */
    private boolean anyPending;
    /** The current event's annotation name iids, found before its packet opens. */
    private long[] argNameIids = new long[8];
    private boolean started;
    private long epoch;

    JvmPacketWriter(TracePacketSink sink) {
        this.sink = sink;
    }

    void begin(long timestamp, JvmTrack track, String name, Args args) {
        event(timestamp, track, TrackEvent.Type.TYPE_SLICE_BEGIN, name, args, 0, 0);
    }

    /** Ends the innermost slice open on {@code track}. */
    void end(long timestamp, JvmTrack track) {
        event(timestamp, track, TrackEvent.Type.TYPE_SLICE_END, null, null, 0, 0);
    }

    /** An instant on {@code track}, with {@code flowId} leaving it and {@code terminatingFlowId} ending there (0: none). */
    void instant(long timestamp, JvmTrack track, String name, Args args, long flowId, long terminatingFlowId) {
        event(timestamp, track, TrackEvent.Type.TYPE_INSTANT, name, args, flowId, terminatingFlowId);
    }

    void counter(long timestamp, JvmTrack track, long value) {
        TrackEvent event = counterEvent(timestamp, track);
        event.setCounterValue(value);
        sink.finishTracePacket();
    }

    void counter(long timestamp, JvmTrack track, double value) {
        TrackEvent event = counterEvent(timestamp, track);
        event.setDoubleCounterValue(value);
        sink.finishTracePacket();
    }

    /** A CPU sample of thread {@code tid} whose stack is {@code rootFirst}. */
    void sample(long timestamp, long pid, long tid, List<JavaFrame> rootFirst) {
        ensureState();
        List<Long> frameIds = new ArrayList<>(rootFirst.size());
        for (JavaFrame frame : rootFirst) {
            frameIds.add(internFrame(frame));
        }
        // The list is this call's own and never changes after: it can be the key as it is.
        long callstack = callstacks.iid(frameIds);
        TracePacket packet = open(timestamp);
        PerfSample sample = packet.setPerfSample();
        sample.setPid((int) pid);
        sample.setTid((int) tid);
        sample.setCpuMode(Profiling.CpuMode.MODE_USER);
        sample.setCallstackIid(callstack);
        sink.finishTracePacket();
    }

    /**
     * Opens a packet at {@code timestamp} for the caller to fill with a message of its own
     * (one that interns nothing on the sequence); {@link #finish()} closes it.
     */
    TracePacket packet(long timestamp) {
        ensureState();
        TracePacket packet = sink.newTracePacket();
        packet.setTimestamp(timestamp);
        return packet;
    }

    void finish() {
        sink.finishTracePacket();
    }

    /** Makes what was written readable (commits it, over a TraceWriter). */
    void flush() {
        sink.flush();
    }

    /** Writes {@code track}'s descriptor, its parents' first, unless the sequence has. */
    void describe(JvmTrack track) {
        ensureState();
        describeOnce(track);
    }

    private void describeOnce(JvmTrack track) {
        if (described.get(track.uuid()) != null) {
            return;
        }
        if (track.parent() != null) {
            describeOnce(track.parent());
        }
        described.put(track.uuid(), track);
        TrackDescriptor descriptor = sink.newTracePacket().setTrackDescriptor();
        descriptor.setUuid(track.uuid());
        if (track.parent() != null) {
            descriptor.setParentUuid(track.parent().uuid());
        }
        switch (track.kind()) {
            case PROCESS -> {
                var process = descriptor.setProcess();
                process.setPid((int) track.pid());
                process.setProcessName(track.name());
            }
            case THREAD -> {
                var thread = descriptor.setThread();
                thread.setPid((int) track.pid());
                thread.setTid(track.tid());
                thread.setThreadName(track.name());
            }
            case NAMED -> descriptor.setName(track.name());
            case COUNTER -> {
                descriptor.setName(track.name());
                descriptor.setCounter().setUnit(track.unit());
            }
        }
        sink.finishTracePacket();
    }

    private void event(long timestamp, JvmTrack track, TrackEvent.Type type, String name, Args args,
                       long flowId, long terminatingFlowId) {
        ensureState();
        describeOnce(track);
        long nameIid = name == null ? 0 : eventNames.iid(name);
        int count = args == null ? 0 : args.size();
        if (argNameIids.length < count) {
            argNameIids = new long[count];
        }
        for (int i = 0; i < count; i++) {
            argNameIids[i] = annotationNames.iid(args.name(i));
        }
        int n = PACKET_HEAD_ROOM;
        n = varIntField(n, TYPE_TAG, type.number());
        n = varIntField(n, TRACK_UUID_TAG, track.uuid());
        if (nameIid != 0) {
            n = varIntField(n, NAME_IID_TAG, nameIid);
        }
        if (flowId != 0) {
            n = fixed64Field(n, FLOW_IDS_TAG, flowId);
        }
        if (terminatingFlowId != 0) {
            n = fixed64Field(n, TERMINATING_FLOW_IDS_TAG, terminatingFlowId);
        }
        for (int i = 0; i < count; i++) {
            n = annotation(n, argNameIids[i], args, i);
        }
        if (anyPending) {
            open(timestamp).appendBytes(TracePacket.TRACK_EVENT_FIELD_NUMBER, body, PACKET_HEAD_ROOM,
                    n - PACKET_HEAD_ROOM);
            sink.finishTracePacket();
        } else {
            int start = packetHead(timestamp, n - PACKET_HEAD_ROOM);
            sink.writeEncodedPacket(body, start, n - start);
        }
    }

    /**
     * Writes, just before the TrackEvent encoded at {@link #PACKET_HEAD_ROOM}, the fields
     * {@link #open} would give its packet first (timestamp, sequence flags) and the
     * TrackEvent's own tag and length, so that the packet is appended in one piece, the
     * same bytes as field by field. Returns where the packet's bytes start.
     */
    private int packetHead(long timestamp, int eventSize) {
        int headSize = 1 + ProtoWire.varIntSize(timestamp) + 2 + 1 + ProtoWire.varIntSize(eventSize);
        int start = PACKET_HEAD_ROOM - headSize;
        int at = ProtoWire.writeVarInt(body, start, TIMESTAMP_TAG);
        at = ProtoWire.writeVarInt(body, at, timestamp);
        at = ProtoWire.writeVarInt(body, at, SEQUENCE_FLAGS_TAG);
        at = ProtoWire.writeVarInt(body, at, NEEDS_STATE);
        at = ProtoWire.writeVarInt(body, at, TRACK_EVENT_TAG);
        ProtoWire.writeVarInt(body, at, eventSize);
        return start;
    }

    /*
     * The TrackEvent of a slice or an instant is encoded by hand into one byte array and
     * appended to its packet as one field, as TrackEventWriter does for its simple events:
     * the event and each annotation as nested messages cost more than the JFR event's
     * reading (JfrConversionBenchmark). Canonical protobuf: the same bytes protozero gives.
     */

    private int varIntField(int n, long tag, long value) {
        int at = ProtoWire.writeVarInt(body, room(n, 2 * ProtoWire.MAX_VARINT_SIZE), tag);
        return ProtoWire.writeVarInt(body, at, value);
    }

    private int fixed64Field(int n, long tag, long value) {
        int at = ProtoWire.writeVarInt(body, room(n, ProtoWire.MAX_VARINT_SIZE + Long.BYTES), tag);
        for (int i = 0; i < Long.BYTES; i++) {
            body[at++] = (byte) (value >>> (8 * i));
        }
        return at;
    }

    /** A {@code DebugAnnotation} (name iid and the value of {@code args}' entry {@code i}) at {@code n}. */
    private int annotation(int n, long nameIid, Args args, int i) {
        byte[] string = null;
        int valueSize = switch (args.kind(i)) {
            case LONG -> 1 + ProtoWire.varIntSize(args.longValue(i));
            case DOUBLE -> 1 + Long.BYTES;
            case BOOLEAN -> 2;
            case STRING -> {
                string = args.stringValue(i).getBytes(StandardCharsets.UTF_8);
                yield 1 + ProtoWire.varIntSize(string.length) + string.length;
            }
        };
        int size = 1 + ProtoWire.varIntSize(nameIid) + valueSize;
        int at = ProtoWire.writeVarInt(body, room(n, 1 + ProtoWire.MAX_VARINT_SIZE + size), DEBUG_ANNOTATIONS_TAG);
        at = ProtoWire.writeVarInt(body, at, size);
        at = varIntField(at, ANNOTATION_NAME_IID_TAG, nameIid);
        return switch (args.kind(i)) {
            case LONG -> varIntField(at, INT_VALUE_TAG, args.longValue(i));
            case DOUBLE -> fixed64Field(at, DOUBLE_VALUE_TAG, Double.doubleToRawLongBits(args.doubleValue(i)));
            case BOOLEAN -> varIntField(at, BOOL_VALUE_TAG, args.booleanValue(i) ? 1 : 0);
            case STRING -> {
                at = varIntField(at, STRING_VALUE_TAG, string.length);
                System.arraycopy(string, 0, body, at, string.length);
                yield at + string.length;
            }
        };
    }

    /** Makes room for {@code bytes} more at {@code n} in {@link #body}; returns {@code n}. */
    private int room(int n, int bytes) {
        if (body.length - n < bytes) {
            body = Arrays.copyOf(body, Math.max(body.length * 2, n + bytes));
        }
        return n;
    }

    private TrackEvent counterEvent(long timestamp, JvmTrack track) {
        ensureState();
        describeOnce(track);
        TrackEvent event = open(timestamp).setTrackEvent();
        event.setType(TrackEvent.Type.TYPE_COUNTER);
        event.setTrackUuid(track.uuid());
        return event;
    }

    private long internFrame(JavaFrame frame) {
        functionNames.iid(frame.function());
        if (!mappings.ids.containsKey(frame.mapping())) {
            mappingPaths.iid(frame.mapping());
            mappings.iid(frame.mapping());
        }
        return frames.iid(frame);
    }

    /** A packet at {@code timestamp} needing the sequence's state, with the entries interned since the last. */
    private TracePacket open(long timestamp) {
        TracePacket packet = sink.newTracePacket();
        packet.setTimestamp(timestamp);
        packet.setSequenceFlags(NEEDS_STATE);
        if (anyPending) {
            writeInterned(packet.setInternedData());
        }
        return packet;
    }

    private void writeInterned(InternedData data) {
        for (String name : eventNames.pending) {
            var entry = data.addEventNames();
            entry.setIid(eventNames.ids.get(name));
            entry.setName(name);
        }
        for (String name : annotationNames.pending) {
            var entry = data.addDebugAnnotationNames();
            entry.setIid(annotationNames.ids.get(name));
            entry.setName(name);
        }
        for (String name : functionNames.pending) {
            var entry = data.addFunctionNames();
            entry.setIid(functionNames.ids.get(name));
            entry.setStr(name.getBytes(StandardCharsets.UTF_8));
        }
        for (String path : mappingPaths.pending) {
            var entry = data.addMappingPaths();
            entry.setIid(mappingPaths.ids.get(path));
            entry.setStr(path.getBytes(StandardCharsets.UTF_8));
        }
        for (String path : mappings.pending) {
            var entry = data.addMappings();
            entry.setIid(mappings.ids.get(path));
            entry.addPathStringIds(mappingPaths.ids.get(path));
        }
        for (JavaFrame frame : frames.pending) {
            var entry = data.addFrames();
            entry.setIid(frames.ids.get(frame));
            entry.setFunctionNameId(functionNames.ids.get(frame.function()));
            entry.setMappingId(mappings.ids.get(frame.mapping()));
            entry.setRelPc(frame.bytecodeIndex());
            if (frame.line() > 0) {
                entry.setLineNumber(frame.line());
            }
        }
        for (List<Long> stack : callstacks.pending) {
            var entry = data.addCallstacks();
            entry.setIid(callstacks.ids.get(stack));
            for (long frame : stack) {
                entry.addFrameIds(frame);
            }
        }
        tables.forEach(table -> table.pending.clear());
        anyPending = false;
    }

    /**
     * Starts the sequence, or starts its state again when the sink says packets written
     * before may be lost: a packet clearing the state and naming the clock, then every
     * name, frame and track anew.
     */
    private void ensureState() {
        long now = sink.incrementalStateEpoch();
        if (started && now == epoch) {
            return;
        }
        tables.forEach(Interner::reset);
        anyPending = false;
        described.clear();
        TracePacket packet = sink.newTracePacket();
        packet.setSequenceFlags(CLEARED);
        if (!started) {
            packet.setFirstPacketOnSequence(true);
        }
        packet.setTracePacketDefaults().setTimestampClockId(REALTIME);
        sink.finishTracePacket();
        started = true;
        epoch = now;
    }
}
