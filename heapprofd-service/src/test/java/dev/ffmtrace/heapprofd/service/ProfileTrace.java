package dev.ffmtrace.heapprofd.service;

import perfetto.protos.InternedDataOuterClass.InternedData;
import perfetto.protos.ProfileCommon;
import perfetto.protos.ProfilePacketOuterClass.ProfilePacket;
import perfetto.protos.TraceOuterClass.Trace;
import perfetto.protos.TracePacketOuterClass.TracePacket;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A trace's heap dumps as a reader rebuilds them (protobuf-java, independent of the
 * writer): per sequence the interned tables (cleared by SEQ_INCREMENTAL_STATE_CLEARED),
 * packets joined while {@code continued}, {@code index} checked to count up from 0.
 */
final class ProfileTrace {
    /** One callsite of one heap at one dump, frames outermost first. */
    record Sample(long pid, String heap, long samplingInterval, List<String> frames, List<Long> mappingIds,
                  long allocated, long freed, long allocations, long frees) {
    }

    /** A whole dump: its samples and the packets it took. */
    record Dump(List<Sample> samples, int packets, List<ProfilePacket.ProcessHeapSamples> headers) {
    }

    final List<Dump> dumps = new ArrayList<>();
    /** Interned entries defined again under an id the sequence already had. */
    int redefinitions;
    /** Packets whose index was not the one after the sequence's last. */
    int indexGaps;
    final Map<Long, ProfileCommon.Mapping> mappings = new HashMap<>();
    final Map<Long, byte[]> buildIds = new HashMap<>();
    /** New callstacks each dump defined, in dump order. */
    final List<Integer> callstacksDefined = new ArrayList<>();

    static ProfileTrace parse(byte[] trace) throws Exception {
        ProfileTrace out = new ProfileTrace();
        Map<String, byte[]> names = new HashMap<>();
        Map<Long, ProfileCommon.Frame> frames = new HashMap<>();
        Map<Long, List<Long>> callstacks = new HashMap<>();
        long nextIndex = 0;
        List<ProfilePacket> pending = new ArrayList<>();
        int defined = 0;
        for (TracePacket packet : Trace.parseFrom(trace).getPacketList()) {
            if ((packet.getSequenceFlags() & TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED_VALUE) != 0) {
                names.clear();
                frames.clear();
                callstacks.clear();
                out.mappings.clear();
                out.buildIds.clear();
            }
            if (packet.hasInternedData()) {
                InternedData interned = packet.getInternedData();
                for (ProfileCommon.InternedString string : interned.getFunctionNamesList()) {
                    out.define(names, "f" + string.getIid(), string.getStr().toByteArray());
                }
                for (ProfileCommon.InternedString string : interned.getMappingPathsList()) {
                    out.define(names, "p" + string.getIid(), string.getStr().toByteArray());
                }
                for (ProfileCommon.InternedString string : interned.getBuildIdsList()) {
                    out.define(out.buildIds, string.getIid(), string.getStr().toByteArray());
                }
                for (ProfileCommon.Mapping mapping : interned.getMappingsList()) {
                    out.define(out.mappings, mapping.getIid(), mapping);
                }
                for (ProfileCommon.Frame frame : interned.getFramesList()) {
                    out.define(frames, frame.getIid(), frame);
                }
                for (ProfileCommon.Callstack callstack : interned.getCallstacksList()) {
                    out.define(callstacks, callstack.getIid(), callstack.getFrameIdsList());
                    defined++;
                }
            }
            if (packet.hasProfilePacket()) {
                ProfilePacket profile = packet.getProfilePacket();
                if (profile.getIndex() != nextIndex) {
                    out.indexGaps++;
                }
                nextIndex = profile.getIndex() + 1;
                pending.add(profile);
                if (!profile.getContinued()) {
                    out.dumps.add(resolve(pending, names, frames, callstacks));
                    out.callstacksDefined.add(defined);
                    defined = 0;
                    pending = new ArrayList<>();
                }
            }
        }
        return out;
    }

    private <K, V> void define(Map<K, V> table, K id, V value) {
        if (table.put(id, value) != null) {
            redefinitions++;
        }
    }

    private static Dump resolve(List<ProfilePacket> packets, Map<String, byte[]> names,
                                Map<Long, ProfileCommon.Frame> frames, Map<Long, List<Long>> callstacks) {
        List<Sample> samples = new ArrayList<>();
        List<ProfilePacket.ProcessHeapSamples> headers = new ArrayList<>();
        for (ProfilePacket packet : packets) {
            for (ProfilePacket.ProcessHeapSamples heap : packet.getProcessDumpsList()) {
                headers.add(heap);
                for (ProfilePacket.HeapSample sample : heap.getSamplesList()) {
                    List<String> stack = new ArrayList<>();
                    List<Long> mappingIds = new ArrayList<>();
                    for (long frameId : callstacks.get(sample.getCallstackId())) {
                        ProfileCommon.Frame frame = frames.get(frameId);
                        stack.add(new String(names.get("f" + frame.getFunctionNameId())));
                        mappingIds.add(frame.getMappingId());
                    }
                    samples.add(new Sample(heap.getPid(), heap.getHeapName(), heap.getSamplingIntervalBytes(), stack,
                            mappingIds, sample.getSelfAllocated(), sample.getSelfFreed(), sample.getAllocCount(),
                            sample.getFreeCount()));
                }
            }
        }
        return new Dump(samples, packets.size(), headers);
    }

    /** A dump as folded stacks without the process, one line per callsite, as the service folds its books. */
    static List<String> folded(Dump dump, boolean unreleased) {
        Map<String, Long> lines = new LinkedHashMap<>();
        for (Sample sample : dump.samples()) {
            long bytes = unreleased ? sample.allocated() - sample.freed() : sample.allocated();
            lines.merge(String.join(";", sample.frames()), bytes, Long::sum);
        }
        List<String> out = new ArrayList<>();
        lines.forEach((stack, bytes) -> out.add(stack + " " + bytes));
        return out;
    }
}
