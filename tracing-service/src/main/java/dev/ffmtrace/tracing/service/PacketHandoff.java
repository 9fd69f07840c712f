package dev.ffmtrace.tracing.service;

import dev.ffmtrace.tracing.buffer.TraceBufferV2;
import dev.ffmtrace.tracing.buffer.TracePacketView;
import java.util.HashMap;
import java.util.Map;

/**
 * Hands a buffer's packets to a {@link ReadbackSink}, a bounded batch at a time, each as a
 * {@link ProducerPacket}: given the fields the service vouches for, and checked on the
 * sink's copy. The caller holds the buffer's lock, or owns a read-only clone. One
 * instance per reading thread: it reuses its view and packet.
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
    private final ProducerPacket packet = new ProducerPacket();

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
        if (!state.pendingLoss.isEmpty()) {
            Integer pending = state.pendingLoss.remove(sequenceId);
            loss |= pending == null ? 0 : pending;
        }
        packet.set(view, sequenceId, loss);
        return switch (sink.append(packet)) {
            case TAKEN -> true;
            case FULL -> false;
            case INVALID -> {
                state.invalidPackets++;
                // The next packet of the sequence reports this one's loss, and what it carried.
                state.pendingLoss.merge(sequenceId, loss | PacketValidator.LOSS_PRESENT, (a, b) -> a | b);
                yield false;
            }
        };
    }
}
