package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.perfetto.protos.Callstack;
import dev.ffmtrace.perfetto.protos.InternedData;
import dev.ffmtrace.perfetto.protos.InternedString;
import dev.ffmtrace.perfetto.protos.Mapping;
import dev.ffmtrace.perfetto.protos.ProcessDescriptor;
import dev.ffmtrace.perfetto.protos.ProfilePacket;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TrackDescriptor;
import dev.ffmtrace.tracing.trackevent.TracePacketSink;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Writes heap dumps as Perfetto's heapprofd does: each dump is one or more TracePackets,
 * each with a ProfilePacket (the processes' heaps and their samples, {@code index}
 * counting packets on the sequence from 0, {@code continued} on all but a dump's last)
 * and, in the packet's {@code interned_data}, the function names, build ids, mapping
 * paths, mappings, frames and callstacks its samples use that no earlier packet of the
 * sequence defined. The ids stay the same from dump to dump, so a later dump sends only
 * what is new; {@link #clearIncrementalState()} starts them again (the buffer lost
 * packets that defined some), as does a dump that finds more than its bound of entries
 * kept. A packet is closed once its estimated size passes the
 * budget, so packets stay far below the SMB's chunks times their count (a single callstack
 * larger than the budget still goes whole, in a packet of its own). One per trace writer,
 * used by one thread at a time.
 */
final class ProfileDumper {
    /** The packet size past which a dump goes on in a new packet: Perfetto's threshold is 400,000 for 500 KB chunks. */
    static final int DEFAULT_PACKET_BUDGET = 32 * 1024;
    /** Process tracks' uuids are this plus the pid: apart from the small uuids TrackEvent writers pick. */
    static final long PROCESS_TRACK_UUID_BASE = 0x6865_6170_0000_0000L;
    /**
     * Interned entries kept across dumps before a dump starts them again: a session whose
     * clients come and go would otherwise keep every frame and callstack it ever sent.
     */
    static final int DEFAULT_MAX_INTERNED = 1 << 21;

    /**
     * One heap of one process at the dump.
     *
     * @param samples its callsites' totals, outermost callsites first
     */
    record Heap(int pid, String processName, String heapName, long samplingInterval, List<HeapBooks.Sample> samples,
                Stats stats) {
    }

    /** What a heap's process header reports beyond its samples. */
    record Stats(long unwindingErrors, long heapSamples, long mapReparses, long clientSpinlockBlockedUs,
                 boolean bufferOverran, boolean bufferCorrupted, boolean disconnected) {
    }

    private final int packetBudget;
    private final int maxInterned;
    private final Map<String, Long> functionNames = new HashMap<>();
    private final Map<ByteBuffer, Long> buildIds = new HashMap<>();
    private final Map<String, Long> mappingPaths = new HashMap<>();
    private final Map<Frame.Module, Long> mappings = new HashMap<>();
    private final Map<Frame, Long> frames = new HashMap<>();
    private final Map<List<Long>, Long> callstacks = new HashMap<>();
    private final Set<Integer> describedProcesses = new HashSet<>();
    private boolean stateCleared = true;
    private long nextIndex;

    ProfileDumper(int packetBudget, int maxInterned) {
        this.packetBudget = packetBudget;
        this.maxInterned = maxInterned;
    }

    /** Forgets every id: the next packet defines what it uses again and says the state was cleared. */
    void clearIncrementalState() {
        functionNames.clear();
        buildIds.clear();
        mappingPaths.clear();
        mappings.clear();
        frames.clear();
        callstacks.clear();
        describedProcesses.clear();
        stateCleared = true;
    }

    /**
     * Writes one dump of {@code heaps} taken at {@code timestamp} (CLOCK_MONOTONIC_COARSE,
     * as heapprofd's are) into {@code writer}, the packets' own timestamps {@code boottime}.
     *
     * @return the packets written
     */
    int dump(TracePacketSink writer, List<Heap> heaps, long timestamp, long boottime) {
        if (functionNames.size() + buildIds.size() + mappingPaths.size() + mappings.size() + frames.size()
                + callstacks.size() > maxInterned) {
            clearIncrementalState();
        }
        for (Heap heap : heaps) {
            if (describedProcesses.add(heap.pid())) {
                describe(writer, heap, boottime);
            }
        }
        List<PendingPacket> packets = new ArrayList<>();
        PendingPacket packet = new PendingPacket();
        packets.add(packet);
        for (Heap heap : heaps) {
            packet.startHeap(heap);
            for (HeapBooks.Sample sample : heap.samples()) {
                PendingPacket.Entries needed = new PendingPacket.Entries();
                List<Long> frameIds = new ArrayList<>(sample.frames().size());
                for (Frame frame : sample.frames()) {
                    frameIds.add(frameId(frame, needed));
                }
                long callstackId = callstackId(frameIds, needed);
                int cost = needed.bytes + 40;
                if (packet.bytes + cost > packetBudget && packet.sampleCount > 0) {
                    packet = new PendingPacket();
                    packets.add(packet);
                    packet.startHeap(heap);
                }
                packet.add(needed, callstackId, sample, cost);
            }
        }
        for (int i = 0; i < packets.size(); i++) {
            write(writer, packets.get(i), i < packets.size() - 1, timestamp, boottime);
        }
        return packets.size();
    }

