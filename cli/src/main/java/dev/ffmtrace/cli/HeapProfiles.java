package dev.ffmtrace.cli;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import perfetto.protos.InternedDataOuterClass.InternedData;
import perfetto.protos.ProfileCommon;
import perfetto.protos.ProfilePacketOuterClass.ProfilePacket;
import perfetto.protos.TracePacketOuterClass.TracePacket;

/**
 * The heap profiles in a trace, as folded stacks: heapprofd's ProfilePackets read as the
 * trace processor reads them. Per packet sequence, the interned function names, frames
 * and callstacks (cleared by {@code SEQ_INCREMENTAL_STATE_CLEARED}); a dump's packets joined
 * until one is not {@code continued}. A dump's totals are cumulative, so each process
 * heap's profile is its latest dump. An id the trace never defined makes an
 * {@code [unknown]} frame rather than an error: the file is input, not trusted.
 */
final class HeapProfiles {
    private static final String UNKNOWN = "[unknown]";

    /** Interned tables of one sequence. */
    private static final class Sequence {
        final Map<Long, String> functionNames = new HashMap<>();
        final Map<Long, Long> frameNames = new HashMap<>();
        final Map<Long, List<Long>> callstacks = new HashMap<>();
        /** The dump being read: (process, heap) to its callsites' folded stacks and totals. */
        final Map<String, Map<String, long[]>> pending = new LinkedHashMap<>();
    }

    private final Map<Integer, Sequence> sequences = new HashMap<>();
    private final Map<Integer, String> processNames = new HashMap<>();
    /** Per (pid, heap): its latest dump's callsites, folded stack to {allocated, freed}. */
    private final Map<String, Map<String, long[]>> latest = new LinkedHashMap<>();

    /** Reads one packet of the trace, in order. */
    void add(TracePacket packet) {
        if (packet.hasTrackDescriptor() && packet.getTrackDescriptor().hasProcess()) {
            var process = packet.getTrackDescriptor().getProcess();
            if (process.hasProcessName()) {
                processNames.put(process.getPid(), process.getProcessName());
            }
        }
        Sequence sequence = sequences.computeIfAbsent(packet.getTrustedPacketSequenceId(), id -> new Sequence());
        if ((packet.getSequenceFlags() & TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED_VALUE) != 0) {
            sequence.functionNames.clear();
            sequence.frameNames.clear();
            sequence.callstacks.clear();
        }
        if (packet.hasInternedData()) {
            InternedData interned = packet.getInternedData();
            for (ProfileCommon.InternedString name : interned.getFunctionNamesList()) {
                sequence.functionNames.put(name.getIid(), name.getStr().toStringUtf8());
            }
            for (ProfileCommon.Frame frame : interned.getFramesList()) {
                sequence.frameNames.put(frame.getIid(), frame.getFunctionNameId());
            }
            for (ProfileCommon.Callstack callstack : interned.getCallstacksList()) {
                sequence.callstacks.put(callstack.getIid(), callstack.getFrameIdsList());
            }
        }
        if (packet.hasProfilePacket()) {
            ProfilePacket profile = packet.getProfilePacket();
            for (ProfilePacket.ProcessHeapSamples heap : profile.getProcessDumpsList()) {
                Map<String, long[]> callsites = sequence.pending.computeIfAbsent(
                        heap.getPid() + "\0" + heap.getHeapName(), key -> new LinkedHashMap<>());
                for (ProfilePacket.HeapSample sample : heap.getSamplesList()) {
                    long[] totals = callsites.computeIfAbsent(stack(sequence, sample.getCallstackId()),
                            key -> new long[2]);
                    totals[0] += sample.getSelfAllocated();
                    totals[1] += sample.getSelfFreed();
                }
            }
            if (!profile.getContinued()) {
                latest.putAll(sequence.pending);
                sequence.pending.clear();
            }
        }
    }

    private static String stack(Sequence sequence, long callstackId) {
        List<Long> frames = sequence.callstacks.get(callstackId);
        if (frames == null) {
            return UNKNOWN;
        }
        List<String> names = new ArrayList<>(frames.size());
        for (long frame : frames) {
            Long nameId = sequence.frameNames.get(frame);
            String name = nameId == null ? null : sequence.functionNames.get(nameId);
            names.add(name == null ? UNKNOWN : name);
        }
        return String.join(";", names);
    }

    /**
     * Every process heap's latest profile, one line per callsite:
     * {@code process;root;...;leaf BYTES}, unreleased (allocated minus freed) or allocated
     * bytes; the process is its name and pid as the trace names it.
     */
    List<String> folded(boolean unreleased) {
        List<String> lines = new ArrayList<>();
        for (Map.Entry<String, Map<String, long[]>> heap : latest.entrySet()) {
            int pid = Integer.parseInt(heap.getKey().substring(0, heap.getKey().indexOf('\0')));
            String process = processNames.getOrDefault(pid, "pid") + " (" + pid + ")";
            for (Map.Entry<String, long[]> callsite : heap.getValue().entrySet()) {
                long[] totals = callsite.getValue();
                String stack = callsite.getKey().isEmpty() ? process : process + ";" + callsite.getKey();
                lines.add(stack + " " + (unreleased ? totals[0] - totals[1] : totals[0]));
            }
        }
        return lines;
    }
}
