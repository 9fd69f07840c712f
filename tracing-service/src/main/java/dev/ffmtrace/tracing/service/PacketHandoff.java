package dev.ffmtrace.tracing.service;

import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.ProtoWire;
import dev.ffmtrace.tracing.buffer.TraceBufferV2;
import dev.ffmtrace.tracing.buffer.TracePacketView;
import java.util.HashMap;
import java.util.Map;

/**
 * Hands a buffer's packets to a {@link ReadbackSink}, a bounded batch at a time: each
 * checked where the buffer holds it ({@link PacketValidator}) and given the fields the
 * service vouches for (uid, sequence id, pid, machine, and the loss found before it). The
 * caller holds the buffer's lock, or owns a read-only clone. One instance per reading
 * thread: it reuses its view and scratch.
 */
final class PacketHandoff {
    /** Bytes of packets handed to a sink per batch, so per turn of a buffer's lock. */
    static final int BATCH_BYTES = 1 << 20;

    /**
     * What reading packets carries from one to the next: the packets dropped as invalid,
     * and the loss each left on its sequence, reported by that sequence's next packet.
     */
    static final class ReadState {
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

    private final TracePacketView view = new TracePacketView();
    private final PacketValidator validator = new PacketValidator();
    /** The trusted fields appended to a packet. */
    private final byte[] trailer = new byte[64];

    /** The trusted sequence id of a producer's writer: unique within the service. */
    static int sequenceId(int producerId, int writerId) {
        return (producerId << 16) | writerId;
    }

    /**
     * Hands packets of {@code buffer} to {@code sink} until about {@link #BATCH_BYTES}
     * wait in it, or it is full. The buffer may hold more when the batch filled:
     * {@code sink.pending() >= BATCH_BYTES}.
     *
     * @return the number of packets handed
     */
    int handBatch(TraceBufferV2 buffer, ReadState state, ReadbackSink sink) {
        int handed = 0;
        buffer.beginRead();
        while (sink.pending() < BATCH_BYTES) {
            if (!buffer.readNextTracePacket(view)) {
                break;
            }
            if (hand(state, sink)) {
                handed++;
            } else if (sink.isFull()) {
                break;
            }
        }
        return handed;
    }

    /**
     * Hands the packet in {@link #view} to the sink with its trusted fields unless it fails
     * validation or does not fit the sink (it is then lost, as in Perfetto, and the sink is
     * full); returns whether it did.
     */
    private boolean hand(ReadState state, ReadbackSink sink) {
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

    private static int putTagAndVarint(byte[] into, int at, int field, long value) {
        return ProtoWire.writeVarInt(into, ProtoWire.writeVarInt(into, at,
                ProtoWire.makeTag(field, ProtoWire.WIRE_TYPE_VARINT)), value);
    }
}