    /** A process track naming the process, so a reader shows its name, not only its pid. */
    private static void describe(TracePacketSink writer, Heap heap, long boottime) {
        TracePacket packet = writer.newTracePacket();
        packet.setTimestamp(boottime);
        TrackDescriptor track = packet.setTrackDescriptor();
        track.setUuid(PROCESS_TRACK_UUID_BASE + Integer.toUnsignedLong(heap.pid()));
        ProcessDescriptor process = track.setProcess();
        process.setPid(heap.pid());
        process.setProcessName(heap.processName());
        writer.finishTracePacket();
    }

    private void write(TracePacketSink writer, PendingPacket pending, boolean continued, long timestamp,
                       long boottime) {
        TracePacket packet = writer.newTracePacket();
        packet.setTimestamp(boottime);
        packet.setSequenceFlags(stateCleared
                ? TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED.number()
                        | TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE.number()
                : TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE.number());
        stateCleared = false;
        if (!pending.entries.isEmpty()) {
            InternedData interned = packet.setInternedData();
            for (PendingPacket.Entries entries : pending.entries) {
                entries.writeTo(interned);
            }
        }
        ProfilePacket profile = packet.setProfilePacket();
        for (PendingPacket.Section section : pending.sections) {
            ProfilePacket.ProcessHeapSamples dump = profile.addProcessDumps();
            Heap heap = section.heap;
            dump.setPid(heap.pid());
            dump.setHeapName(heap.heapName());
            dump.setSamplingIntervalBytes(heap.samplingInterval());
            dump.setOrigSamplingIntervalBytes(heap.samplingInterval());
            dump.setTimestamp(timestamp);
            if (heap.stats().bufferOverran()) {
                dump.setBufferOverran(true);
            }
            if (heap.stats().bufferCorrupted()) {
                dump.setBufferCorrupted(true);
            }
            if (heap.stats().disconnected()) {
                dump.setDisconnected(true);
            }
            ProfilePacket.ProcessStats stats = dump.setStats();
            stats.setUnwindingErrors(heap.stats().unwindingErrors());
            stats.setHeapSamples(heap.stats().heapSamples());
            stats.setMapReparses(heap.stats().mapReparses());
            stats.setClientSpinlockBlockedUs(heap.stats().clientSpinlockBlockedUs());
            for (int i = 0; i < section.callstackIds.size(); i++) {
                HeapBooks.Sample sample = section.samples.get(i);
                ProfilePacket.HeapSample out = dump.addSamples();
                out.setCallstackId(section.callstackIds.get(i));
                out.setSelfAllocated(sample.allocatedBytes());
                out.setSelfFreed(sample.freedBytes());
                out.setAllocCount(sample.allocations());
                out.setFreeCount(sample.frees());
            }
        }
        if (continued) {
            profile.setContinued(true);
        }
        profile.setIndex(nextIndex++);
        writer.finishTracePacket();
    }

    private long frameId(Frame frame, PendingPacket.Entries needed) {
        Long id = frames.get(frame);
        if (id == null) {
            id = frames.size() + 1L;
            frames.put(frame, id);
            long functionNameId = intern(functionNames, frame.name(), needed.functionNames, needed);
            long mappingId = mappingId(frame.module(), needed);
            needed.frames.add(new FrameEntry(id, functionNameId, mappingId, frame.relPc()));
            needed.bytes += 24;
        }
        return id;
    }

    private long mappingId(Frame.Module module, PendingPacket.Entries needed) {
        Long id = mappings.get(module);
        if (id == null) {
            id = mappings.size() + 1L;
            mappings.put(module, id);
            long buildId = 0;
            if (module.buildId() != null) {
                byte[] raw = HexFormat.of().parseHex(module.buildId());
                ByteBuffer key = ByteBuffer.wrap(raw);
                Long known = buildIds.get(key);
                if (known == null) {
                    known = buildIds.size() + 1L;
                    buildIds.put(key, known);
                    needed.buildIds.add(new StringEntry(known, raw));
                    needed.bytes += raw.length + 8;
                }
                buildId = known;
            }
            // Perfetto's mappings name their path by its components; a reader joins them with '/'.
            List<Long> pathIds = new ArrayList<>();
            for (String component : module.path().split("/")) {
                if (!component.isEmpty()) {
                    pathIds.add(intern(mappingPaths, component, needed.mappingPaths, needed));
                }
            }
            needed.mappings.add(new MappingEntry(id, buildId, module, pathIds));
            needed.bytes += 48 + 3 * pathIds.size();
        }
        return id;
    }

