package dev.ffmtrace.tracing.service;

import dev.ffmtrace.perfetto.protos.TracingServiceEvent;
import dev.ffmtrace.tracing.buffer.TraceBufferStats;
import dev.ffmtrace.tracing.buffer.TraceBufferV2;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * A session's readback: its buffers into a trace ({@link TracingSession} describes the
 * trace), consuming ({@link #consume}) or into read-only clones ({@link #cloneBuffers}).
 * A consuming read hands each packet ({@link PacketHandoff}) to a {@link ReadbackSink}
 * under the buffer's lock, which copies it once, a bounded batch at a time; the sink
 * writes the batch after the lock is released: a slow output never stalls the producers'
 * commits.
 * Not thread-safe: the session runs one readback at a time.
 */
final class TraceReadback {
    /** The packets a trace begins with, after a clock snapshot: the session's config, the trace's identity, the machines. */
    record FirstPackets(SessionConfig config, TracingService service) {
        void write(ServicePackets packets, ReadbackSink sink, long uuidMsb, long uuidLsb, List<long[]> sequences) {
            packets.traceConfig(config).appendTo(sink);
            packets.traceUuid(uuidMsb, uuidLsb).appendTo(sink);
            packets.traceProvenance(sequences).appendTo(sink);
            byte[] systemInfo = ServicePackets.systemInfo();
            sink.appendFramed(systemInfo, 0, systemInfo.length);
            appendAll(sink, service.relays().systemInfoPackets());
        }
    }

    private final TracingService service;
    private final SessionConfig config;
    private final List<ServiceBuffer> buffers;
    private final ServiceEventLog events;
    private final SessionTriggers triggers;
    private final long uuidMsb;
    private final long uuidLsb;
    private final FirstPackets firstPackets;
    private final PacketHandoff handoff = new PacketHandoff();
    /** Encodes the service's packets of each readback, and of each snapshot, which is written within one's turn. */
    private final ServicePackets packets = new ServicePackets();
    /** The buffers' stats for the stats packet that ends a consuming readback, refilled by each. */
    private final List<TraceBufferStats> bufferStats = new ArrayList<>();
    /** What consuming readbacks carry from one to the next. */
    private final PacketHandoff.ReadState consuming = new PacketHandoff.ReadState();
    /** The clock snapshot taken when the session started, for the first trace. */
    private byte[] initialClockSnapshot;
    private boolean initialPacketsWritten;
    private boolean remoteClockSyncWritten;

    TraceReadback(TracingService service, SessionConfig config, List<ServiceBuffer> buffers, ServiceEventLog events,
                  SessionTriggers triggers) {
        this.service = service;
        this.config = config;
        this.buffers = buffers;
        this.events = events;
        this.triggers = triggers;
        this.firstPackets = new FirstPackets(config, service);
        UUID uuid = UUID.randomUUID();
        this.uuidMsb = uuid.getMostSignificantBits();
        this.uuidLsb = uuid.getLeastSignificantBits();
    }

    /** The session started: its first trace begins with {@code clocks}. */
    void begin(byte[] clocks) {
        initialClockSnapshot = clocks;
    }

    /** Packets consuming readbacks dropped because they failed validation. */
    long invalidPackets() {
        return consuming.invalidPackets;
    }

    /**
     * One consuming readback into {@code sink}: the service's packets, then every
     * producer's packet the buffers hold (as much as the sink takes), then the stats.
     *
     * @return the number of producers' packets written
     */
    long consume(ReadbackSink sink) throws IOException {
        if (initialClockSnapshot != null) {
            sink.appendFramed(initialClockSnapshot, 0, initialClockSnapshot.length);
            initialClockSnapshot = null;
        }
        packets.clockSnapshot().appendTo(sink);
        boolean first = !initialPacketsWritten;
        if (first) {
            List<long[]> sequences = new ArrayList<>();
            for (ServiceBuffer buffer : buffers) {
                buffer.lock.lock();
                try {
                    sequences.add(buffer.buffer.sequences());
                } finally {
                    buffer.lock.unlock();
                }
            }
            firstPackets.write(packets, sink, uuidMsb, uuidLsb, sequences);
            initialPacketsWritten = true;
        }
        appendAll(sink, triggers.takeUnwrittenPackets());
        events.writeUnwritten(packets, sink);
        writeRemoteClockSyncOnce(sink);
        if (first) {
            // The VMs' states at the first readback, once per session, as Perfetto writes them.
            ServicePackets.ProtoVmsPacket protoVms = packets.protoVms();
            for (ServiceBuffer buffer : buffers) {
                buffer.lock.lock();
                try {
                    protoVms.add(buffer.buffer.protoVms());
                } finally {
                    buffer.lock.unlock();
                }
            }
            protoVms.appendTo(sink);
        }
        long handed = 0;
        // Indexed: a steady readback allocates no iterator.
        for (int i = 0; i < buffers.size(); i++) {
            ServiceBuffer buffer = buffers.get(i);
            boolean more = true;
            while (more && !sink.isFull()) {
                buffer.lock.lock();
                try {
                    handed += handoff.handBatch(buffer.buffer, consuming, sink);
                } finally {
                    buffer.lock.unlock();
                }
                more = sink.pending() >= PacketHandoff.BATCH_BYTES;
                sink.flush();
            }
        }
        events.record(TracingServiceEvent.READ_TRACING_BUFFERS_COMPLETED_FIELD_NUMBER);
        events.writeUnwritten(packets, sink);
        writeStats(sink);
        sink.flush();
        return handed;
    }

    /** The {@code trace_stats} packet: each buffer's stats, read under its lock, and the session's counts. */
    private void writeStats(ReadbackSink sink) {
        bufferStats.clear();
        long chunksDiscarded = 0;
        for (int i = 0; i < buffers.size(); i++) {
            ServiceBuffer buffer = buffers.get(i);
            buffer.lock.lock();
            try {
                bufferStats.add(buffer.buffer.stats());
                chunksDiscarded += buffer.chunksDiscarded;
            } finally {
                buffer.lock.unlock();
            }
        }
        packets.stats(bufferStats, chunksDiscarded, consuming.invalidPackets, service.producerCounts()).appendTo(sink);
    }

    /** The remote machines' clock exchanges, once per session: at its first readback while any relay is connected. */
    private void writeRemoteClockSyncOnce(ReadbackSink sink) {
        if (remoteClockSyncWritten || service.relays().isEmpty()) {
            return;
        }
        appendAll(sink, service.relays().clockSyncPackets());
        remoteClockSyncWritten = true;
    }

    /** Appends packets encoded before; indexed, so that an empty list costs no iterator. */
    static void appendAll(ReadbackSink sink, List<byte[]> framedPackets) {
        for (int i = 0; i < framedPackets.size(); i++) {
            byte[] packet = framedPackets.get(i);
            sink.appendFramed(packet, 0, packet.length);
        }
    }

    /**
     * A clone for a snapshot, which this thread writes and closes before its readback's
     * turn ends: it uses the readback's encoder and handoff, and a confined arena, which
     * spares the shared arena's handshake when freed.
     */
    SessionClone snapshot(List<byte[]> triggerPackets) {
        return cloneBuffers(triggerPackets, null, Arena.ofConfined(), packets, handoff);
    }

    /**
     * A clone that outlives the readback's turn: written and freed by any thread, so with
     * memory of a shared arena, and an encoder and handoff of its own.
     */
    SessionClone cloneBuffers(List<byte[]> triggerPackets, TriggerHit cloneTrigger) {
        return cloneBuffers(triggerPackets, cloneTrigger, Arena.ofShared(), new ServicePackets(), new PacketHandoff());
    }

    /**
     * Clones what the buffers hold now, read-only, each under its lock, without consuming
     * it: for a snapshot or a clone. {@code triggerPackets} are the session's triggers to
     * write; {@code cloneTrigger}, if not null, the CLONE_SNAPSHOT trigger the clone is
     * made for; {@code arena}, the clone's memory, which the clone closes; {@code packets}
     * and {@code handoff}, what writes the clone.
     */
    private SessionClone cloneBuffers(List<byte[]> triggerPackets, TriggerHit cloneTrigger, Arena arena,
                                      ServicePackets packets, PacketHandoff handoff) {
        try {
            List<TraceBufferV2> clones = new ArrayList<>();
            List<TraceBufferStats> clonedStats = new ArrayList<>();
            long discarded = 0;
            for (ServiceBuffer buffer : buffers) {
                buffer.lock.lock();
                try {
                    clones.add(buffer.buffer.cloneReadOnly(arena));
                    clonedStats.add(buffer.buffer.stats());
                    discarded += buffer.chunksDiscarded;
                } finally {
                    buffer.lock.unlock();
                }
            }
            List<byte[]> leading = new ArrayList<>();
            if (cloneTrigger != null) {
                leading.add(packets.cloneSnapshotTrigger(cloneTrigger).toByteArray());
            }
            leading.addAll(triggerPackets);
            leading.addAll(events.milestones());
            UUID uuid = UUID.randomUUID();
            // The clones' packets are read again by consuming reads: the clone counts on a state of its own.
            return new SessionClone(arena, List.copyOf(clones), List.copyOf(clonedStats), discarded,
                    uuid.getMostSignificantBits(), uuid.getLeastSignificantBits(), List.copyOf(leading),
                    consuming.copy(), firstPackets, service, packets, handoff);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }
}
