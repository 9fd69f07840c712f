package dev.ffmtrace.tracing.service;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.perfetto.protos.BuiltinClock;
import dev.ffmtrace.perfetto.protos.ClockSnapshot;
import dev.ffmtrace.perfetto.protos.ProtoVms;
import dev.ffmtrace.perfetto.protos.SystemInfo;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TraceProvenance;
import dev.ffmtrace.perfetto.protos.TraceStats;
import dev.ffmtrace.perfetto.protos.TraceUuid;
import dev.ffmtrace.perfetto.protos.Trigger;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.buffer.BufferProtoVms;
import dev.ffmtrace.tracing.buffer.TraceBufferStats;
import dev.ffmtrace.tracing.buffer.TraceBufferV2;
import dev.ffmtrace.tracing.relay.ThisMachine;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;

/**
 * Encodes the packets the service writes itself, each a one-packet {@code Trace} ready to
 * be appended to a trace file, on sequence {@link TracingSession#SERVICE_SEQUENCE_ID}
 * with the service's uid and, as Perfetto's service does, timestamps declared BOOTTIME.
 * Each packet is encoded into the instance's buffer, which the next one reuses, then
 * {@linkplain #appendTo appended} to a sink or {@linkplain #toByteArray copied} out: a
 * readback that keeps an instance encodes its packets without allocating. One thread at
 * a time uses an instance.
 */
final class ServicePackets {
    /** What this machine is, read once: it does not change while the process runs. */
    private static final byte[] SYSTEM_INFO = systemInfoPacket();
    /** Rounds of clock reads a snapshot takes at most. */
    static final int SNAPSHOT_ROUNDS = 8;
    /** A round of reads this short is kept at once. */
    static final long TIGHT_ROUND_NANOS = 2_000;

    private final HeapBuffered<Trace> trace = new HeapBuffered<>(Trace.FACTORY);
    private final ProtoVmsPacket protoVms = new ProtoVmsPacket();
    /** The last packet's bytes, contiguous for a sink; grown as packets need. */
    private byte[] bytes = new byte[(int) HeapBuffered.DEFAULT_SLICE_SIZE];
    private MemorySegment bytesSegment = MemorySegment.ofArray(bytes);
    private int size;

    /** Appends the packet encoded last to {@code sink}. */
    void appendTo(ReadbackSink sink) {
        sink.appendFramed(bytes, 0, size);
    }

    /** The packet encoded last, in a new array: for a packet kept to be written later. */
    byte[] toByteArray() {
        return Arrays.copyOf(bytes, size);
    }

    /**
     * A {@code clock_snapshot} of BOOTTIME, MONOTONIC, MONOTONIC_RAW, REALTIME and, as
     * traced's, the coarse REALTIME and MONOTONIC: heap profiles date their dumps in
     * MONOTONIC_COARSE, which the trace processor converts through this snapshot. Every
     * clock is read before anything is encoded, so that they describe one instant.
     * MONOTONIC goes first: BOOTTIME is MONOTONIC plus the time suspended, and read right
     * after it can never come out smaller. A round of reads that a safepoint, a cold
     * downcall or the scheduler stretched would put the clocks hundreds of microseconds
     * apart (moving, say, JFR's REALTIME events against the SDK's MONOTONIC ones), so up
     * to {@value #SNAPSHOT_ROUNDS} rounds are read, MONOTONIC again at each end, and the
     * shortest is kept; one under {@value #TIGHT_ROUND_NANOS} ns ends the search.
     */
    ServicePackets clockSnapshot() {
        long monotonic = 0;
        long boottime = 0;
        long monotonicRaw = 0;
        long realtime = 0;
        long realtimeCoarse = 0;
        long monotonicCoarse = 0;
        long shortest = Long.MAX_VALUE;
        for (int round = 0; round < SNAPSHOT_ROUNDS && shortest > TIGHT_ROUND_NANOS; round++) {
            long roundMonotonic = Os.clockNanos(Os.CLOCK_MONOTONIC);
            long roundBoottime = Os.clockNanos(Os.CLOCK_BOOTTIME);
            long roundMonotonicRaw = Os.clockNanos(Os.CLOCK_MONOTONIC_RAW);
            long roundRealtime = Os.clockNanos(Os.CLOCK_REALTIME);
            long roundRealtimeCoarse = Os.clockNanos(Os.CLOCK_REALTIME_COARSE);
            long roundMonotonicCoarse = Os.clockNanos(Os.CLOCK_MONOTONIC_COARSE);
            long took = Os.clockNanos(Os.CLOCK_MONOTONIC) - roundMonotonic;
            if (took < shortest) {
                shortest = took;
                monotonic = roundMonotonic;
                boottime = roundBoottime;
                monotonicRaw = roundMonotonicRaw;
                realtime = roundRealtime;
                realtimeCoarse = roundRealtimeCoarse;
                monotonicCoarse = roundMonotonicCoarse;
            }
        }
        TracePacket packet = begin(boottime);
        ClockSnapshot snapshot = packet.setClockSnapshot();
        addClock(snapshot, BuiltinClock.BUILTIN_CLOCK_BOOTTIME, boottime);
        addClock(snapshot, BuiltinClock.BUILTIN_CLOCK_MONOTONIC, monotonic);
        addClock(snapshot, BuiltinClock.BUILTIN_CLOCK_MONOTONIC_RAW, monotonicRaw);
        addClock(snapshot, BuiltinClock.BUILTIN_CLOCK_REALTIME, realtime);
        addClock(snapshot, BuiltinClock.BUILTIN_CLOCK_REALTIME_COARSE, realtimeCoarse);
        addClock(snapshot, BuiltinClock.BUILTIN_CLOCK_MONOTONIC_COARSE, monotonicCoarse);
        snapshot.setPrimaryTraceClock(BuiltinClock.BUILTIN_CLOCK_BOOTTIME);
        return end();
    }

