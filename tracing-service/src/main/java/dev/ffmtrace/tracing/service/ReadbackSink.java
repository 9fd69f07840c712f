package dev.ffmtrace.tracing.service;

import java.io.IOException;

/**
 * Where a session's readback hands its packets, a bounded batch at a time: a trace file,
 * a consumer's ReadBuffers replies. The readback calls {@link #append} under a buffer's
 * lock, where the sink copies the packet out of the buffer (its one copy) in the form
 * its output wants, and {@link #flush} after the lock is released, where the sink does
 * its I/O: a slow output never stalls the producers' commits. One thread at a time calls
 * a sink.
 */
public interface ReadbackSink {
    /**
     * Takes one packet the service wrote itself, {@code packet[offset, offset + length)},
     * framed as a {@code Trace}'s packet field (tag and length first); refused, and the
     * sink full from then on, if it does not fit. The array is the caller's again on return.
     */
    void appendFramed(byte[] packet, int offset, int length);

    /** What {@link #append} did with a producer's packet. */
    enum Appended {
        /** Kept. */
        TAKEN,
        /** Dropped: the copy failed {@link ProducerPacket#copyTo}'s check; the sink is as before. */
        INVALID,
        /** Refused for a size limit; the sink is full from then on. */
        FULL
    }

    /**
     * Takes a producer's packet by {@link ProducerPacket#copyTo}, which copies and checks
     * it; an invalid one takes no room. Called under the buffer's lock: copies and returns,
     * never blocks.
     */
    Appended append(ProducerPacket packet);

    /** Whether a packet was refused for a size limit: a readback stops there. */
    boolean isFull();

    /** Bytes taken since the last {@link #flush}: a readback's batch ends past its size. */
    long pending();

    /** Hands what was taken on to the output. */
    void flush() throws IOException;
}
