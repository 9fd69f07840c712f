package dev.ffmtrace.tracing.service;

import dev.ffmtrace.tracing.buffer.TraceBufferStats;
import dev.ffmtrace.tracing.buffer.TraceBufferV2;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.channels.WritableByteChannel;
import java.util.ArrayList;
import java.util.List;

/**
 * A session's buffers as they were at one moment, cloned read-only, with what its trace
 * begins with: Perfetto's CloneSession, and the snapshot a running session writes. The
 * clone is read once, as a whole trace, into a {@link ReadbackSink}, with its own
 * {@code trace_uuid} and the stats the buffers had when cloned; the session runs on
 * meanwhile, and its own reads still find every packet. The clone's memory is native,
 * the size of the session's buffers, until {@link #close}. One thread at a time uses it.
 */
public final class SessionClone implements AutoCloseable {
    private final Arena arena;
    private final List<TraceBufferV2> buffers;
    private final List<TraceBufferStats> stats;
    private final long chunksDiscarded;
    private final long uuidMsb;
    private final long uuidLsb;
    /** The service's packets the trace begins with, after the clock snapshot and the session's first packets. */
    private final List<byte[]> leadingPackets;
    private final PacketHandoff.ReadState state;
    private final TraceReadback.FirstPackets firstPackets;
    private final TracingService service;
    /** What writes the clone: the snapshot's are its session readback's, used under its turn. */
    private final ServicePackets packets;
    private final PacketHandoff handoff;
    private boolean written;

    SessionClone(Arena arena, List<TraceBufferV2> buffers, List<TraceBufferStats> stats, long chunksDiscarded,
                 long uuidMsb, long uuidLsb, List<byte[]> leadingPackets, PacketHandoff.ReadState state,
                 TraceReadback.FirstPackets firstPackets, TracingService service, ServicePackets packets,
                 PacketHandoff handoff) {
        this.arena = arena;
        this.buffers = buffers;
        this.stats = stats;
        this.chunksDiscarded = chunksDiscarded;
        this.uuidMsb = uuidMsb;
        this.uuidLsb = uuidLsb;
        this.leadingPackets = leadingPackets;
        this.state = state;
        this.firstPackets = firstPackets;
        this.service = service;
        this.packets = packets;
        this.handoff = handoff;
    }

    /** The high 64 bits of the clone's {@code trace_uuid}. */
    public long uuidMsb() {
        return uuidMsb;
    }

    /** The low 64 bits of the clone's {@code trace_uuid}. */
    public long uuidLsb() {
        return uuidLsb;
    }

    /** The native memory the clone holds: the session's buffers' size. */
    public long memoryBytes() {
        long bytes = 0;
        for (TraceBufferV2 buffer : buffers) {
            bytes += buffer.size();
        }
        return bytes;
    }

    /**
     * {@link #write(ReadbackSink)} into a channel, as a {@code Trace}'s bytes: a clone
     * written to a file, as Perfetto's command line writes one.
     *
     * @param out a blocking channel; the clone does not close it
     */
    public long write(WritableByteChannel out) throws IOException {
        return write(new TraceSink(out, Long.MAX_VALUE, new TraceSink.Staging()));
    }

    /**
     * Writes the clone into {@code sink} as a whole trace: the service's packets, every
     * producer's packet the buffers held, and the stats.
     *
     * @return the number of producers' packets written
     * @throws IllegalStateException if it was written or closed before
     */
    public long write(ReadbackSink sink) throws IOException {
        if (written || !arena.scope().isAlive()) {
            throw new IllegalStateException("a clone is written once, before it is closed");
        }
        written = true;
        packets.clockSnapshot().appendTo(sink);
        List<long[]> sequences = new ArrayList<>(buffers.size());
        for (int i = 0; i < buffers.size(); i++) {
            sequences.add(buffers.get(i).sequences());
        }
        firstPackets.write(packets, sink, uuidMsb, uuidLsb, sequences);
        TraceReadback.appendAll(sink, leadingPackets);
        ServicePackets.ProtoVmsPacket protoVms = packets.protoVms();
        for (int i = 0; i < buffers.size(); i++) {
            protoVms.add(buffers.get(i).protoVms());
        }
        protoVms.appendTo(sink);
        long handed = 0;
        for (int i = 0; i < buffers.size(); i++) {
            boolean more = true;
            while (more) {
                handed += handoff.handBatch(buffers.get(i), state, sink);
                more = sink.pending() >= PacketHandoff.BATCH_BYTES;
                sink.flush();
            }
        }
        packets.stats(stats, chunksDiscarded, state.invalidPackets, service.producerCounts()).appendTo(sink);
        sink.flush();
        return handed;
    }

    /** Frees the clone's memory. */
    @Override
    public void close() {
        if (arena.scope().isAlive()) {
            arena.close();
        }
    }
}
