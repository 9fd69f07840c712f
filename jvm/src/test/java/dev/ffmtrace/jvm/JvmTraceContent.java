package dev.ffmtrace.jvm;

import dev.ffmtrace.perfetto.protos.BuiltinClock;
import dev.ffmtrace.perfetto.protos.Callstack;
import dev.ffmtrace.perfetto.protos.ClockSnapshot;
import dev.ffmtrace.perfetto.protos.Frame;
import dev.ffmtrace.perfetto.protos.InternedData;
import dev.ffmtrace.perfetto.protos.InternedString;
import dev.ffmtrace.perfetto.protos.PerfSample;
import dev.ffmtrace.perfetto.protos.ProfilePacket;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.protozero.RepeatedScalarIterator;
import dev.ffmtrace.tracing.trackevent.TrackEventReader;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A JVM trace decoded as the trace processor reads it: slices paired per track in
 * timestamp order (ties in file order), CPU samples with their frames resolved, and the
 * heap profile's bytes by leaf frame.
 */
record JvmTraceContent(TrackEventReader.Decoded events, List<Slice> slices, List<Sample> samples,
                       Map<String, Long> heapBytesByLeaf) {
    record Slice(long trackUuid, String name, long start, long end, int depth, List<String> annotations) {
        long durationNanos() {
            return end - start;
        }
    }

    /** A CPU sample: the thread and its frames' function names, top first. */
    record Sample(long pid, long tid, List<String> topFirst) {
    }

    static JvmTraceContent decode(byte[] trace) {
        MemorySegment segment = MemorySegment.ofArray(trace);
        TrackEventReader.Decoded decoded = TrackEventReader.read(segment);
        List<Sample> samples = new ArrayList<>();
        Map<String, Long> heap = new HashMap<>();
        readProfiles(segment, samples, heap);
        return new JvmTraceContent(decoded, pairSlices(decoded.events()), samples, heap);
    }

    /**
     * CLOCK_REALTIME minus CLOCK_MONOTONIC, from the trace's first clock snapshot that has
     * both: what moves JFR's timestamps onto the monotonic clock the SDK's events use.
     */
    static long realtimeMinusMonotonic(byte[] trace) {
        Trace.Decoder decoder = new Trace.Decoder();
        decoder.reset(MemorySegment.ofArray(trace));
        RepeatedFieldIterator packets = decoder.packet(new RepeatedFieldIterator());
        TracePacket.Decoder packet = new TracePacket.Decoder();
        ClockSnapshot.Decoder snapshot = new ClockSnapshot.Decoder();
        ClockSnapshot.Clock.Decoder clock = new ClockSnapshot.Clock.Decoder();
        while (packets.next()) {
            packet.reset(packets.field());
            if (!packet.clockSnapshot(snapshot)) {
                continue;
            }
            Map<Integer, Long> clocks = new HashMap<>();
            RepeatedFieldIterator it = snapshot.clocks(new RepeatedFieldIterator());
            while (it.next()) {
                clock.reset(it.field());
                clocks.put(clock.clockId(), clock.timestamp());
            }
            Long realtime = clocks.get(BuiltinClock.BUILTIN_CLOCK_REALTIME.number());
            Long monotonic = clocks.get(BuiltinClock.BUILTIN_CLOCK_MONOTONIC.number());
            if (realtime != null && monotonic != null) {
                return realtime - monotonic;
            }
        }
        throw new AssertionError("no clock snapshot with REALTIME and MONOTONIC");
    }

    /** The tracks named {@code name} by their descriptors (thread tracks by their thread name). */
    List<Long> tracksNamed(String name) {
        return events.tracks().values().stream()
                .filter(t -> name.equals(t.name()) || name.equals(t.threadName()))
                .map(TrackEventReader.TrackInfo::uuid).toList();
    }

    TrackEventReader.TrackInfo track(long uuid) {
        return events.tracks().get(uuid);
    }

    List<Slice> slicesOn(String trackName) {
        List<Long> uuids = tracksNamed(trackName);
        return slices.stream().filter(s -> uuids.contains(s.trackUuid())).toList();
    }

    /** Counter values on the tracks named {@code name}. */
    List<Double> counterValues(String name) {
        List<Long> uuids = tracksNamed(name);
        return events.events().stream().filter(e -> uuids.contains(e.trackUuid())
                        && e.typeEnum() == TrackEvent.Type.TYPE_COUNTER)
                .map(e -> e.counterValue() != null ? e.counterValue().doubleValue() : e.doubleCounterValue())
                .toList();
    }

    private static List<Slice> pairSlices(List<TrackEventReader.Event> events) {
        List<Integer> order = new ArrayList<>();
        for (int i = 0; i < events.size(); i++) {
            order.add(i);
        }
        order.sort(Comparator.comparingLong((Integer i) -> events.get(i).timestamp()).thenComparingInt(i -> i));
        Map<Long, Deque<TrackEventReader.Event>> open = new HashMap<>();
        List<Slice> slices = new ArrayList<>();
        for (int i : order) {
            TrackEventReader.Event event = events.get(i);
            Deque<TrackEventReader.Event> stack = open.computeIfAbsent(event.trackUuid(), k -> new ArrayDeque<>());
            switch (event.typeEnum()) {
                case TYPE_SLICE_BEGIN -> stack.push(event);
                case TYPE_SLICE_END -> {
                    TrackEventReader.Event begin = stack.pop();
                    slices.add(new Slice(event.trackUuid(), begin.name(), begin.timestamp(), event.timestamp(),
                            stack.size(), begin.debugAnnotations()));
                }
                case TYPE_INSTANT -> slices.add(new Slice(event.trackUuid(), event.name(), event.timestamp(),
                        event.timestamp(), stack.size(), event.debugAnnotations()));
                default -> { }
            }
        }
        open.values().forEach(stack -> {
            if (!stack.isEmpty()) {
                throw new AssertionError("slices left open: " + stack);
            }
        });
        return slices;
    }

    private static void readProfiles(MemorySegment trace, List<Sample> samples, Map<String, Long> heap) {
        Map<Long, String> functions = new HashMap<>();
        Map<Long, Long> frameFunctions = new HashMap<>();
        Map<Long, List<Long>> callstacks = new HashMap<>();
        Trace.Decoder decoder = new Trace.Decoder();
        decoder.reset(trace);
        RepeatedFieldIterator packets = decoder.packet(new RepeatedFieldIterator());
        TracePacket.Decoder packet = new TracePacket.Decoder();
        InternedData.Decoder interned = new InternedData.Decoder();
        PerfSample.Decoder sample = new PerfSample.Decoder();
        ProfilePacket.Decoder profile = new ProfilePacket.Decoder();
        while (packets.next()) {
            packet.reset(packets.field());
            if (packet.internedData(interned)) {
                readStrings(interned.functionNames(new RepeatedFieldIterator()), functions);
                readFrames(interned.frames(new RepeatedFieldIterator()), frameFunctions);
                readCallstacks(interned.callstacks(new RepeatedFieldIterator()), callstacks);
            }
            if (packet.perfSample(sample)) {
                List<String> topFirst = new ArrayList<>();
                for (long frame : callstacks.get(sample.callstackIid())) {
                    topFirst.addFirst(functions.get(frameFunctions.get(frame)));
                }
                samples.add(new Sample(sample.pid(), sample.tid(), topFirst));
            }
            if (packet.profilePacket(profile)) {
                readHeapDump(profile, heap);
            }
        }
    }

    /** One ProfilePacket: its own strings, frames and callstacks, then each sample's bytes to its leaf. */
    private static void readHeapDump(ProfilePacket.Decoder profile, Map<String, Long> heap) {
        Map<Long, String> strings = new HashMap<>();
        Map<Long, Long> frameFunctions = new HashMap<>();
        Map<Long, List<Long>> callstacks = new HashMap<>();
        readStrings(profile.strings(new RepeatedFieldIterator()), strings);
        readFrames(profile.frames(new RepeatedFieldIterator()), frameFunctions);
        readCallstacks(profile.callstacks(new RepeatedFieldIterator()), callstacks);
        RepeatedFieldIterator dumps = profile.processDumps(new RepeatedFieldIterator());
        ProfilePacket.ProcessHeapSamples.Decoder dump = new ProfilePacket.ProcessHeapSamples.Decoder();
        ProfilePacket.HeapSample.Decoder heapSample = new ProfilePacket.HeapSample.Decoder();
        while (dumps.next()) {
            dump.reset(dumps.field());
            RepeatedFieldIterator it = dump.samples(new RepeatedFieldIterator());
            while (it.next()) {
                heapSample.reset(it.field());
                List<Long> stack = callstacks.get(heapSample.callstackId());
                String leaf = strings.get(frameFunctions.get(stack.getLast()));
                heap.merge(leaf, heapSample.selfAllocated(), Long::sum);
            }
        }
    }

    private static void readStrings(RepeatedFieldIterator it, Map<Long, String> into) {
        InternedString.Decoder string = new InternedString.Decoder();
        while (it.next()) {
            string.reset(it.field());
            into.put(string.iid(), new String(string.str(), StandardCharsets.UTF_8));
        }
    }

    private static void readFrames(RepeatedFieldIterator it, Map<Long, Long> into) {
        Frame.Decoder frame = new Frame.Decoder();
        while (it.next()) {
            frame.reset(it.field());
            into.put(frame.iid(), frame.functionNameId());
        }
    }

    private static void readCallstacks(RepeatedFieldIterator it, Map<Long, List<Long>> into) {
        Callstack.Decoder callstack = new Callstack.Decoder();
        while (it.next()) {
            callstack.reset(it.field());
            List<Long> frames = new ArrayList<>();
            RepeatedScalarIterator ids = callstack.frameIds(new RepeatedScalarIterator());
            while (ids.next()) {
                frames.add(ids.value());
            }
            into.put(callstack.iid(), frames);
        }
    }
}