    /** The session's {@code trace_config}, as given. */
    ServicePackets traceConfig(SessionConfig config) {
        begin(-1).appendBytes(TracePacket.TRACE_CONFIG_FIELD_NUMBER, config.traceConfig());
        return end();
    }

    /** The session's {@code trace_uuid}. */
    ServicePackets traceUuid(long msb, long lsb) {
        TraceUuid uuid = begin(-1).setTraceUuid();
        uuid.setMsb(msb);
        uuid.setLsb(lsb);
        return end();
    }

    /** {@code system_info}: uname, page size, CPUs, time zone and the service's version. */
    static byte[] systemInfo() {
        return SYSTEM_INFO;
    }

    /**
     * A {@code service_event} with the bool field {@code eventField} of
     * {@code TracingServiceEvent} set, stamped {@code bootTimeNanos}.
     */
    ServicePackets serviceEvent(int eventField, long bootTimeNanos) {
        begin(bootTimeNanos).setServiceEvent().appendVarInt(eventField, 1);
        return end();
    }

    /** A {@code trigger} the session received, stamped when it came. */
    ServicePackets trigger(TriggerHit hit) {
        fill(begin(hit.bootTimeNanos()).setTrigger(), hit);
        return end();
    }

    /** A clone's {@code clone_snapshot_trigger}: the CLONE_SNAPSHOT trigger it was made for. */
    ServicePackets cloneSnapshotTrigger(TriggerHit hit) {
        fill(begin(hit.bootTimeNanos()).setCloneSnapshotTrigger(), hit);
        return end();
    }

    private static void fill(Trigger trigger, TriggerHit hit) {
        trigger.setTriggerName(hit.name());
        trigger.setProducerName(hit.producerName());
        trigger.setTrustedProducerUid(hit.producerUid());
        trigger.setStopDelayMs(hit.stopDelayMs());
    }

    /**
     * {@code trace_stats}: every buffer's stats, in config order, the session's own counts,
     * and the service's producers as traced counts them: connected now, and seen since it
     * started (the difference counts producers that went away, a killed relay's among them).
     */
    ServicePackets stats(List<TraceBufferStats> buffers, long chunksDiscarded, long invalidPackets,
                         TracingService.ProducerCounts producers) {
        TraceStats stats = begin(-1).setTraceStats();
        for (int i = 0; i < buffers.size(); i++) {
            buffers.get(i).writeTo(stats.addBufferStats());
        }
        stats.setProducersConnected(producers.connected());
        stats.setProducersSeen(producers.seen());
        stats.setChunksDiscarded(chunksDiscarded);
        stats.setInvalidPackets(invalidPackets);
        return end();
    }

