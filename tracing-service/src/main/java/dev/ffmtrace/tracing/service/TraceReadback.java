package dev.ffmtrace.tracing.service;

import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TracingServiceEvent;
import dev.ffmtrace.protozero.ProtoWire;
import dev.ffmtrace.tracing.buffer.TraceBufferStats;
import dev.ffmtrace.tracing.buffer.TraceBufferV2;
import dev.ffmtrace.tracing.buffer.TracePacketView;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.channels.WritableByteChannel;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * A session's readback: its buffers into a trace ({@link TracingSession} describes the
 * trace), consuming ({@link #consume}) or from read-only clones ({@link #copy}). Each
 * packet is checked where the buffer holds it and handed to a {@link ReadbackSink} under
 * the buffer's lock, which copies it once, a bounded batch at a time; the sink writes
 * the batch after the lock is released: a slow output never stalls the producers' commits.
 * Not thread-safe: the session runs one readback at a time.
 */
final class TraceReadback {
    /** Bytes of packets handed to a sink per turn of a buffer's lock. */
    private static final int STAGING_BATCH = 1 << 20;

    /**
     * What reading packets carries from one to the next: the packets dropped as invalid,
     * and the loss each left on its sequence, reported by that sequence's next packet.
     */
    private static final class ReadState {
        /** Read without the session's readback turn, for {@link TracingSession#invalidPackets()}. */
        volatile long invalidPackets;
        final Map<Integer, Integer> pendingLoss = new HashMap<>();

        ReadState copy() {
            ReadState copy = new ReadState();
            copy.invalidPackets = invalidPackets;
            copy.pendingLoss.putAll(pendingLoss);
            return copy;
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
    private final TracePacketView view = new TracePacketView();
    private final PacketValidator validator = new PacketValidator();
    /** What consuming readbacks carry from one to the next. */
    private final ReadState consuming = new ReadState();
    /** The clock snapshot taken when the session started, for the first trace. */
    private byte[] initialClockSnapshot;
    private boolean initialPacketsWritten;
    private boolean remoteClockSyncWritten;
    /** The trusted fields appended to a packet. */
    private final byte[] trailer = new byte[64];

    TraceReadback(TracingService service, SessionConfig config, List<ServiceBuffer> buffers, ServiceEventLog events,
                  SessionTriggers triggers, Supplier<List<TraceBufferStats>> stats, LongSupplier chunksDiscarded) {
        this.service = service;
        this.config = config;
        this.buffers = buffers;
        this.events = events;
        this.triggers = triggers;
        this.stats = stats;
        this.chunksDiscarded = chunksDiscarded;
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
            writeInitialPackets(sink, uuidMsb, uuidLsb, sequences);
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
                    packets += stage(buffer.buffer, consuming, sink);
                } finally {
                    buffer.lock.unlock();
                }
                more = sink.pending() >= STAGING_BATCH;
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

    private void writeInitialPackets(ReadbackSink sink, long msb, long lsb, List<long[]> sequences) throws IOException {
        sink.appendFramed(ServicePackets.traceConfig(config));
        sink.appendFramed(ServicePackets.traceUuid(msb, lsb));
        sink.appendFramed(ServicePackets.traceProvenance(sequences));
        sink.appendFramed(ServicePackets.systemInfo());
        for (byte[] packet : service.relays().systemInfoPackets()) {
            sink.appendFramed(packet);
        }
    }

    /** The remote machines' clock exchanges, once per session: at its first readback while any relay is connected. */
    private void writeRemoteClockSyncOnce(ReadbackSink sink) throws IOException {
        if (remoteClockSyncWritten || service.relays().isEmpty()) {
            return;
        }
        for (byte[] packet : service.relays().clockSyncPackets()) {
            sink.appendFramed(packet);
        }
        remoteClockSyncWritten = true;
    }

    private static void writeIfAny(ReadbackSink sink, byte[] packet) throws IOException {
        if (packet != null) {
            sink.appendFramed(packet);
        }
    }

    private void writeEvents(ReadbackSink sink) throws IOException {
        for (byte[] event : events.takeUnwritten()) {
            sink.appendFramed(event);
        }
    }

    /**
     * Writes what the buffers hold now into {@code out} as a whole trace, from read-only
     * clones made under each buffer's lock, without consuming it: the snapshot's and
     * clone's readback. {@code triggerPackets} are the session's triggers to write;
     * {@code cloneTrigger}, if not null, the CLONE_SNAPSHOT trigger the copy is made for.
     *
     * @return the number of producers' packets written
     */
    long copy(WritableByteChannel out, List<byte[]> triggerPackets, TriggerHit cloneTrigger) throws IOException {
        ReadbackSink sink = new TraceSink(out, Long.MAX_VALUE);
        try (Arena arena = Arena.ofConfined()) {
            List<TraceBufferV2> clones = new ArrayList<>();
            List<TraceBufferStats> clonedStats = new ArrayList<>();
            long chunksDiscarded = 0;
            for (ServiceBuffer buffer : buffers) {
                buffer.lock.lock();
                try {
                    clones.add(buffer.buffer.cloneReadOnly(arena));
                    clonedStats.add(buffer.buffer.stats());
                    chunksDiscarded += buffer.chunksDiscarded;
                } finally {
                    buffer.lock.unlock();
                }
            }
            sink.appendFramed(ServicePackets.clockSnapshot());
            UUID uuid = UUID.randomUUID();
            List<long[]> sequences = new ArrayList<>();
            ServicePackets.ProtoVmsPacket protoVms = new ServicePackets.ProtoVmsPacket();
            for (TraceBufferV2 clone : clones) {
                sequences.add(clone.sequences());
                protoVms.add(clone.protoVms());
            }
            writeInitialPackets(sink, uuid.getMostSignificantBits(), uuid.getLeastSignificantBits(), sequences);
            if (cloneTrigger != null) {
                sink.appendFramed(ServicePackets.cloneSnapshotTrigger(cloneTrigger));
            }
            for (byte[] packet : triggerPackets) {
                sink.appendFramed(packet);
            }
            for (byte[] event : events.milestones()) {
                sink.appendFramed(event);
            }
            writeIfAny(sink, protoVms.toByteArray());
            // The clones' packets are read again by consuming reads: the copy counts on a state of its own.
            ReadState copying = consuming.copy();
            long packets = 0;
            for (TraceBufferV2 clone : clones) {
                boolean more = true;
                while (more) {
                    packets += stage(clone, copying, sink);
                    more = sink.pending() >= STAGING_BATCH;
                    sink.flush();
                }
            }
            sink.appendFramed(ServicePackets.stats(clonedStats, chunksDiscarded, copying.invalidPackets,
                    service.producerCounts()));
            sink.flush();
            return packets;
        }
    }

    /**
     * Hands packets of {@code buffer} to {@code sink} until about {@link #STAGING_BATCH}
     * bytes wait in it, or it is full. The buffer may hold more when the batch filled.
     *
     * @return the number of packets handed
     */
    private int stage(TraceBufferV2 buffer, ReadState state, ReadbackSink sink) {
        int staged = 0;
        buffer.beginRead();
        while (sink.pending() < STAGING_BATCH) {
            if (!buffer.readNextTracePacket(view)) {
                break;
            }
            if (stagePacket(state, sink)) {
                staged++;
            } else if (sink.isFull()) {
                break;
            }
        }
        return staged;
    }

    /**
     * Hands the packet in {@link #view} to the sink with its trusted fields unless it fails
     * validation or does not fit the sink (it is then lost, as in Perfetto, and the sink is
     * full); returns whether it did.
     */
    private boolean stagePacket(ReadState state, ReadbackSink sink) {
        int sequenceId = sequenceId(view.producerId(), view.writerId());
        int loss = view.previousPacketDroppedReasons();
        int producerLoss = validator.validate(view);
        if (producerLoss == PacketValidator.INVALID) {
            state.invalidPackets++;
            state.pendingLoss.merge(sequenceId, loss | PacketValidator.LOSS_PRESENT, (a, b) -> a | b);
            return false;
        }
        if (!state.pendingLoss.isEmpty()) {
            Integer pending = state.pendingLoss.remove(sequenceId);
            loss |= pending == null ? 0 : pending;
        }
        int trailerSize = 0;
        trailerSize = putTagAndVarint(trailer, trailerSize, TracePacket.TRUSTED_UID_FIELD_NUMBER, view.clientUid());
        trailerSize = putTagAndVarint(trailer, trailerSize, TracePacket.TRUSTED_PACKET_SEQUENCE_ID_FIELD_NUMBER,
                Integer.toUnsignedLong(sequenceId));
        if (view.clientPid() >= 0) {
            // A producer over TCP without a relay has no pid to vouch for; traced leaves the field off too.
            trailerSize = putTagAndVarint(trailer, trailerSize, TracePacket.TRUSTED_PID_FIELD_NUMBER, view.clientPid());
        }
        if (view.clientMachineId() != 0) {
            trailerSize = putTagAndVarint(trailer, trailerSize, TracePacket.MACHINE_ID_FIELD_NUMBER,
                    Integer.toUnsignedLong(view.clientMachineId()));
        }
        if (loss != 0) {
            // Readers keep the last value of the field: the service's, which must then carry the producer's cause too.
            trailerSize = putTagAndVarint(trailer, trailerSize, TracePacket.PREVIOUS_PACKET_DROPPED_FIELD_NUMBER,
                    Integer.toUnsignedLong(loss | producerLoss));
        }
        return sink.append(view, trailer, trailerSize);
    }

    /** The trusted sequence id of a producer's writer: unique within the service. */
    static int sequenceId(int producerId, int writerId) {
        return (producerId << 16) | writerId;
    }

    private static int putTagAndVarint(byte[] into, int at, int field, long value) {
        return ProtoWire.writeVarInt(into, ProtoWire.writeVarInt(into, at,
                ProtoWire.makeTag(field, ProtoWire.WIRE_TYPE_VARINT)), value);
    }
}
