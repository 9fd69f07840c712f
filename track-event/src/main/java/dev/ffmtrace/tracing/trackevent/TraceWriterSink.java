package dev.ffmtrace.tracing.trackevent;

import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.util.function.LongSupplier;

/**
 * A {@link TraceWriter} seen as a TrackEvent sink: packets go into the writer's shared
 * memory buffer, and the sequence's incremental state is written anew after the writer
 * dropped packets or fragments, or when {@code stateClears} moves (a service asking its
 * data source to clear the state).
 */
public final class TraceWriterSink implements TracePacketSink {
    private final TraceWriter<TracePacket> writer;
    private final LongSupplier stateClears;

    /** A sink whose state is cleared only by the writer's own drops. */
    public TraceWriterSink(TraceWriter<TracePacket> writer) {
        this(writer, () -> 0);
    }

    /**
     * @param stateClears a count that grows whenever the incremental state must be written
     *     again for reasons the writer cannot see, read once per event: for a producer
     *     connection's data source instance, {@code instance::incrementalStateClears}
     */
    public TraceWriterSink(TraceWriter<TracePacket> writer, LongSupplier stateClears) {
        this.writer = writer;
        this.stateClears = stateClears;
    }

    @Override
    public TracePacket newTracePacket() {
        return writer.newTracePacket();
    }

    @Override
    public void finishTracePacket() {
        writer.finishTracePacket();
    }

    @Override
    public long incrementalStateEpoch() {
        return writer.packetsDropped() + writer.fragmentsDropped() + stateClears.getAsLong();
    }

    @Override
    public boolean isOpen() {
        return writer.isOpen();
    }

    @Override
    public void flush() {
        writer.flush();
    }

    @Override
    public void close() {
        writer.close();
    }
}
