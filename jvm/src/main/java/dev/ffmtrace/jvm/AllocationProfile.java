package dev.ffmtrace.jvm;

import dev.ffmtrace.perfetto.protos.ProfilePacket;
import dev.ffmtrace.perfetto.protos.TracePacket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * JFR's weighted allocation samples summed by stack, the allocated class as the leaf
 * frame, written as a heap profile: one dump of heap {@value #HEAP_NAME} covering the
 * recording, in {@code ProfilePacket}s as heapprofd writes them, so the UI opens it as a
 * flamegraph of bytes allocated. A sample's weight is JFR's estimate of the bytes its
 * thread allocated since its previous sample.
 */
final class AllocationProfile {
    static final String HEAP_NAME = "java";
    /** Samples per packet: a dump larger than this continues in the next packet. */
    static final int SAMPLES_PER_PACKET = 1000;

    private final Map<List<JavaFrame>, long[]> bytesAndCounts = new LinkedHashMap<>();
    private long first = Long.MAX_VALUE;
    private long last = Long.MIN_VALUE;

    void add(long timestamp, List<JavaFrame> rootFirstWithLeaf, long weight) {
        long[] sums = bytesAndCounts.computeIfAbsent(rootFirstWithLeaf, k -> new long[2]);
        sums[0] += Math.max(0, weight);
        sums[1]++;
        first = Math.min(first, timestamp);
        last = Math.max(last, timestamp);
    }

    boolean isEmpty() {
        return bytesAndCounts.isEmpty();
    }

    /**
     * Writes the dump for process {@code pid}; {@code toMonotonicCoarse} moves the REALTIME
     * window onto CLOCK_MONOTONIC_COARSE, the clock Perfetto reads a dump's timestamps in.
     */
    void write(JvmPacketWriter writer, long pid, long toMonotonicCoarse) {
        Map<String, Long> strings = new HashMap<>();
        Map<String, Long> mappings = new HashMap<>();
        Map<JavaFrame, Long> frames = new HashMap<>();
        List<Map.Entry<List<JavaFrame>, long[]>> stacks = new ArrayList<>(bytesAndCounts.entrySet());
        long index = 0;
        for (int from = 0; from < stacks.size(); from += SAMPLES_PER_PACKET) {
            int to = Math.min(stacks.size(), from + SAMPLES_PER_PACKET);
            TracePacket packet = writer.packet(last);
            ProfilePacket profile = packet.setProfilePacket();
            List<Long> callstackIds = new ArrayList<>(to - from);
            for (int i = from; i < to; i++) {
                List<JavaFrame> stack = stacks.get(i).getKey();
                long[] frameIds = new long[stack.size()];
                for (int f = 0; f < stack.size(); f++) {
                    frameIds[f] = frameId(profile, stack.get(f), strings, mappings, frames);
                }
                var callstack = profile.addCallstacks();
                long callstackId = i + 1L;
                callstack.setIid(callstackId);
                for (long frameId : frameIds) {
                    callstack.addFrameIds(frameId);
                }
                callstackIds.add(callstackId);
            }
            ProfilePacket.ProcessHeapSamples dump = profile.addProcessDumps();
            dump.setPid(pid);
            dump.setHeapName(HEAP_NAME);
            dump.setStartTimestamp(first - toMonotonicCoarse);
            dump.setTimestamp(last - toMonotonicCoarse);
            for (int i = from; i < to; i++) {
                long[] sums = stacks.get(i).getValue();
                var sample = dump.addSamples();
                sample.setCallstackId(callstackIds.get(i - from));
                sample.setSelfAllocated(sums[0]);
                sample.setAllocCount(sums[1]);
            }
            profile.setContinued(to < stacks.size());
            profile.setIndex(index++);
            writer.finish();
        }
    }

    /** {@code frame}'s id in the dump, writing it (and its strings and mapping) into {@code profile} when new. */
    private static long frameId(ProfilePacket profile, JavaFrame frame, Map<String, Long> strings,
                                Map<String, Long> mappings, Map<JavaFrame, Long> frames) {
        Long known = frames.get(frame);
        if (known != null) {
            return known;
        }
        long function = stringId(profile, frame.function(), strings);
        Long mapping = mappings.get(frame.mapping());
        if (mapping == null) {
            long path = stringId(profile, frame.mapping(), strings);
            mapping = (long) mappings.size() + 1;
            mappings.put(frame.mapping(), mapping);
            var entry = profile.addMappings();
            entry.setIid(mapping);
            entry.addPathStringIds(path);
        }
        long id = frames.size() + 1L;
        frames.put(frame, id);
        var entry = profile.addFrames();
        entry.setIid(id);
        entry.setFunctionNameId(function);
        entry.setMappingId(mapping);
        entry.setRelPc(frame.bytecodeIndex());
        if (frame.line() > 0) {
            entry.setLineNumber(frame.line());
        }
        return id;
    }

    private static long stringId(ProfilePacket profile, String string, Map<String, Long> strings) {
        Long known = strings.get(string);
        if (known != null) {
            return known;
        }
        long id = strings.size() + 1L;
        strings.put(string, id);
        var entry = profile.addStrings();
        entry.setIid(id);
        entry.setStr(string.getBytes(StandardCharsets.UTF_8));
        return id;
    }
}
