package dev.ffmtrace.tracing.service;

import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.ProtoWire;
import dev.ffmtrace.tracing.buffer.TracePacketView;

/**
 * A producer's packet as a readback hands it to a {@link ReadbackSink}: its bytes where
 * the buffer holds them, then the fields the service vouches for (uid, sequence id, pid,
 * machine, and the loss found before it). The sink copies it with {@link #copyTo}, which
 * checks the copy ({@link PacketValidator}): a packet is read out of the buffer's segment
 * once, in bulk, and checked as an array. One instance per reading thread, set for each
 * packet.
 */
public final class ProducerPacket {
    /** Every loss bit a producer may report ({@link PacketValidator}). */
    private static final int PRODUCER_LOSSES = PacketValidator.LOSS_PRESENT | PacketValidator.LOSS_SMB_FULL;

    private final PacketValidator validator = new PacketValidator();
    /** The trusted fields, up to the service loss's value. */
    private final byte[] trailer = new byte[64];
    private TracePacketView view;
    private int viewSize;
    private int trailerSize;
    /** The service's loss bits, the trailer's last field; 0 if it has none. */
    private int loss;

    /** Made by the service's readback only. */
    ProducerPacket() {
    }

    /** Sets the packet {@code view} points at, with the loss the service found before it on its sequence. */
    void set(TracePacketView packet, int sequenceId, int serviceLoss) {
        view = packet;
        viewSize = (int) packet.size();
        loss = serviceLoss;
        int size = 0;
        size = putTagAndVarint(trailer, size, TracePacket.TRUSTED_UID_FIELD_NUMBER, packet.clientUid());
        size = putTagAndVarint(trailer, size, TracePacket.TRUSTED_PACKET_SEQUENCE_ID_FIELD_NUMBER,
                Integer.toUnsignedLong(sequenceId));
        if (packet.clientPid() >= 0) {
            // A producer over TCP without a relay has no pid to vouch for; traced leaves the field off too.
            size = putTagAndVarint(trailer, size, TracePacket.TRUSTED_PID_FIELD_NUMBER, packet.clientPid());
        }
        if (packet.clientMachineId() != 0) {
            size = putTagAndVarint(trailer, size, TracePacket.MACHINE_ID_FIELD_NUMBER,
                    Integer.toUnsignedLong(packet.clientMachineId()));
        }
        if (serviceLoss != 0) {
            // Readers keep the last value of the field: the service's, whose value copyTo
            // writes with the producer's own causes, known only once the copy is checked.
            size = ProtoWire.writeVarInt(trailer, size,
                    ProtoWire.makeTag(TracePacket.PREVIOUS_PACKET_DROPPED_FIELD_NUMBER, ProtoWire.WIRE_TYPE_VARINT));
        }
        trailerSize = size;
    }

    /** The most bytes {@link #copyTo} writes: the packet's, then the trusted fields. */
    public int maxSize() {
        return viewSize + trailerSize + (loss == 0 ? 0 : ProtoWire.varIntSize(lossValue(PRODUCER_LOSSES)));
    }

    /**
     * Copies the packet and its trusted fields to {@code into} at {@code at}, where
     * {@link #maxSize} bytes must fit, and checks the copy.
     *
     * @return the bytes written, or -1 if the packet fails the check: it must then be
     *         dropped (what was written there is to be overwritten)
     */
    public int copyTo(byte[] into, int at) {
        view.copyTo(into, at);
        int producerLoss = validator.validate(into, at, at + viewSize);
        if (producerLoss == PacketValidator.INVALID) {
            return -1;
        }
        int end = at + viewSize;
        System.arraycopy(trailer, 0, into, end, trailerSize);
        end += trailerSize;
        if (loss != 0) {
            end = ProtoWire.writeVarInt(into, end, lossValue(producerLoss));
        }
        return end - at;
    }

    private long lossValue(int producerLoss) {
        return Integer.toUnsignedLong(loss | producerLoss);
    }

    private static int putTagAndVarint(byte[] into, int at, int field, long value) {
        return ProtoWire.writeVarInt(into, ProtoWire.writeVarInt(into, at,
                ProtoWire.makeTag(field, ProtoWire.WIRE_TYPE_VARINT)), value);
    }
}
