package dev.ffmtrace.tracing.service;

import dev.ffmtrace.tracing.buffer.TracePacketView;

/** {@link ProducerPacket}s as a readback sets them, for the tests of the service's other packages (the consumer port's). */
public final class ProducerPackets {
    private ProducerPackets() {
    }

    /** The packet {@code view} points at, on sequence {@code sequenceId}, with the service's loss bits {@code loss}. */
    public static ProducerPacket of(TracePacketView view, int sequenceId, int loss) {
        ProducerPacket packet = new ProducerPacket();
        packet.set(view, sequenceId, loss);
        return packet;
    }
}
