package dev.ffmtrace.tracing.sdk;

import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.tracing.trackevent.TracePacketSink;

/** A {@link TraceContext} as the sink of a TrackEventWriter: the SDK owns the writer, so closing does nothing. */
final class ContextSink implements TracePacketSink {
    private final TraceContext<?> context;

    ContextSink(TraceContext<?> context) {
        this.context = context;
    }

    @Override
    public TracePacket newTracePacket() {
        return context.newTracePacket();
    }

    @Override
    public void finishTracePacket() {
        context.finishTracePacket();
    }

    @Override
    public long incrementalStateEpoch() {
        return context.incrementalStateEpoch();
    }

    @Override
    public boolean isOpen() {
        return context.writer().isOpen();
    }

    @Override
    public void flush() {
        context.flush();
    }

    @Override
    public void close() {
    }
}
