package dev.ffmtrace.tracing.buffer;

/**
 * Bits of {@link TracePacketView#previousPacketDroppedReasons()}: why data was lost on
 * a sequence before the packet that carries them. Any loss sets {@link #PRESENT} plus
 * its causes, on the next packet read from that sequence only.
 */
public final class DataLossReason {
    /** Some data was lost; set together with at least one cause. */
    public static final int PRESENT = 1;
    /** The chunk read after the last consumed one does not have the next chunk id. */
    public static final int READ_GAP = 2;
    /** A chunk's fragments stopped parsing part way (bad size varint, size past the chunk). */
    public static final int CHUNK_CORRUPTED = 4;
    /** A continuation fragment whose beginning is not in the buffer. */
    public static final int ORPHAN = 8;
    /** A chunk id is missing inside a fragmented packet. */
    public static final int REASSEMBLY_GAP = 16;
    /** The next chunk does not continue a fragmented packet although its id is contiguous. */
    public static final int BROKEN_CHAIN = 32;
    /** Unread packets were overwritten by the ring buffer. */
    public static final int OVERWRITE = 64;
    /** The trace writer abandoned a packet (drop-packet size marker). */
    public static final int WRITER_ABORT = 128;

    private DataLossReason() {
    }
}
