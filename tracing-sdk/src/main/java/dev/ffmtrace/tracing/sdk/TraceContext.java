package dev.ffmtrace.tracing.sdk;

import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.smb.TraceWriter;
import dev.ffmtrace.tracing.trackevent.TracePacketSink;
import java.util.function.Function;

/**
 * One started instance as {@link DataSource#trace} hands it to the calling thread: its
 * packets go to that instance's buffer through a writer of this thread's (or, on a virtual
 * thread, one lent for the call). Valid only inside the call.
 *
 * @param <S> the state the data source keeps per instance
 */
public final class TraceContext<S> {
    private final InstanceSlot<S> slot;
    private final TraceWriter<TracePacket> writer;
    /** Set while the current packet goes nowhere: the instance stopped under the caller. */
    private boolean discarding;
    /** What a layer above keeps per sequence (the TrackEvent facade's writer); touched only by the context's user. */
    private Object attachment;

    TraceContext(InstanceSlot<S> slot, TraceWriter<TracePacket> writer) {
        this.slot = slot;
        this.writer = writer;
    }

    /**
     * Starts a packet, finishing the previous one. If the instance stopped while this
     * thread was writing, the packet is written nowhere and counted in
     * {@link DataSource#packetsDiscarded()}: tracing never throws into the application.
     */
    public TracePacket newTracePacket() {
        try {
            discarding = false;
            return writer.newTracePacket();
        } catch (IllegalStateException closed) {
            discarding = true;
            slot.countDiscarded();
            return new HeapBuffered<>(TracePacket.FACTORY).get();
        }
    }

    /** Finishes the current packet. */
    public void finishTracePacket() {
        if (!discarding) {
            try {
                writer.finishTracePacket();
            } catch (IllegalStateException closed) {
                slot.countDiscarded();
            }
        }
    }

    /** Commits what this thread's writer holds for the instance. */
    public void flush() {
        try {
            writer.flush();
        } catch (IllegalStateException closed) {
            // Stopped: the stop committed it.
        }
    }

    /** The state the instance keeps (what {@link DataSourceCallbacks#onSetup} returned). */
    public S state() {
        return slot.state();
    }

    /** Where the instance's session runs. */
    public Backend backend() {
        return slot.backend();
    }

    /** The service's id of the instance. */
    public long instanceId() {
        return slot.instance().id();
    }

    /**
     * A count that moves whenever this sequence's incremental state (interned names,
     * descriptors) must be written again: packets this writer dropped, or the service
     * asking. Keep the value seen last; when it differs, write the state first.
     */
    public long incrementalStateEpoch() {
        return writer.packetsDropped() + writer.fragmentsDropped() + slot.instance().incrementalStateClears();
    }

    /**
     * What this sequence keeps from call to call: made by {@code create} on the first call,
     * over a sink that writes through this sequence, then the same object on every call of
     * this thread into this instance (a virtual thread's lent writer keeps its own), as
     * Perfetto's per-sequence incremental state. For a layer that interns names or writes
     * descriptors once per sequence; the sink's incremental-state epoch says when to
     * write them again.
     */
    @SuppressWarnings("unchecked")
    public <T> T sequenceState(Function<TracePacketSink, T> create) {
        if (attachment == null) {
            attachment = create.apply(new ContextSink(this));
        }
        return (T) attachment;
    }

    Object attachment() {
        return attachment;
    }

    void attach(Object attachment) {
        this.attachment = attachment;
    }

    TraceWriter<TracePacket> writer() {
        return writer;
    }

    InstanceSlot<S> slot() {
        return slot;
    }
}
