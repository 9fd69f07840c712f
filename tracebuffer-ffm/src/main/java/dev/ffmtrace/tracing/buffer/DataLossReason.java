package dev.ffmtrace.tracing.buffer;

import dev.ffmtrace.perfetto.protos.TracePacket;

/**
 * Bits of {@link TracePacketView#previousPacketDroppedReasons()}: why data was lost on
 * a sequence before the packet that carries them. Any loss sets {@link #PRESENT} plus
 * its causes, on the next packet read from that sequence only. The values are those of
 * Perfetto's {@code TracePacket.DataLossReason}, which the service writes unchanged into
 * {@code previous_packet_dropped}.
 */
public final class DataLossReason {
    /** Some data was lost; set together with at least one cause. */
    public static final int PRESENT = TracePacket.DataLossReason.DATA_LOSS_PRESENT.number();
    /** The chunk read after the last consumed one does not have the next chunk id. */
    public static final int READ_GAP = TracePacket.DataLossReason.DATA_LOSS_READ_GAP.number();
    /** A chunk's fragments stopped parsing part way (bad size varint, size past the chunk). */
    public static final int CHUNK_CORRUPTED = TracePacket.DataLossReason.DATA_LOSS_CHUNK_CORRUPTED.number();
    /** A continuation fragment whose beginning is not in the buffer. */
    public static final int ORPHAN_CONTINUATION = TracePacket.DataLossReason.DATA_LOSS_ORPHAN_CONTINUATION.number();
    /** A chunk id is missing inside a fragmented packet. */
    public static final int REASSEMBLY_GAP = TracePacket.DataLossReason.DATA_LOSS_REASSEMBLY_GAP.number();
    /** The next chunk does not continue a fragmented packet although its id is contiguous. */
    public static final int REASSEMBLY_BROKEN_CHAIN =
            TracePacket.DataLossReason.DATA_LOSS_REASSEMBLY_BROKEN_CHAIN.number();
    /** Unread packets were overwritten by the ring buffer. */
    public static final int OVERWRITE = TracePacket.DataLossReason.DATA_LOSS_OVERWRITE.number();
    /** The trace writer abandoned a packet (drop-packet size marker). */
    public static final int WRITER_ABORT = TracePacket.DataLossReason.DATA_LOSS_WRITER_ABORT.number();

    private DataLossReason() {
    }
}
