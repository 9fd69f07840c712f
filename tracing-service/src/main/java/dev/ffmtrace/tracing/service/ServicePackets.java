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
import java.util.List;

/**
 * The packets the service writes itself, each a one-packet {@code Trace} ready to be
 * appended to a trace file, on sequence {@link TracingSession#SERVICE_SEQUENCE_ID} with
 * the service's uid and, as Perfetto's service does, timestamps declared BOOTTIME.
 */
final class ServicePackets {
    /** What this machine is, read once: it does not change while the process runs. */
    private static final byte[] SYSTEM_INFO = systemInfoPacket();
    /** Rounds of clock reads a snapshot takes at most. */
    static final int SNAPSHOT_ROUNDS = 8;
    /** A round of reads this short is kept at once. */
    static final long TIGHT_ROUND_NANOS = 2_000;

    private ServicePackets() {
    }

    /**
     * A {@code clock_snapshot} of BOOTTIME, MONOTONIC, MONOTONIC_RAW and REALTIME. Every
     * clock is read before anything is encoded, so that they describe one instant.
     * MONOTONIC goes first: BOOTTIME is MONOTONIC plus the time suspended, and read right
     * after it can never come out smaller. A round of reads that a safepoint, a cold
     * downcall or the scheduler stretched would put the clocks hundreds of microseconds
     * apart (moving, say, JFR's REALTIME events against the SDK's MONOTONIC ones), so up
     * to {@value #SNAPSHOT_ROUNDS} rounds are read, MONOTONIC again at each end, and the
     * shortest is kept; one under {@value #TIGHT_ROUND_NANOS} ns ends the search.
     */
    static byte[] clockSnapshot() {
        long monotonic = 0;
        long boottime = 0;
        long monotonicRaw = 0;
        long realtime = 0;
        long shortest = Long.MAX_VALUE;
        for (int round = 0; round < SNAPSHOT_ROUNDS && shortest > TIGHT_ROUND_NANOS; round++) {
            long roundMonotonic = Os.clockNanos(Os.CLOCK_MONOTONIC);
            long roundBoottime = Os.clockNanos(Os.CLOCK_BOOTTIME);
            long roundMonotonicRaw = Os.clockNanos(Os.CLOCK_MONOTONIC_RAW);
            long roundRealtime = Os.clockNanos(Os.CLOCK_REALTIME);
            long took = Os.clockNanos(Os.CLOCK_MONOTONIC) - roundMonotonic;
            if (took < shortest) {
                shortest = took;
                monotonic = roundMonotonic;
                boottime = roundBoottime;
                monotonicRaw = roundMonotonicRaw;
                realtime = roundRealtime;
            }
        }
        HeapBuffered<Trace> trace = new HeapBuffered<>(Trace.FACTORY);
        TracePacket packet = service(trace, boottime);
        ClockSnapshot snapshot = packet.setClockSnapshot();
        addClock(snapshot, BuiltinClock.BUILTIN_CLOCK_BOOTTIME, boottime);
        addClock(snapshot, BuiltinClock.BUILTIN_CLOCK_MONOTONIC, monotonic);
        addClock(snapshot, BuiltinClock.BUILTIN_CLOCK_MONOTONIC_RAW, monotonicRaw);
        addClock(snapshot, BuiltinClock.BUILTIN_CLOCK_REALTIME, realtime);
        snapshot.setPrimaryTraceClock(BuiltinClock.BUILTIN_CLOCK_BOOTTIME);
        return trace.toByteArray();
    }

    /** The session's {@code trace_config}, as given. */
    static byte[] traceConfig(SessionConfig config) {
        HeapBuffered<Trace> trace = new HeapBuffered<>(Trace.FACTORY);
        TracePacket packet = service(trace, -1);
        packet.appendBytes(TracePacket.TRACE_CONFIG_FIELD_NUMBER, config.traceConfig());
        return trace.toByteArray();
    }

