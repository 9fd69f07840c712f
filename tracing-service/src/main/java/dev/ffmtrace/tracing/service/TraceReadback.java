package dev.ffmtrace.tracing.service;

import dev.ffmtrace.perfetto.protos.TracingServiceEvent;
import dev.ffmtrace.tracing.buffer.TraceBufferStats;
import dev.ffmtrace.tracing.buffer.TraceBufferV2;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

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
        void write(ReadbackSink sink, long uuidMsb, long uuidLsb, List<long[]> sequences) {
            sink.appendFramed(ServicePackets.traceConfig(config));
            sink.appendFramed(ServicePackets.traceUuid(uuidMsb, uuidLsb));
            sink.appendFramed(ServicePackets.traceProvenance(sequences));
            sink.appendFramed(ServicePackets.systemInfo());
            for (byte[] packet : service.relays().systemInfoPackets()) {
                sink.appendFramed(packet);
            }
        }
    }

    private final TracingService service;
    private final SessionConfig config;
    private final List<ServiceBuffer> buffers;
    private final ServiceEventLog events;
    private final SessionTriggers triggers;
    private final long uuidMsb;
    private final long uuidLsb;
    /** The buffers' stats and chunks discarded, for the stats packet that ends a consuming readback. */
    private final Supplier<List<TraceBufferStats>> stats;
    private final LongSupplier chunksDiscarded;
    private final FirstPackets firstPackets;
    private final PacketHandoff handoff = new PacketHandoff();
    /** What consuming readbacks carry from one to the next. */
    private final PacketHandoff.ReadState consuming = new PacketHandoff.ReadState();
    /** The clock snapshot taken when the session started, for the first trace. */
    private byte[] initialClockSnapshot;
    private boolean initialPacketsWritten;
    private boolean remoteClockSyncWritten;

    TraceReadback(TracingService service, SessionConfig config, List<ServiceBuffer> buffers, ServiceEventLog events,
                  SessionTriggers triggers, Supplier<List<TraceBufferStats>> stats, LongSupplier chunksDiscarded) {
        this.service = service;
        this.config = config;
        this.buffers = buffers;
        this.events = events;
        this.triggers = triggers;
        this.stats = stats;
        this.chunksDiscarded = chunksDiscarded;
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
            sink.appendFramed(initialClockSnapshot);
            initialClockSnapshot = null;
        }
        sink.appendFramed(ServicePackets.clockSnapshot());
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
            firstPackets.write(sink, uuidMsb, uuidLsb, sequences);
            initialPacketsWritten = true;
        }
        for (byte[] packet : triggers.takeUnwrittenPackets()) {
            sink.appendFramed(packet);
        }
        writeEvents(sink);
        writeRemoteClockSyncOnce(sink);
        if (first) {
            // The VMs' states at the first readback, once per session, as Perfetto writes them.
            ServicePackets.ProtoVmsPacket protoVms = new ServicePackets.ProtoVmsPacket();
            for (ServiceBuffer buffer : buffers) {
                buffer.lock.lock();
                try {
                    protoVms.add(buffer.buffer.protoVms());
                } finally {
                    buffer.lock.unlock();
                }
            }
            writeIfAny(sink, protoVms.toByteArray());
        }
        long packets = 0;
        for (ServiceBuffer buffer : buffers) {
            boolean more = true;
            while (more && !sink.isFull()) {
                buffer.lock.lock();
                try {
                    packets += handoff.handBatch(buffer.buffer, consuming, sink);
                } finally {
                    buffer.lock.unlock();
                }
                more = sink.pending() >= PacketHandoff.BATCH_BYTES;
                sink.flush();
            }
        }
        events.record(TracingServiceEvent.READ_TRACING_BUFFERS_COMPLETED_FIELD_NUMBER);
        writeEvents(sink);
        sink.appendFramed(ServicePackets.stats(stats.get(), chunksDiscarded.getAsLong(), consuming.invalidPackets,
                service.producerCounts()));
        sink.flush();
        return packets;
    }

    /** The remote machines' clock exchanges, once per session: at its first readback while any relay is connected. */
    private void writeRemoteClockSyncOnce(ReadbackSink sink) {
        if (remoteClockSyncWritten || service.relays().isEmpty()) {
            return;
        }
        for (byte[] packet : service.relays().clockSyncPackets()) {
            sink.appendFramed(packet);
        }
        remoteClockSyncWritten = true;
    }

    private static void writeIfAny(ReadbackSink sink, byte[] packet) {
        if (packet != null) {
            sink.appendFramed(packet);
        }
    }

    private void writeEvents(ReadbackSink sink) {
        for (byte[] event : events.takeUnwritten()) {
            sink.appendFramed(event);
        }
    }

    /**
     * Clones what the buffers hold now, read-only, each under its lock, without consuming
     * it: for a snapshot or a clone. {@code triggerPackets} are the session's triggers to
     * write; {@code cloneTrigger}, if not null, the CLONE_SNAPSHOT trigger the clone is
     * made for; {@code arena}, the clone's memory, which the clone closes.
     */
    SessionClone cloneBuffers(List<byte[]> triggerPackets, TriggerHit cloneTrigger, Arena arena) {
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
                leading.add(ServicePackets.cloneSnapshotTrigger(cloneTrigger));
            }
            leading.addAll(triggerPackets);
            leading.addAll(events.milestones());
            UUID uuid = UUID.randomUUID();
            // The clones' packets are read again by consuming reads: the clone counts on a state of its own.
            return new SessionClone(arena, List.copyOf(clones), List.copyOf(clonedStats), discarded,
                    uuid.getMostSignificantBits(), uuid.getLeastSignificantBits(), List.copyOf(leading),
                    consuming.copy(), firstPackets, service);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }
}
