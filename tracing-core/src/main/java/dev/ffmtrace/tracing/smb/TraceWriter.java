package dev.ffmtrace.tracing.smb;

import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.*;

import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.Message;
import dev.ffmtrace.protozero.ProtoWire;
import dev.ffmtrace.protozero.ScatteredStreamWriter;
import dev.ffmtrace.protozero.SizeFieldRedirector;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbi;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Writes trace packets straight into chunks of a shared memory buffer, for one thread
 * at a time.
 *
 * <p>{@link #newTracePacket()} reserves a 4-byte size field in the current chunk,
 * counts the packet (a release store, so a scraper that sees the count also sees the
 * bytes of every packet before it) and returns the root message, whose fields go
 * straight into the chunk. A packet that does not fit continues in a new chunk as a
 * further fragment: the full chunk is flagged "last packet continues", the new one
 * "first packet continues from previous", and the size fields of nested messages left
 * behind in the returned chunk are redirected into this writer's patch list (the chunk
 * is flagged "needs patching"); patches are committed once the messages finish. When no
 * chunk can be had, the writer drops: a fragment in flight gets Perfetto's drop-packet
 * size, later packets go to a scratch area, and the first packet after recovery carries
 * {@code previous_packet_dropped} with Perfetto's DataLossReason bits PRESENT and
 * SMB_FULL (257), the one cause a producer reports itself.
 *
 * <p>The fast path, a packet that fits in the current chunk, takes no lock and allocates
 * nothing. Chunk changes go through the {@link SharedMemoryArbiter}'s lock.
 *
 * <p><b>Idle writers give their chunk back.</b> Perfetto's writers keep a chunk for as
 * long as their thread lives, so a few hundred threads that traced once exhaust the
 * buffer. Here a writer is <em>idle</em> between {@link #finishTracePacket()} (or
 * {@link #flush()}) and its next packet, and the arbiter takes an idle writer's chunk
 * when it runs out of chunks, on {@link SharedMemoryArbiter#reclaimIdleChunks()} (flush),
 * and on {@link SharedMemoryArbiter#sweepIdleWriters()} once the writer has finished no
 * packet for a whole sweep period. Ownership is
 * one word, moved by compare-and-set: {@code IDLE -> WRITING} by the writer on entry,
 * {@code IDLE -> RECLAIMING -> RECLAIMED} by the arbiter, {@code RECLAIMED -> WRITING}
 * by the writer, which then starts from no chunk. A writer that never calls
 * {@code finishTracePacket()} is never idle and keeps its chunk, as in Perfetto.
 *
 * <p>Over 500 lines: the fast path, fragments, drops and reclaims all move the same
 * chunk and ownership state, which a split would have to share across classes.
 *
 * @param <P> the root message type (normally the generated {@code TracePacket})
 */
public final class TraceWriter<P extends Message> implements ScatteredStreamWriter.Delegate, AutoCloseable {
    /** Packets per chunk before moving on: one below the 10-bit maximum, as Perfetto's writer. */
    static final int MAX_PACKETS_PER_CHUNK = MAX_PACKET_COUNT - 1;
    /** A packet starts in a new chunk when fewer bytes than this are left. */
    static final int MIN_PACKET_ROOM = PACKET_HEADER_SIZE + 8;
    private static final int GARBAGE_SIZE = 1024;
    /** {@code previous_packet_dropped} of the first packet after a drop: data was lost, for want of a chunk. */
    private static final int SMB_FULL_LOSS = TracePacket.DataLossReason.DATA_LOSS_PRESENT.number()
            | TracePacket.DataLossReason.DATA_LOSS_SMB_FULL.number();

    static final int IDLE = 0;
    static final int WRITING = 1;
    static final int RECLAIMING = 2;
    static final int RECLAIMED = 3;
    /** A thread other than the writing one is closing the writer. */
    static final int CLOSING = 4;
    static final int CLOSED = 5;
    private static final VarHandle OWNERSHIP;
    /** The buffer of a writer that never had one: its memory freed, so that it is never alive. */
    private static final MemorySegment NO_BUFFER;

    static {
        try (Arena arena = Arena.ofConfined()) {
            NO_BUFFER = arena.allocate(1);
        }
        try {
            OWNERSHIP = MethodHandles.lookup().findVarHandle(TraceWriter.class, "ownership", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final SharedMemoryArbiter arbiter;
    private final SharedMemoryAbi abi;
    private final MemorySegment smb;
    private final int writerId;
    private final int targetBuffer;
    private final BufferExhaustedPolicy policy;
    private final P packet;
    private final ScatteredStreamWriter stream;
    private final PatchList patches = new PatchList();
    private final MemorySegment garbage = MemorySegment.ofArray(new byte[GARBAGE_SIZE]);
    private final SizeFieldRedirector toPatchList = this::redirectToPatchList;
    private final SizeFieldRedirector toGarbage = message -> message.redirectSizeField(garbage, 0);
    private final Message.Owner packetClosed = this::packetClosed;

    @SuppressWarnings("unused") // accessed through OWNERSHIP
    private int ownership = IDLE;
    private long chunk = SharedMemoryArbiter.NO_CHUNK;
    private long chunkOffset;
    private int chunkId;
    private int nextChunkId;
    /** Offset in the chunk's payload of the stream's current slice. */
    private long sliceBase;
    /** Offset in the SMB of the current fragment's size field; -1 while dropping. */
    private long headerOffset = -1;
    private long fragmentStart;
    private boolean fragmenting;
    private boolean dropping;
    private boolean retryAfterPacket;
    private boolean reachedMaxPackets;
    /** Set under CLOSING, read by the writing thread after it sees CLOSED. */
    private boolean closed;
    /**
     * The id of the thread that last entered; stored before the entry's compare-and-set,
     * so a closer that sees WRITING also sees which thread writes, and can tell its own
     * open packet from another thread's. An id, not the Thread: a writer outlives its
     * threads, and must not keep one that ended from being collected.
     */
    private long writingThread;
    /** Plain counter read racily by the arbiter's idle sweep: a stale value only delays a reclaim. */
    private long packetsFinished;
    private long packetsDropped;
    private long fragmentsDropped;

    TraceWriter(SharedMemoryArbiter arbiter, int writerId, int targetBuffer,
                BufferExhaustedPolicy policy, P packet) {
        this.arbiter = arbiter;
        this.abi = arbiter.abi();
        this.smb = abi.segment();
        this.writerId = writerId;
        this.targetBuffer = targetBuffer;
        this.policy = policy;
        this.packet = packet;
        this.stream = new ScatteredStreamWriter(this);
        stream.reset(MemorySegment.NULL);
    }

    /**
     * A writer closed from the start, into no buffer: what a data source that cannot write
     * (not started, stopped, or out of writer ids) hands out, so that code over it sees
     * {@link #isOpen()} false and drops its events. Its writer id is 0, which Perfetto
     * never gives a writer.
     */
    public static TraceWriter<TracePacket> closed(int targetBuffer) {
        return new TraceWriter<>(targetBuffer, new TracePacket());
    }

    private TraceWriter(int targetBuffer, P packet) {
        this.arbiter = null;
        this.abi = null;
        this.smb = NO_BUFFER;
        this.writerId = 0;
        this.targetBuffer = targetBuffer;
        this.policy = BufferExhaustedPolicy.DROP;
        this.packet = packet;
        this.stream = new ScatteredStreamWriter(this);
        stream.reset(MemorySegment.NULL);
        closed = true;
        ownership = CLOSED;
    }

    public int writerId() {
        return writerId;
    }

    public int targetBuffer() {
        return targetBuffer;
    }

    /** Packets finished so far. */
    public long packetsFinished() {
        return packetsFinished;
    }

    /** Packets that never reached the buffer, written while no chunk could be had. */
    public long packetsDropped() {
        return packetsDropped;
    }

    /** Packets cut short by the drop-packet marker because no chunk came mid-packet. */
    public long fragmentsDropped() {
        return fragmentsDropped;
    }

    /**
     * Starts a packet, finishing the previous one if it is still open, and returns the
     * root message to write it with. The message is valid until the next call. Closing it
     * finishes it, as {@link #finishTracePacket()} does, so a packet can be written in a
     * try-with-resources block:
     *
     * <pre>{@code
     * try (TracePacket packet = writer.newTracePacket()) {
     *     packet.setTimestamp(now);
     *     packet.setTrackEvent().setNameIid(1);
     * }
     * }</pre>
     */
    public P newTracePacket() {
        enter();
        // Holding a chunk implies not dropping and no retry pending: the general path
        // below would take none of its branches.
        if (chunk == SharedMemoryArbiter.NO_CHUNK || reachedMaxPackets
                || stream.bytesAvailable() < MIN_PACKET_ROOM || patches.isFrontReady()) {
            return newTracePacketSlow();
        }
        return startPacketInChunk();
    }

    private P newTracePacketSlow() {
        boolean wasDropping = dropping;
        if ((chunk == SharedMemoryArbiter.NO_CHUNK && !dropping) || stream.bytesAvailable() < MIN_PACKET_ROOM
                || reachedMaxPackets || retryAfterPacket) {
            startNewChunkForPacket();
        }
        if (patches.isFrontReady()) {
            arbiter.sendPatches(this);
        }
        if (!dropping) {
            P started = startPacketInChunk();
            if (wasDropping) {
                started.appendVarInt(TracePacket.PREVIOUS_PACKET_DROPPED_FIELD_NUMBER, SMB_FULL_LOSS);
            }
            return started;
        }
        fragmentStart = stream.reserveBytes(PACKET_HEADER_SIZE) + PACKET_HEADER_SIZE;
        headerOffset = -1;
        fragmenting = true;
        packet.reset(stream, packetClosed);
        packetsDropped++;
        return packet;
    }

    /** Reserves the packet's size field in the current chunk, starts the root message and counts the packet. */
    private P startPacketInChunk() {
        long at = stream.reserveBytes(PACKET_HEADER_SIZE);
        headerOffset = chunkOffset + CHUNK_HEADER_SIZE + sliceBase + at;
        smb.set(Layouts.INT_UNALIGNED, headerOffset, 0);
        fragmentStart = at + PACKET_HEADER_SIZE;
        fragmenting = true;
        packet.reset(stream, packetClosed);
        reachedMaxPackets = abi.incrementPacketCount(chunkOffset) >= MAX_PACKETS_PER_CHUNK;
        return packet;
    }

    /**
     * Finishes the current packet (finalizing the message and writing its size) and
     * makes the writer idle: until its next packet the arbiter may return its chunk.
     */
    public void finishTracePacket() {
        checkOpen();
        if (fragmenting) {
            finishPacket();
        }
        OWNERSHIP.setRelease(this, IDLE);
    }

    /** A packet was closed: finishes it unless a later packet or {@link #close()} already did. */
    private void packetClosed(Message root) {
        if (!closed && root == packet && fragmenting) {
            finishTracePacket();
        }
    }

    /** Finishes the current packet and returns the current chunk as complete, committing it. */
    public void flush() {
        enter();
        finishAndReturnChunk();
        OWNERSHIP.setRelease(this, IDLE);
    }

    /** What flushing and closing share, with the writer owned: the packet finished, the chunk committed. */
    private void finishAndReturnChunk() {
        finishPacket();
        if (chunk != SharedMemoryArbiter.NO_CHUNK) {
            returnCurrentChunk();
            stream.reset(MemorySegment.NULL);
            sliceBase = 0;
        } else if (patches.isFrontReady()) {
            arbiter.sendPatches(this);
        }
    }

    /**
     * Finishes the current packet, flushes and gives the writer id back; afterwards
     * {@link #newTracePacket()} throws {@link IllegalStateException} and closing again does
     * nothing. Any thread may close the writer: a thread other than the writing one waits
     * for the packet being written to finish (so it waits for ever on a writer whose thread
     * never finishes its packets: such a writer must be closed by its own thread).
     */
    @Override
    public void close() {
        if (!acquireForClose()) {
            return;
        }
        try {
            finishAndReturnChunk();
        } catch (IllegalStateException e) {
            // The producer unmapped the SMB under us: nothing is left to flush into.
            if (smb.scope().isAlive()) {
                throw e;
            }
        } finally {
            closed = true;
            OWNERSHIP.setRelease(this, CLOSED);
            arbiter.releaseWriterId(writerId);
        }
    }

    /**
     * Whether packets can still reach the buffer: the writer is not closed and its shared
     * memory is still mapped (a producer that disconnected unmaps it).
     */
    public boolean isOpen() {
        return !closed && smb.scope().isAlive();
    }

    /** Takes the writer for closing; false if it is already closed or being closed. */
    private boolean acquireForClose() {
        while (true) {
            int state = (int) OWNERSHIP.compareAndExchange(this, IDLE, CLOSING);
            switch (state) {
                case IDLE:
                    return true;
                case RECLAIMED:
                    if (OWNERSHIP.compareAndSet(this, RECLAIMED, CLOSING)) {
                        chunk = SharedMemoryArbiter.NO_CHUNK;
                        return true;
                    }
                    break;
                case WRITING:
                    if (writingThread == Thread.currentThread().threadId()) {
                        OWNERSHIP.setOpaque(this, CLOSING);
                        return true;
                    }
                    Thread.yield();
                    break;
                case CLOSING:
                case CLOSED:
                    return false;
                default:
                    Thread.onSpinWait();
            }
        }
    }

    // ---- ScatteredStreamWriter.Delegate: the packet ran past the chunk ----

    @Override
    public MemorySegment newSlice(long usedBytes) {
        if (dropping) {
            retryAfterPacket = true;
            return garbage;
        }
        long next = arbiter.acquireChunk(writerId, nextChunkId,
                packets(1, FLAG_FIRST_PACKET_CONTINUES_FROM_PREV_CHUNK), policy);
        if (next == SharedMemoryArbiter.NO_CHUNK) {
            ProtoWire.writeRedundantVarInt(smb, headerOffset, PACKET_SIZE_DROP_PACKET);
            headerOffset = -1;
            packet.redirectSizeFields(toGarbage);
            returnCurrentChunk();
            dropping = true;
            fragmentsDropped++;
            return garbage;
        }
        ProtoWire.writeRedundantVarInt(smb, headerOffset, (int) (usedBytes - fragmentStart));
        abi.setFlags(chunkOffset, FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK);
        if (packet.redirectSizeFields(toPatchList) > 0) {
            abi.setFlags(chunkOffset, FLAG_CHUNK_NEEDS_PATCHING);
        }
        returnCurrentChunk();
        useChunk(next);
        headerOffset = chunkOffset + CHUNK_HEADER_SIZE;
        smb.set(Layouts.INT_UNALIGNED, headerOffset, 0);
        sliceBase = PACKET_HEADER_SIZE;
        fragmentStart = 0;
        return arbiter.payloadSlice(chunk, true);
    }

    // ---- reclaiming, called by the arbiter with its lock held ----

    /**
     * Takes ownership from an idle writer that holds a chunk; if it returns true the arbiter
     * must call {@link #endReclaim()} afterwards. The chunk is read only once ownership is
     * taken: before, a writer flushing without the arbiter's lock may be clearing it, and a
     * chunk seen then would be returned a second time.
     */
    boolean beginReclaim() {
        if (!OWNERSHIP.compareAndSet(this, IDLE, RECLAIMING)) {
            return false;
        }
        if (chunk == SharedMemoryArbiter.NO_CHUNK) {
            OWNERSHIP.setRelease(this, IDLE);
            return false;
        }
        return true;
    }

    /** The chunk of a writer being reclaimed. */
    long reclaimedChunk() {
        return chunk;
    }

    /** Publishes the reclaim: the writer's next entry starts without a chunk. */
    void endReclaim() {
        OWNERSHIP.setRelease(this, RECLAIMED);
    }

    void drainReadyPatches(CommitRequest request) {
        patches.drainReady(request, targetBuffer, writerId);
    }

    // ---- internals ----

    private void enter() {
        checkOpen();
        writingThread = Thread.currentThread().threadId();
        if (!OWNERSHIP.compareAndSet(this, IDLE, WRITING)) {
            enterContended();
        }
    }

    /** Entry when the writer was not idle: still writing, reclaimed, or being reclaimed right now. */
    private void enterContended() {
        while (true) {
            int state = (int) OWNERSHIP.compareAndExchange(this, IDLE, WRITING);
            if (state == IDLE) {
                return;
            }
            if (state == WRITING) {
                finishPacket();
                return;
            }
            if (state == RECLAIMED) {
                chunk = SharedMemoryArbiter.NO_CHUNK;
                stream.reset(MemorySegment.NULL);
                sliceBase = 0;
                reachedMaxPackets = false;
                OWNERSHIP.setOpaque(this, WRITING);
                return;
            }
            if (state == CLOSED) {
                throw closedException();
            }
            Thread.onSpinWait();
        }
    }

    private void finishPacket() {
        if (!fragmenting) {
            return;
        }
        packetsFinished++;
        packet.finalizeMessage();
        if (headerOffset >= 0) {
            ProtoWire.writeRedundantVarInt(smb, headerOffset, (int) (stream.position() - fragmentStart));
        }
        fragmenting = false;
    }

    private void startNewChunkForPacket() {
        // Give the full chunk back before waiting for a new one: a writer that holds a
        // chunk while it stalls could starve every other writer of the last chunks.
        if (chunk != SharedMemoryArbiter.NO_CHUNK) {
            returnCurrentChunk();
        }
        long next = arbiter.acquireChunk(writerId, nextChunkId, 0, policy);
        reachedMaxPackets = false;
        retryAfterPacket = false;
        if (next == SharedMemoryArbiter.NO_CHUNK) {
            dropping = true;
            stream.reset(garbage);
            sliceBase = 0;
            return;
        }
        dropping = false;
        useChunk(next);
        stream.reset(arbiter.payloadSlice(chunk, false));
        sliceBase = 0;
    }

    private void useChunk(long next) {
        chunk = next;
        int page = SharedMemoryArbiter.page(next);
        int index = SharedMemoryArbiter.chunkIndex(next);
        chunkOffset = abi.chunkOffset(page, index, abi.pageLayout(page));
        chunkId = nextChunkId++;
    }

    private void returnCurrentChunk() {
        arbiter.returnChunk(this, chunk);
        chunk = SharedMemoryArbiter.NO_CHUNK;
    }

    private void redirectToPatchList(Message message) {
        long slot = patches.add(chunkId, (int) (sliceBase + message.sizeFieldOffset()));
        message.redirectSizeField(patches.slots(), slot);
    }

    private void checkOpen() {
        if (closed) {
            throw closedException();
        }
    }

    private IllegalStateException closedException() {
        return new IllegalStateException("trace writer " + writerId + " is closed");
    }
}