    /** The session's {@code trace_uuid}. */
    static byte[] traceUuid(long msb, long lsb) {
        HeapBuffered<Trace> trace = new HeapBuffered<>(Trace.FACTORY);
        TraceUuid uuid = service(trace, -1).setTraceUuid();
        uuid.setMsb(msb);
        uuid.setLsb(lsb);
        return trace.toByteArray();
    }

    /** {@code system_info}: uname, page size, CPUs, time zone and the service's version. */
    static byte[] systemInfo() {
        return SYSTEM_INFO;
    }

    /**
     * A {@code service_event} with the bool field {@code eventField} of
     * {@code TracingServiceEvent} set, stamped {@code bootTimeNanos}.
     */
    static byte[] serviceEvent(int eventField, long bootTimeNanos) {
        HeapBuffered<Trace> trace = new HeapBuffered<>(Trace.FACTORY);
        service(trace, bootTimeNanos).setServiceEvent().appendVarInt(eventField, 1);
        return trace.toByteArray();
    }

    /** A {@code trigger} the session received, stamped when it came. */
    static byte[] trigger(TriggerHit hit) {
        HeapBuffered<Trace> trace = new HeapBuffered<>(Trace.FACTORY);
        fill(service(trace, hit.bootTimeNanos()).setTrigger(), hit);
        return trace.toByteArray();
    }

    /** A clone's {@code clone_snapshot_trigger}: the CLONE_SNAPSHOT trigger it was made for. */
    static byte[] cloneSnapshotTrigger(TriggerHit hit) {
        HeapBuffered<Trace> trace = new HeapBuffered<>(Trace.FACTORY);
        fill(service(trace, hit.bootTimeNanos()).setCloneSnapshotTrigger(), hit);
        return trace.toByteArray();
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
    static byte[] stats(List<TraceBufferStats> buffers, long chunksDiscarded, long invalidPackets,
                        TracingService.ProducerCounts producers) {
        HeapBuffered<Trace> trace = new HeapBuffered<>(Trace.FACTORY);
        TraceStats stats = service(trace, -1).setTraceStats();
        for (TraceBufferStats bufferStats : buffers) {
            bufferStats.writeTo(stats.addBufferStats());
        }
        stats.setProducersConnected(producers.connected());
        stats.setProducersSeen(producers.seen());
        stats.setChunksDiscarded(chunksDiscarded);
        stats.setInvalidPackets(invalidPackets);
        return trace.toByteArray();
    }

    /**
     * {@code trace_provenance}: for each of the session's buffers, in config order, the
     * sequences it holds and their producers (each a {@link TraceBufferV2#sequences()} key),
     * so a reader can tell whose packets a sequence carries.
     */
    static byte[] traceProvenance(List<long[]> sequencesPerBuffer) {
        HeapBuffered<Trace> trace = new HeapBuffered<>(Trace.FACTORY);
        TraceProvenance provenance = service(trace, Os.clockNanos(Os.CLOCK_BOOTTIME)).setTraceProvenance();
        for (long[] sequences : sequencesPerBuffer) {
            TraceProvenance.Buffer buffer = provenance.addBuffers();
            for (long key : sequences) {
                int producerId = (int) (key >>> 32);
                TraceProvenance.Sequence sequence = buffer.addSequences();
                sequence.setId(PacketHandoff.sequenceId(producerId, (int) key));
                sequence.setProducerId(producerId);
            }
        }
        return trace.toByteArray();
    }

    /**
     * Builds the {@code protovms} packet: each ProtoVM of the session's buffers, with the
     * state it holds when added. No VM, no packet.
     */
    static final class ProtoVmsPacket {
        private final HeapBuffered<Trace> trace = new HeapBuffered<>(Trace.FACTORY);
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

        /** The packet, or null if no buffer had a VM. */
        byte[] toByteArray() {
            return protoVms == null ? null : trace.toByteArray();
        }
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