    private long callstackId(List<Long> frameIds, PendingPacket.Entries needed) {
        Long id = callstacks.get(frameIds);
        if (id == null) {
            id = callstacks.size() + 1L;
            callstacks.put(frameIds, id);
            needed.callstacks.add(new CallstackEntry(id, frameIds));
            needed.bytes += 6 + 4 * frameIds.size();
        }
        return id;
    }

    private static long intern(Map<String, Long> table, String value, List<StringEntry> defined,
                               PendingPacket.Entries needed) {
        Long id = table.get(value);
        if (id == null) {
            id = table.size() + 1L;
            table.put(value, id);
            byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
            defined.add(new StringEntry(id, bytes));
            needed.bytes += bytes.length + 8;
        }
        return id;
    }

    private record StringEntry(long id, byte[] bytes) {
    }

    private record MappingEntry(long id, long buildId, Frame.Module module, List<Long> pathIds) {
    }

    private record FrameEntry(long id, long functionNameId, long mappingId, long relPc) {
    }

    private record CallstackEntry(long id, List<Long> frameIds) {
    }

    /** A packet being planned: the interned entries it defines and the samples of each heap in it. */
    private static final class PendingPacket {
        /** Entries one sample needs defined, in the order a reader needs them. */
        static final class Entries {
            final List<StringEntry> functionNames = new ArrayList<>();
            final List<StringEntry> buildIds = new ArrayList<>();
            final List<StringEntry> mappingPaths = new ArrayList<>();
            final List<MappingEntry> mappings = new ArrayList<>();
            final List<FrameEntry> frames = new ArrayList<>();
            final List<CallstackEntry> callstacks = new ArrayList<>();
            int bytes;

            boolean isEmpty() {
                return functionNames.isEmpty() && buildIds.isEmpty() && mappingPaths.isEmpty() && mappings.isEmpty()
                        && frames.isEmpty() && callstacks.isEmpty();
            }

            void writeTo(InternedData interned) {
                for (StringEntry entry : functionNames) {
                    set(interned.addFunctionNames(), entry);
                }
                for (StringEntry entry : buildIds) {
                    set(interned.addBuildIds(), entry);
                }
                for (StringEntry entry : mappingPaths) {
                    set(interned.addMappingPaths(), entry);
                }
                for (MappingEntry entry : mappings) {
                    Mapping mapping = interned.addMappings();
                    mapping.setIid(entry.id());
                    if (entry.buildId() != 0) {
                        mapping.setBuildId(entry.buildId());
                    }
                    mapping.setStartOffset(entry.module().offset());
                    mapping.setStart(entry.module().start());
                    mapping.setEnd(entry.module().end());
                    mapping.setLoadBias(entry.module().loadBias());
                    for (long pathId : entry.pathIds()) {
                        mapping.addPathStringIds(pathId);
                    }
                }
                for (FrameEntry entry : frames) {
                    dev.ffmtrace.perfetto.protos.Frame frame = interned.addFrames();
                    frame.setIid(entry.id());
                    frame.setFunctionNameId(entry.functionNameId());
                    frame.setMappingId(entry.mappingId());
                    frame.setRelPc(entry.relPc());
                }
                for (CallstackEntry entry : callstacks) {
                    Callstack callstack = interned.addCallstacks();
                    callstack.setIid(entry.id());
                    for (long frameId : entry.frameIds()) {
                        callstack.addFrameIds(frameId);
                    }
                }
            }

            private static void set(InternedString string, StringEntry entry) {
                string.setIid(entry.id());
                string.setStr(entry.bytes());
            }
        }

        /** A heap's samples in this packet. */
        static final class Section {
            final Heap heap;
            final List<Long> callstackIds = new ArrayList<>();
            final List<HeapBooks.Sample> samples = new ArrayList<>();

            Section(Heap heap) {
                this.heap = heap;
            }
        }

        final List<Entries> entries = new ArrayList<>();
        final List<Section> sections = new ArrayList<>();
        int bytes;
        int sampleCount;

        void startHeap(Heap heap) {
            sections.add(new Section(heap));
            bytes += 64 + heap.heapName().length();
        }

        void add(Entries needed, long callstackId, HeapBooks.Sample sample, int cost) {
            if (!needed.isEmpty()) {
                entries.add(needed);
            }
            Section section = sections.getLast();
            section.callstackIds.add(callstackId);
            section.samples.add(sample);
            bytes += cost;
            sampleCount++;
        }
    }
}