    /**
     * {@code trace_provenance}: for each of the session's buffers, in config order, the
     * sequences it holds and their producers (each a {@link TraceBufferV2#sequences()} key),
     * so a reader can tell whose packets a sequence carries.
     */
    ServicePackets traceProvenance(List<long[]> sequencesPerBuffer) {
        TraceProvenance provenance = begin(Os.clockNanos(Os.CLOCK_BOOTTIME)).setTraceProvenance();
        for (long[] sequences : sequencesPerBuffer) {
            TraceProvenance.Buffer buffer = provenance.addBuffers();
            for (long key : sequences) {
                int producerId = (int) (key >>> 32);
                TraceProvenance.Sequence sequence = buffer.addSequences();
                sequence.setId(PacketHandoff.sequenceId(producerId, (int) key));
                sequence.setProducerId(producerId);
            }
        }
        return end();
    }

    /**
     * Starts the {@code protovms} packet, which the caller then builds: each ProtoVM of the
     * session's buffers, with the state it holds when added. Until it is appended, the
     * instance encodes nothing else.
     */
    ProtoVmsPacket protoVms() {
        trace.reset();
        protoVms.protoVms = null;
        return protoVms;
    }

    /** The {@code protovms} packet being built: no VM, no packet. */
    final class ProtoVmsPacket {
        private ProtoVms protoVms;

        /** Adds {@code vms}' instances; the caller keeps their buffer from changing meanwhile. */
        void add(BufferProtoVms vms) {
            for (BufferProtoVms.Instance vm : vms.instances()) {
                if (protoVms == null) {
                    protoVms = service(trace, -1).setProtovms();
                }
                ProtoVms.Instance instance = protoVms.addInstance();
                instance.setProgram(vm.vm().program());
                vm.vm().writeState(instance.setState());
                instance.setMemoryLimitKb(vm.memoryLimitKb());
                for (int producerId : vm.producerIds()) {
                    instance.addProducerId(producerId);
                }
            }
        }

        /** Appends the packet to {@code sink} if a buffer had a VM. */
        void appendTo(ReadbackSink sink) {
            if (protoVms != null) {
                end().appendTo(sink);
            }
        }
    }

    /** Starts a packet: a new one of the reused buffer (see {@link #service}). */
    private TracePacket begin(long timestamp) {
        trace.reset();
        return service(trace, timestamp);
    }

    /** Ends the packet: its bytes copied where {@link #appendTo} and {@link #toByteArray} find them. */
    private ServicePackets end() {
        trace.get().finalizeMessage();
        size = Math.toIntExact(trace.size());
        if (size > bytes.length) {
            bytes = new byte[Math.max(size, 2 * bytes.length)];
            bytesSegment = MemorySegment.ofArray(bytes);
        }
        trace.buffer().copyTo(bytesSegment, 0);
        return this;
    }

    /** A new packet of {@code trace} with the service's trusted fields, and {@code timestamp} unless negative. */
    private static TracePacket service(HeapBuffered<Trace> trace, long timestamp) {
        TracePacket packet = trace.get().addPacket();
        if (timestamp >= 0) {
            packet.setTimestamp(timestamp);
            packet.setTimestampClockId(BuiltinClock.BUILTIN_CLOCK_BOOTTIME.number());
        }
        packet.setTrustedUid(Os.uid());
        packet.setTrustedPacketSequenceId(TracingSession.SERVICE_SEQUENCE_ID);
        return packet;
    }

    private static void addClock(ClockSnapshot snapshot, BuiltinClock clockId, long timestamp) {
        ClockSnapshot.Clock clock = snapshot.addClocks();
        clock.setClockId(clockId.number());
        clock.setTimestamp(timestamp);
    }

    private static byte[] systemInfoPacket() {
        HeapBuffered<Trace> trace = new HeapBuffered<>(Trace.FACTORY);
        SystemInfo info = service(trace, -1).setSystemInfo();
        Package pkg = ServicePackets.class.getPackage();
        String version = pkg.getImplementationVersion();
        info.setTracingServiceVersion(version == null ? "ffmtrace" : "ffmtrace " + version);
        ThisMachine.describe(info);
        return trace.toByteArray();
    }
}
