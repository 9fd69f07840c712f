package dev.ffmtrace.tracing.service;

import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.ProtoDecoder;
import dev.ffmtrace.protozero.ProtoField;
import dev.ffmtrace.protozero.ProtoWire;
import java.lang.foreign.MemorySegment;

/**
 * The check every packet a producer wrote passes before the service writes it into a
 * trace, as in Perfetto's service: the packet's top-level fields parse, every length
 * within the packet, and none is a field only the service may write. Without it a
 * producer could forge the trusted uid, pid or sequence id, or stats and configs that
 * readers take as the service's; and a last field whose length runs past the packet
 * would swallow the trusted fields the service appends, leaving the forged ones.
 *
 * <p>{@code previous_packet_dropped} is the one loss field a producer may write, with
 * the one cause a producer knows ({@code DATA_LOSS_SMB_FULL}, with
 * {@code DATA_LOSS_PRESENT}); the causes the service's buffer finds are the service's.
 *
 * <p>Only the top level is checked, as Perfetto does: nested messages are the trace
 * reader's to parse. The parse is {@link ProtoDecoder}'s, a little stricter than
 * Perfetto's: a field id of 0 or above protobuf's 2^29 - 1 fails too. The packet is the
 * service's own copy, so it cannot change while it is checked. One instance per reading
 * thread: it reuses its decoder.
 */
final class PacketValidator {
    /** {@link #validate}: the packet must be dropped and counted. */
    static final int INVALID = -1;
    /** Set on every loss, by whoever found it. */
    static final int LOSS_PRESENT = TracePacket.DataLossReason.DATA_LOSS_PRESENT.number();
    /** A producer's writer dropped packets because its SMB had no free chunk. */
    static final int LOSS_SMB_FULL = TracePacket.DataLossReason.DATA_LOSS_SMB_FULL.number();

    /** Top-level fields only the service writes: Perfetto's PacketStreamValidator forbids these. */
    private static final boolean[] SERVICE_ONLY = serviceOnly(
            TracePacket.TRUSTED_UID_FIELD_NUMBER,
            TracePacket.TRUSTED_PACKET_SEQUENCE_ID_FIELD_NUMBER,
            TracePacket.TRUSTED_PID_FIELD_NUMBER,
            TracePacket.TRACE_CONFIG_FIELD_NUMBER,
            TracePacket.TRACE_STATS_FIELD_NUMBER,
            TracePacket.COMPRESSED_PACKETS_FIELD_NUMBER,
            TracePacket.SYNCHRONIZATION_MARKER_FIELD_NUMBER,
            TracePacket.MACHINE_ID_FIELD_NUMBER,
            TracePacket.SERVICE_EVENT_FIELD_NUMBER,
            TracePacket.TRACE_PROVENANCE_FIELD_NUMBER,
            TracePacket.PROTOVMS_FIELD_NUMBER);

    private final ProtoDecoder decoder = new ProtoDecoder();

    private static boolean[] serviceOnly(int... fieldIds) {
        int max = 0;
        for (int id : fieldIds) {
            max = Math.max(max, id);
        }
        boolean[] forbidden = new boolean[max + 1];
        for (int id : fieldIds) {
            forbidden[id] = true;
        }
        return forbidden;
    }

    /** Whether a producer may not write top-level field {@code fieldId}. */
    private static boolean isServiceOnly(int fieldId) {
        return fieldId < SERVICE_ONLY.length && SERVICE_ONLY[fieldId];
    }

    /**
     * Checks the {@code size} bytes at the start of {@code packet}.
     *
     * @return {@link #INVALID}, or the loss bits of the producer's own
     *         {@code previous_packet_dropped} fields, or-ed (0 if it wrote none)
     */
    int validate(MemorySegment packet, long size) {
        decoder.reset(packet, 0, size);
        int producerLoss = 0;
        while (decoder.next()) {
            ProtoField field = decoder.field();
            int id = field.id();
            if (isServiceOnly(id)) {
                return INVALID;
            }
            if (id == TracePacket.PREVIOUS_PACKET_DROPPED_FIELD_NUMBER) {
                // Another wire type would be read as a packed value by protobuf parsers.
                if (field.wireType() != ProtoWire.WIRE_TYPE_VARINT || !isProducerLoss(field.asLong())) {
                    return INVALID;
                }
                producerLoss |= (int) field.asLong();
            }
        }
        return decoder.hasError() ? INVALID : producerLoss;
    }

    /** No loss, or a loss a producer can know of: PRESENT, alone or with SMB_FULL. */
    private static boolean isProducerLoss(long reasons) {
        return reasons == 0 || reasons == LOSS_PRESENT || reasons == (LOSS_PRESENT | LOSS_SMB_FULL);
    }
}
