package dev.ffmtrace.tracing.service;

import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.ProtoWire;

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
 * reader's to parse. The rules are {@link dev.ffmtrace.protozero.ProtoDecoder}'s, a
 * little stricter than Perfetto's: a field id of 0 or above protobuf's 2^29 - 1 fails
 * too. The packet is checked on the copy a readback's sink makes of it (see
 * {@link ProducerPacket}), read as an array, which is cheap under either JIT: per-byte
 * reads of the buffer's memory segment cost a call each under C1, the daemon's JIT. One
 * instance per reading thread.
 */
final class PacketValidator {
    /** {@link #validate}: the packet must be dropped and counted. */
    static final int INVALID = -1;
    /** Set on every loss, by whoever found it. */
    static final int LOSS_PRESENT = TracePacket.DataLossReason.DATA_LOSS_PRESENT.number();
    /** A producer's writer dropped packets because its SMB had no free chunk. */
    static final int LOSS_SMB_FULL = TracePacket.DataLossReason.DATA_LOSS_SMB_FULL.number();
    /** {@link #readVarInt}: the packet ends before the varint does, or it runs past ten bytes. */
    private static final int MALFORMED = -1;

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

    /** The value of the varint {@link #readVarInt} read last. */
    private long varIntValue;

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
    private static boolean isServiceOnly(long fieldId) {
        return fieldId < SERVICE_ONLY.length && SERVICE_ONLY[(int) fieldId];
    }

    /**
     * Checks the packet {@code packet[offset, end)}.
     *
     * @return {@link #INVALID}, or the loss bits of the producer's own
     *         {@code previous_packet_dropped} fields, or-ed (0 if it wrote none)
     */
    int validate(byte[] packet, int offset, int end) {
        int position = offset;
        int producerLoss = 0;
        while (position < end) {
            position = readVarInt(packet, position, end);
            if (position == MALFORMED) {
                return INVALID;
            }
            long id = varIntValue >>> 3;
            int wireType = (int) varIntValue & 7;
            if (id == 0 || id > ProtoWire.MAX_FIELD_ID || isServiceOnly(id)) {
                return INVALID;
            }
            switch (wireType) {
                case ProtoWire.WIRE_TYPE_VARINT -> {
                    position = readVarInt(packet, position, end);
                    if (position == MALFORMED) {
                        return INVALID;
                    }
                    if (id == TracePacket.PREVIOUS_PACKET_DROPPED_FIELD_NUMBER) {
                        if (!isProducerLoss(varIntValue)) {
                            return INVALID;
                        }
                        producerLoss |= (int) varIntValue;
                    }
                }
                case ProtoWire.WIRE_TYPE_LENGTH_DELIMITED -> {
                    position = readVarInt(packet, position, end);
                    if (position == MALFORMED || Long.compareUnsigned(varIntValue, end - position) > 0) {
                        return INVALID;
                    }
                    position += (int) varIntValue;
                }
                case ProtoWire.WIRE_TYPE_FIXED64 -> position = skipFixed(position, Long.BYTES, end);
                case ProtoWire.WIRE_TYPE_FIXED32 -> position = skipFixed(position, Integer.BYTES, end);
                default -> position = MALFORMED;
            }
            // Another wire type would be read as a packed value by protobuf parsers.
            if (position == MALFORMED
                    || (id == TracePacket.PREVIOUS_PACKET_DROPPED_FIELD_NUMBER && wireType != ProtoWire.WIRE_TYPE_VARINT)) {
                return INVALID;
            }
        }
        return producerLoss;
    }

    private static int skipFixed(int position, int bytes, int end) {
        return end - position < bytes ? MALFORMED : position + bytes;
    }

    /** Reads the varint at {@code position} into {@link #varIntValue}; returns where it ends, or {@link #MALFORMED}. */
    private int readVarInt(byte[] packet, int position, int end) {
        int p = position;
        long result = 0;
        // Ten bytes carry the 64 bits; bits past the 64th are dropped, as protozero does.
        for (int shift = 0; shift < 7 * ProtoWire.MAX_VARINT_SIZE; shift += 7) {
            if (p >= end) {
                return MALFORMED;
            }
            byte b = packet[p++];
            result |= (long) (b & 0x7F) << shift;
            if (b >= 0) {
                varIntValue = result;
                return p;
            }
        }
        return MALFORMED;
    }

    /** No loss, or a loss a producer can know of: PRESENT, alone or with SMB_FULL. */
    private static boolean isProducerLoss(long reasons) {
        return reasons == 0 || reasons == LOSS_PRESENT || reasons == (LOSS_PRESENT | LOSS_SMB_FULL);
    }
}
