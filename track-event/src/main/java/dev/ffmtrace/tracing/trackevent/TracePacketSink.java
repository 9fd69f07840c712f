package dev.ffmtrace.tracing.trackevent;

import dev.ffmtrace.perfetto.protos.TracePacket;

/**
 * Where a {@link TrackEventWriter} writes its sequence of packets: a service
 * {@code TraceWriter} (through {@code DataSource.newTrackEventWriter}) or, offline, a
 * {@link TraceFileWriter}. One packet is open at a time, between
 * {@link #newTracePacket()} and {@link #finishTracePacket()}.
 */
public interface TracePacketSink extends AutoCloseable {
    /** Starts the next packet, finishing the previous one if it is still open, and returns its root message. */
    TracePacket newTracePacket();

    /** Finishes the packet started last. */
    void finishTracePacket();

    /**
     * Writes a whole packet whose fields {@code bytes[offset, offset + length)} already hold,
     * encoded: for writers that encode their packets by hand. No packet may be open.
     */
    default void writeEncodedPacket(byte[] bytes, int offset, int length) {
        newTracePacket().appendRawProtoBytes(bytes, offset, length);
        finishTracePacket();
    }

    /**
     * A number that changes whenever packets written earlier on this sequence may not
     * reach the reader (the writer dropped some, or the service lost some and asked for
     * the incremental state to be cleared). The writer then starts its incremental state
     * again: interned names, track descriptors and clock.
     */
    long incrementalStateEpoch();

    /** Whether packets can still be written: false once the sink, or what it writes into, is closed. */
    boolean isOpen();

    /** Makes everything written so far readable. */
    void flush();

    @Override
    void close();
}
