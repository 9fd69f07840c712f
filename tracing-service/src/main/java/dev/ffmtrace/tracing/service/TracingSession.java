package dev.ffmtrace.tracing.service;

import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.perfetto.protos.BuiltinClock;
import dev.ffmtrace.perfetto.protos.ClockSnapshot;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TraceStats;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.ProtoWire;
import dev.ffmtrace.tracing.buffer.TraceBufferStats;
import dev.ffmtrace.tracing.buffer.TraceBufferV2;
import dev.ffmtrace.tracing.buffer.TracePacketView;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A running tracing session: its buffers, a flush that takes what producers have
 * written, and readback into a trace file.
 *
 * <p>A trace file is Perfetto's {@code Trace}: each packet as field 1, with the fields
 * only the service can vouch for appended to it (protobuf lets a field follow the
 * packet's own): {@code trusted_uid} and {@code trusted_pid} from the producer's
 * connection, {@code trusted_packet_sequence_id} unique per producer and writer, and
 * {@code previous_packet_dropped} when data of that sequence was lost before the packet
 * (Perfetto's DataLossReason bits: PRESENT with the causes the buffer found, and the
 * producer's own SMB_FULL). A packet that fails validation, as in Perfetto's service
 * (malformed at the top level, or holding a field only the service may write), is dropped, counted in {@code trace_stats}' {@code invalid_packets}
 * and reported as a loss on the next packet of its sequence; a chunk still being written
 * when its producer disconnected is counted in {@code chunks_discarded}. Each readback
 * starts with a
 * {@code clock_snapshot} of BOOTTIME, MONOTONIC, MONOTONIC_RAW and REALTIME read back to
 * back, which lets the trace processor place timestamps of any of those clocks on its
 * BOOTTIME timeline, and ends with a {@code trace_stats} packet holding every buffer's
 * stats; both are the service's own packets, on sequence {@value #SERVICE_SEQUENCE_ID}
 * as in Perfetto.
 * {@link #writeSnapshot} writes the same from read-only clones, leaving the session
 * running and its data unread. Readback is for one thread at a time.
 *
 * <p>The service has no timer thread: whoever runs the session calls {@link #flush()}
 * every {@code flush_period_ms}, {@link #writeTrace} every {@code file_write_period_ms}
 * and {@link #clearIncrementalState()} every {@code incremental_state_config.clear_period_ms}
 * (the {@code record} command does).
 *
 * <p>A data source the config names that no producer writes into the session is not an
 * error, as in Perfetto, where a session waits for late producers: {@link #warnings()}
 * says, at the moment it is called, which such data sources there are and why.
 *
 * <p><b>Threads:</b> {@link #flush()}, {@link #clearIncrementalState()},
 * {@link #writeTrace}, {@link #writeSnapshot} and {@link #close()} are the session
 * owner's, one thread at a time; they throw {@link IllegalStateException} once the
 * session is closed. {@link #stats()}, {@link #invalidPackets()},
 * {@link #chunksDiscarded()}, {@link #warnings()}, {@link #isClosed()} and
 * {@link #config()} may be called from any thread, also after close. Closing twice does
 * nothing more.
 */
public final class TracingSession implements AutoCloseable {
    private static final int TRACE_PACKET_TAG = 0x0a;
    /** The sequence of the packets the service writes itself; producers' sequences start at {@code 1 << 16}. */
    public static final int SERVICE_SEQUENCE_ID = 1;

    private final TracingService service;
    private final SessionConfig config;
    private final List<ServiceBuffer> buffers;
    private final TracePacketView view = new TracePacketView();
    private final PacketValidator validator = new PacketValidator();
    /** What consuming reads carry from one readback to the next. */
    private final Readback consumed = new Readback();
    private final AtomicBoolean closed = new AtomicBoolean();
    /** The buffers' stats when the session closed, which {@link #stats()} returns from then on. */
    private volatile List<TraceBufferStats> finalStats;
    private byte[] packetBytes = new byte[4096];
    private MemorySegment packetSegment = MemorySegment.ofArray(packetBytes);
    /** The packet's tag and length, and the trusted fields appended to it. */
    private final byte[] header = new byte[1 + 5];
    private final byte[] trailer = new byte[64];

    TracingSession(TracingService service, SessionConfig config, List<ServiceBuffer> buffers) {
        this.service = service;
        this.config = config;
        this.buffers = List.copyOf(buffers);
    }

    /** The config the session was started from. */
    public SessionConfig config() {
        return config;
    }

    /** Whether the session is closed, by {@link #close()} or by its service's close. */
    public boolean isClosed() {
        return closed.get();
    }

    /**
     * Each data source of the config that no producer writes into this session at this
     * moment, and why: nobody registered it (yet: the session starts it when a producer
     * does), another session has it (until that session stops), or the config names it
     * twice. Empty when every data source is started, and once the session is closed.
     */
    public List<DataSourceWarning> warnings() {
        if (closed.get()) {
            return List.of();
        }
        return service.warnings(this);
    }

    /**
     * How many of the config's data sources no producer writes into this session at this
     * moment: {@code warnings().size()}. A Java-side stat only: Perfetto's
     * {@code TraceStats} has no field for it, so the trace file does not carry it.
     */
    public int dataSourcesNotStarted() {
        return warnings().size();
    }

    /** The service-wide id of the session's buffer at {@code index} in its config. */
    int bufferId(int index) {
        return buffers.get(index).id;
    }

    /** Whether buffer {@code bufferId} of the service is one of this session's. */
    boolean ownsBuffer(int bufferId) {
        for (ServiceBuffer buffer : buffers) {
            if (buffer.id == bufferId) {
                return true;
            }
        }
        return false;
    }

    /**
     * Takes everything producers have written: idle writers' chunks are committed, and
     * chunks still being written are scraped (their last, possibly unfinished, packet
     * stays hidden until the writer commits the chunk).
     */
    public void flush() {
        checkOpen("flush");
        for (Producer producer : service.producers()) {
            producer.flush();
        }
    }

    /**
     * Asks every data source writing into this session's buffers to clear its incremental
     * state: their writers write interned names, descriptors and clock again, so a reader
     * that lost the start of a sequence (a ring buffer that wrapped) can decode what
     * follows.
     */
    public void clearIncrementalState() {
        checkOpen("clearIncrementalState");
        for (ServiceBuffer buffer : buffers) {
            service.clearIncrementalState(buffer.id);
        }
    }

    /** The stats of each buffer, in config order; once the session is closed, those it had when it closed. */
    public List<TraceBufferStats> stats() {
        List<TraceBufferStats> last = finalStats;
        if (last != null) {
            return last;
        }
        return readStats();
    }

    /**
     * Packets read back so far and dropped because they failed validation: malformed at
     * the top level, or holding a field only the service may write. What the trace's
     * {@code trace_stats} carries as {@code invalid_packets}.
     */
    public long invalidPackets() {
        return consumed.invalidPackets;
    }

    /**
     * Chunks of this session's buffers still being written when their producer
     * disconnected (see {@link Producer}): each lost its last packet. What the trace's
     * {@code trace_stats} carries as {@code chunks_discarded}.
     */
    public long chunksDiscarded() {
        long discarded = 0;
        for (ServiceBuffer buffer : buffers) {
            buffer.lock.lock();
            try {
                discarded += buffer.chunksDiscarded;
            } finally {
                buffer.lock.unlock();
            }
        }
        return discarded;
    }

    private List<TraceBufferStats> readStats() {
        List<TraceBufferStats> stats = new ArrayList<>();
        for (ServiceBuffer buffer : buffers) {
            buffer.lock.lock();
            try {
                if (buffer.memory.isClosed()) {
                    return finalStats;
                }
                stats.add(buffer.buffer.stats());
            } finally {
                buffer.lock.unlock();
            }
        }
        return List.copyOf(stats);
    }

    /**
     * Reads every packet the buffers hold into {@code out} as a {@code Trace}, then a
     * {@code trace_stats} packet. Reading consumes: a second call writes only what came
     * in between (periodic streaming calls it repeatedly).
     *
     * @return the number of packets written, the stats packet not included
     */
    public long writeTrace(OutputStream out) throws IOException {
        checkOpen("writeTrace");
        out.write(clockSnapshotPacket());
        long packets = 0;
        for (ServiceBuffer buffer : buffers) {
            buffer.lock.lock();
            try {
                packets += writePackets(buffer.buffer, out, consumed);
            } finally {
                buffer.lock.unlock();
            }
        }
        out.write(statsPacket(consumed.invalidPackets));
        return packets;
    }

    /**
     * Writes what the buffers hold now into {@code out} as a {@code Trace} with a closing
     * {@code trace_stats} packet, without consuming it and without stopping the session:
     * each buffer is cloned read-only under its lock (producers wait only for the copy)
     * and the clone is read.
     *
     * @return the number of packets written, the stats packet not included
     */
    public long writeSnapshot(OutputStream out) throws IOException {
        checkOpen("writeSnapshot");
        out.write(clockSnapshotPacket());
        long packets = 0;
        // The clones' packets are read again by consuming reads: the snapshot counts on a copy.
        Readback snapshot = consumed.copy();
        try (Arena arena = Arena.ofConfined()) {
            for (ServiceBuffer buffer : buffers) {
                TraceBufferV2 clone;
                buffer.lock.lock();
                try {
                    clone = buffer.buffer.cloneReadOnly(arena);
                } finally {
                    buffer.lock.unlock();
                }
                packets += writePackets(clone, out, snapshot);
            }
        }
        out.write(statsPacket(snapshot.invalidPackets));
        return packets;
    }

    private long writePackets(TraceBufferV2 buffer, OutputStream out, Readback readback) throws IOException {
        long packets = 0;
        buffer.beginRead();
        while (buffer.readNextTracePacket(view)) {
            if (writePacket(out, readback)) {
                packets++;
            }
        }
        return packets;
    }

    /** Writes the packet in {@link #view} unless it fails validation; returns whether it wrote it. */
    private boolean writePacket(OutputStream out, Readback readback) throws IOException {
        int size = (int) view.size();
        if (packetBytes.length < size) {
            packetBytes = new byte[Math.max(size, packetBytes.length * 2)];
            packetSegment = MemorySegment.ofArray(packetBytes);
        }
        int at = 0;
        for (int i = 0; i < view.fragmentCount(); i++) {
            MemorySegment.copy(view.buffer(), Layouts.BYTE, view.fragmentOffset(i), packetBytes, at, view.fragmentSize(i));
            at += view.fragmentSize(i);
        }
        int sequenceId = sequenceId(view.producerId(), view.writerId());
        int loss = view.previousPacketDroppedReasons();
        int producerLoss = validator.validate(packetSegment, size);
        if (producerLoss == PacketValidator.INVALID) {
            readback.invalidPackets++;
            readback.pendingLoss.merge(sequenceId, loss | PacketValidator.LOSS_PRESENT, (a, b) -> a | b);
            return false;
        }
        if (!readback.pendingLoss.isEmpty()) {
            Integer pending = readback.pendingLoss.remove(sequenceId);
            loss |= pending == null ? 0 : pending;
        }
        int trailerSize = 0;
        trailerSize = putTagAndVarint(trailer, trailerSize, TracePacket.TRUSTED_UID_FIELD_NUMBER, view.clientUid());
        trailerSize = putTagAndVarint(trailer, trailerSize, TracePacket.TRUSTED_PACKET_SEQUENCE_ID_FIELD_NUMBER,
                Integer.toUnsignedLong(sequenceId));
        trailerSize = putTagAndVarint(trailer, trailerSize, TracePacket.TRUSTED_PID_FIELD_NUMBER, view.clientPid());
        if (loss != 0) {
            // Readers keep the last value of the field: the service's, which must then carry the producer's cause too.
            trailerSize = putTagAndVarint(trailer, trailerSize, TracePacket.PREVIOUS_PACKET_DROPPED_FIELD_NUMBER,
                    Integer.toUnsignedLong(loss | producerLoss));
        }
        int headerSize = ProtoWire.writeVarInt(header, ProtoWire.writeVarInt(header, 0, TRACE_PACKET_TAG),
                size + trailerSize);
        out.write(header, 0, headerSize);
        out.write(packetBytes, 0, size);
        out.write(trailer, 0, trailerSize);
        return true;
    }

    /** The trusted sequence id of a producer's writer: unique within the service. */
    static int sequenceId(int producerId, int writerId) {
        return (producerId << 16) | writerId;
    }

    private byte[] statsPacket(long invalidPackets) {
        HeapBuffered<Trace> trace = new HeapBuffered<>(Trace.FACTORY);
        TracePacket packet = trace.get().addPacket();
        TraceStats stats = packet.setTraceStats();
        for (TraceBufferStats bufferStats : readStats()) {
            bufferStats.writeTo(stats.addBufferStats());
        }
        stats.setChunksDiscarded(chunksDiscarded());
        stats.setInvalidPackets(invalidPackets);
        markAsService(packet);
        return trace.toByteArray();
    }

    private byte[] clockSnapshotPacket() {
        // Every clock is read before anything is encoded, so that the snapshot's clocks
        // describe one instant. MONOTONIC goes first: BOOTTIME is MONOTONIC plus the time
        // suspended, and read right after it can never come out smaller.
        long monotonic = Os.clockNanos(Os.CLOCK_MONOTONIC);
        long boottime = Os.clockNanos(Os.CLOCK_BOOTTIME);
        long monotonicRaw = Os.clockNanos(Os.CLOCK_MONOTONIC_RAW);
        long realtime = Os.clockNanos(Os.CLOCK_REALTIME);
        HeapBuffered<Trace> trace = new HeapBuffered<>(Trace.FACTORY);
        TracePacket packet = trace.get().addPacket();
        packet.setTimestamp(boottime);
        ClockSnapshot snapshot = packet.setClockSnapshot();
        addClock(snapshot, BuiltinClock.BUILTIN_CLOCK_BOOTTIME, boottime);
        addClock(snapshot, BuiltinClock.BUILTIN_CLOCK_MONOTONIC, monotonic);
        addClock(snapshot, BuiltinClock.BUILTIN_CLOCK_MONOTONIC_RAW, monotonicRaw);
        addClock(snapshot, BuiltinClock.BUILTIN_CLOCK_REALTIME, realtime);
        snapshot.setPrimaryTraceClock(BuiltinClock.BUILTIN_CLOCK_BOOTTIME);
        markAsService(packet);
        return trace.toByteArray();
    }

    private static void addClock(ClockSnapshot snapshot, BuiltinClock clockId, long timestamp) {
        ClockSnapshot.Clock clock = snapshot.addClocks();
        clock.setClockId(clockId.number());
        clock.setTimestamp(timestamp);
    }

    private static void markAsService(TracePacket packet) {
        packet.setTrustedUid(Os.uid());
        packet.setTrustedPacketSequenceId(SERVICE_SEQUENCE_ID);
    }

    private static int putTagAndVarint(byte[] into, int at, int field, long value) {
        return ProtoWire.writeVarInt(into, ProtoWire.writeVarInt(into, at,
                ProtoWire.makeTag(field, ProtoWire.WIRE_TYPE_VARINT)), value);
    }

    /**
     * What reading packets carries from one to the next: the packets dropped as invalid,
     * and the loss each left on its sequence, reported by that sequence's next packet.
     * Written by the reading thread only.
     */
    private static final class Readback {
        volatile long invalidPackets;
        final Map<Integer, Integer> pendingLoss = new HashMap<>();

        Readback copy() {
            Readback copy = new Readback();
            copy.invalidPackets = invalidPackets;
            copy.pendingLoss.putAll(pendingLoss);
            return copy;
        }
    }

    private void checkOpen(String method) {
        if (closed.get()) {
            throw new IllegalStateException(method + "() called on a closed tracing session");
        }
    }

    /**
     * Stops the data sources it started (a session waiting for them gets them) and frees
     * its buffers; what they held and was not written out is lost. Closing twice does
     * nothing more.
     */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            finalStats = readStats();
            service.sessionStopped(this, buffers);
        }
    }
}
