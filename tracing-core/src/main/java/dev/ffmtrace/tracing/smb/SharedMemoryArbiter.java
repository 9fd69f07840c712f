package dev.ffmtrace.tracing.smb;

import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.*;

import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.Message;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbi;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The producer side's owner of a shared memory buffer: hands chunks to
 * {@link TraceWriter}s, takes them back as complete and commits them to the service.
 *
 * <p>Writers take the arbiter's lock once per chunk (acquiring a new one, returning a
 * full one); writing packets inside a chunk takes no lock. Pages are partitioned on
 * demand with one layout (Perfetto's default: one chunk per page). When no chunk is free
 * the arbiter first reclaims the chunks of idle writers (see {@link TraceWriter}); if
 * that frees nothing, a {@link BufferExhaustedPolicy#STALL} writer waits with bounded
 * backoff (spin, yield, then sleeps of at most 10 ms) up to the stall timeout, and a
 * {@link BufferExhaustedPolicy#DROP} writer drops at once, marking the loss for the
 * service.
 *
 * <p>An {@linkplain #emulated emulated} arbiter serves a producer that reaches its
 * service over TCP: the buffer is this process's alone, each committed chunk's bytes
 * travel with its commit, and the chunk is free again as soon as the commit is encoded.
 */
public final class SharedMemoryArbiter {
    /** Returned by {@link #acquireChunk} when no chunk could be had. */
    static final long NO_CHUNK = -1;

    private static final long MAX_BACKOFF_NANOS = 10_000_000;

    private final SharedMemoryAbi abi;
    private final int pageLayout;
    private final CommitTransport transport;
    /** Shared memory emulation: commits carry the chunks' bytes, and the arbiter frees the chunks it committed. */
    private final boolean emulated;
    private final long stallTimeoutNanos;
    private final ReentrantLock lock = new ReentrantLock();
    private final CommitRequest pending = new CommitRequest();
    private final TraceWriter<?>[] writers = new TraceWriter<?>[MAX_WRITER_ID + 1];
    /**
     * Payload slices per chunk position, cut once so that changing chunks allocates
     * nothing: index {@code 2 * packed + 0} is the whole payload, {@code + 1} the payload
     * after a continuation fragment's size field. Written under the lock when a chunk is
     * acquired, read by its writer after that (the lock orders the two).
     */
    private final MemorySegment[] payloadSlices;
    /** Whole chunks per chunk position (header included), cut with the payloads, for emulated commits. */
    private final MemorySegment[] chunkSlices;
    private final byte[] slicedLayouts;
    /** Each writer's finished-packet count at the previous {@link #sweepIdleWriters()}. */
    private final long[] finishedAtLastSweep = new long[MAX_WRITER_ID + 1];
    private int nextWriterId = 1;
    private int writerCount;
    private int nextPage;

    private long chunksAcquired;
    private long chunksReclaimed;
    private long stalls;
    private long exhaustions;

    /**
     * An arbiter over the shared memory buffer {@code smb}, cut into pages of
     * {@code pageSize} bytes, with Perfetto's default layout (one chunk per page) and a
     * 30 s stall timeout.
     *
     * @param transport where commits go: the service in this process, or an IPC channel
     * @throws IllegalArgumentException if the page size or the buffer's size breaks the ABI's rules
     */
    public SharedMemoryArbiter(MemorySegment smb, int pageSize, CommitTransport transport) {
        this(smb, pageSize, 1, transport, Duration.ofSeconds(30));
    }

    /**
     * @param chunksPerPage how pages are cut into chunks: 1, 2, 4, 7 or 14 (Perfetto's page layouts)
     * @param stallTimeout how long a stalling writer waits for a free chunk before it drops
     */
    public SharedMemoryArbiter(MemorySegment smb, int pageSize, int chunksPerPage, CommitTransport transport,
                               Duration stallTimeout) {
        this(new SharedMemoryAbi(smb, pageSize), layoutFor(chunksPerPage), transport, false, stallTimeout);
    }

    /**
     * An arbiter for shared memory emulation, as Perfetto's producers run it when the
     * service says so (a TCP connection): {@code buffer} is memory of this process that
     * the service never sees, each commit carries the bytes of the chunks it moves, and
     * a committed chunk is free again once the transport returns (which copies the bytes).
     * One chunk per page, a 30 s stall timeout.
     *
     * @throws IllegalArgumentException if the page size or the buffer's size breaks the ABI's rules
     */
    public static SharedMemoryArbiter emulated(MemorySegment buffer, int pageSize, CommitTransport transport) {
        return new SharedMemoryArbiter(new SharedMemoryAbi(buffer, pageSize), LAYOUT_DIV1, transport, true,
                Duration.ofSeconds(30));
    }

    private SharedMemoryArbiter(SharedMemoryAbi abi, int pageLayout, CommitTransport transport, boolean emulated,
                                Duration stallTimeout) {
        if (SharedMemoryAbiDescriptor.chunkSize(abi.pageSize(), pageLayout) < CHUNK_HEADER_SIZE + PACKET_HEADER_SIZE + 8) {
            throw new IllegalArgumentException("pages of " + abi.pageSize() + " bytes cut into "
                    + chunksPerLayout(pageLayout) + " chunks are too small to hold a packet");
        }
        this.abi = abi;
        this.pageLayout = pageLayout;
        this.transport = transport;
        this.emulated = emulated;
        this.stallTimeoutNanos = stallTimeout.toNanos();
        this.payloadSlices = new MemorySegment[abi.numPages() * 2 * 16];
        this.chunkSlices = new MemorySegment[abi.numPages() * 16];
        this.slicedLayouts = new byte[abi.numPages()];
    }

    private static int layoutFor(int chunksPerPage) {
        for (int layout = LAYOUT_DIV1; layout <= LAYOUT_DIV14; layout++) {
            if (chunksPerLayout(layout) == chunksPerPage) {
                return layout;
            }
        }
        throw new IllegalArgumentException("chunksPerPage must be 1, 2, 4, 7 or 14 (Perfetto's page layouts), got "
                + chunksPerPage);
    }

    /** The SMB's page size. */
    public int pageSize() {
        return abi.pageSize();
    }

    /** The SMB's number of pages. */
    public int numPages() {
        return abi.numPages();
    }

    SharedMemoryAbi abi() {
        return abi;
    }

    /**
     * A new writer with the next free writer id (1..32767), writing packets into
     * {@code packet}'s type into buffer {@code targetBuffer} of the session.
     *
     * @throws IllegalStateException when all 32767 writer ids are in use
     */
    public <P extends Message> TraceWriter<P> createTraceWriter(int targetBuffer, BufferExhaustedPolicy policy, P packet) {
        lock.lock();
        try {
            if (writerCount == MAX_WRITER_ID) {
                throw new IllegalStateException("all " + MAX_WRITER_ID + " writer ids are in use");
            }
            while (writers[nextWriterId] != null) {
                nextWriterId = nextWriterId == MAX_WRITER_ID ? 1 : nextWriterId + 1;
            }
            int id = nextWriterId;
            TraceWriter<P> writer = new TraceWriter<>(this, id, targetBuffer, policy, packet);
            writers[id] = writer;
            writerCount++;
            nextWriterId = id == MAX_WRITER_ID ? 1 : id + 1;
            transport.traceWriterRegistered(id, targetBuffer);
            return writer;
        } finally {
            lock.unlock();
        }
    }

    /** A writer of Perfetto {@code TracePacket}s: {@link #createTraceWriter(int, BufferExhaustedPolicy, Message)} with a new packet. */
    public TraceWriter<TracePacket> createTraceWriter(int targetBuffer, BufferExhaustedPolicy policy) {
        return createTraceWriter(targetBuffer, policy, new TracePacket());
    }

    /**
     * Returns the chunks of every writer that is between packets, as complete, and
     * commits them: what a flush does for writers whose threads are not writing now.
     *
     * @return the number of chunks returned
     */
    public int reclaimIdleChunks() {
        return reclaimAndCommit(false);
    }

    /**
     * Returns the chunks of idle writers that have finished no packet since the previous
     * sweep: call it periodically (the service does, every flush period) so that a thread
     * that stopped tracing does not keep a chunk for good. Cheap for the writers: they
     * only bump a plain counter per packet.
     *
     * @return the number of chunks returned
     */
    public int sweepIdleWriters() {
        return reclaimAndCommit(true);
    }

    private int reclaimAndCommit(boolean quietSinceLastSweep) {
        lock.lock();
        try {
            int reclaimed = reclaimIdleChunksLocked(quietSinceLastSweep);
            commitPendingLocked();
            return reclaimed;
        } finally {
            lock.unlock();
        }
    }

    /** Counters since creation: chunks acquired and reclaimed, stalls, and exhaustions (no chunk at all). */
    public Stats stats() {
        lock.lock();
        try {
            return new Stats(chunksAcquired, chunksReclaimed, stalls, exhaustions);
        } finally {
            lock.unlock();
        }
    }

    /** Arbiter counters. */
    public record Stats(long chunksAcquired, long chunksReclaimed, long stalls, long exhaustions) {
    }

    // ---- called by writers ----

    /**
     * A chunk for {@code writerId}, its header set to {@code chunkId} and
     * {@code initialPackets}; the result packs the page (high bits) and chunk index
     * (low 4 bits), or is {@link #NO_CHUNK}.
     */
    long acquireChunk(int writerId, int chunkId, int initialPackets, BufferExhaustedPolicy policy) {
        long deadline = 0;
        long backoff = 0;
        for (int attempt = 0; ; attempt++) {
            lock.lock();
            try {
                long chunk = tryAcquireChunkLocked(writerId, chunkId, initialPackets);
                if (chunk == NO_CHUNK && reclaimIdleChunksLocked(false) > 0) {
                    commitPendingLocked();
                    chunk = tryAcquireChunkLocked(writerId, chunkId, initialPackets);
                }
                if (chunk != NO_CHUNK) {
                    chunksAcquired++;
                    return chunk;
                }
                if (policy == BufferExhaustedPolicy.DROP) {
                    exhaustions++;
                    return NO_CHUNK;
                }
                if (attempt == 0) {
                    stalls++;
                    deadline = System.nanoTime() + stallTimeoutNanos;
                } else if (System.nanoTime() - deadline > 0) {
                    exhaustions++;
                    return NO_CHUNK;
                }
            } finally {
                lock.unlock();
            }
            if (attempt < 32) {
                Thread.onSpinWait();
            } else if (attempt < 64) {
                Thread.yield();
            } else {
                backoff = Math.min(MAX_BACKOFF_NANOS, Math.max(100_000, backoff * 2));
                LockSupport.parkNanos(backoff);
            }
        }
    }

    /** Releases a writer's chunk as complete and commits it, with the writer's ready patches. */
    void returnChunk(TraceWriter<?> writer, long chunk) {
        lock.lock();
        try {
            returnChunkLocked(writer, chunk);
            commitPendingLocked();
        } finally {
            lock.unlock();
        }
    }

    /** Commits the writer's ready patches, if any. */
    void sendPatches(TraceWriter<?> writer) {
        lock.lock();
        try {
            writer.drainReadyPatches(pending);
            commitPendingLocked();
        } finally {
            lock.unlock();
        }
    }

    void releaseWriterId(int writerId) {
        lock.lock();
        try {
            if (writers[writerId] != null) {
                writers[writerId] = null;
                finishedAtLastSweep[writerId] = 0;
                writerCount--;
                transport.traceWriterUnregistered(writerId);
            }
        } finally {
            lock.unlock();
        }
    }

    static int page(long chunk) {
        return (int) (chunk >>> 4);
    }

    static int chunkIndex(long chunk) {
        return (int) (chunk & 0xF);
    }

    private long tryAcquireChunkLocked(int writerId, int chunkId, int initialPackets) {
        int pages = abi.numPages();
        for (int i = 0; i < pages; i++) {
            int page = nextPage + i < pages ? nextPage + i : nextPage + i - pages;
            int bitmap = abi.pageBitmapAcquire(page);
            if (bitmap == 0) {
                abi.tryPartitionPage(page, pageLayout);
                bitmap = abi.pageBitmapAcquire(page);
            }
            int chunks = chunksPerLayout(layoutOf(bitmap));
            for (int c = 0; c < chunks; c++) {
                if (chunkStateOf(bitmap, c) == CHUNK_FREE
                        && abi.tryAcquireChunkForWriting(page, c, chunkId, writerId, initialPackets) != SharedMemoryAbi.NO_CHUNK) {
                    nextPage = page;
                    long chunk = ((long) page << 4) | c;
                    cutPayloadSlices(page, layoutOf(bitmap));
                    return chunk;
                }
            }
        }
        return NO_CHUNK;
    }

    /** The payload of an acquired chunk, whole or after a continuation's size field. */
    MemorySegment payloadSlice(long chunk, boolean afterFragmentHeader) {
        return payloadSlices[(int) (2 * chunk + (afterFragmentHeader ? 1 : 0))];
    }

    private void cutPayloadSlices(int page, int layout) {
        if (slicedLayouts[page] == layout) {
            return;
        }
        int chunkSize = abi.chunkSize(layout);
        for (int c = 0; c < chunksPerLayout(layout); c++) {
            MemorySegment whole = abi.segment().asSlice(abi.chunkOffset(page, c, layout), chunkSize);
            MemorySegment payload = whole.asSlice(CHUNK_HEADER_SIZE);
            int index = 2 * ((page << 4) | c);
            payloadSlices[index] = payload;
            payloadSlices[index + 1] = payload.asSlice(PACKET_HEADER_SIZE);
            chunkSlices[(page << 4) | c] = whole;
        }
        slicedLayouts[page] = (byte) layout;
    }

    private void returnChunkLocked(TraceWriter<?> writer, long chunk) {
        int page = page(chunk);
        int index = chunkIndex(chunk);
        if (!abi.releaseChunkAsComplete(page, index)) {
            throw new IllegalStateException("chunk " + index + " of page " + page + " was not being written");
        }
        pending.addChunkToMove(page, index, writer.targetBuffer(), emulated ? chunkSlices[(int) chunk] : null);
        writer.drainReadyPatches(pending);
    }

    /**
     * Returns idle writers' chunks; with {@code quietSinceLastSweep}, only those of writers
     * that finished no packet since the previous sweep, and this call is the new sweep.
     */
    private int reclaimIdleChunksLocked(boolean quietSinceLastSweep) {
        int reclaimed = 0;
        for (int id = 1, seen = 0; id <= MAX_WRITER_ID && seen < writerCount; id++) {
            TraceWriter<?> writer = writers[id];
            if (writer == null) {
                continue;
            }
            seen++;
            if (quietSinceLastSweep) {
                long finished = writer.packetsFinished();
                boolean quiet = finished == finishedAtLastSweep[id];
                finishedAtLastSweep[id] = finished;
                if (!quiet) {
                    continue;
                }
            }
            if (reclaim(writer)) {
                reclaimed++;
            }
        }
        chunksReclaimed += reclaimed;
        return reclaimed;
    }

    private boolean reclaim(TraceWriter<?> writer) {
        if (!writer.beginReclaim()) {
            return false;
        }
        try {
            returnChunkLocked(writer, writer.reclaimedChunk());
            return true;
        } finally {
            writer.endReclaim();
        }
    }

    private void commitPendingLocked() {
        if (!pending.isEmpty()) {
            try {
                transport.commit(pending);
            } finally {
                if (emulated) {
                    freeCommittedChunksLocked();
                }
                pending.clear();
            }
        }
    }

    /**
     * Emulation: the commit took the chunks' bytes (or was dropped), and no service will
     * read them here, so the arbiter frees them the way a service would, through
     * BeingRead, whatever the transport did.
     */
    private void freeCommittedChunksLocked() {
        for (int i = 0; i < pending.chunksToMove(); i++) {
            int page = pending.movePage(i);
            int index = pending.moveChunk(i);
            if (abi.tryAcquireChunkForReading(page, index) == SharedMemoryAbi.NO_CHUNK
                    || !abi.releaseChunkAsFree(page, index)) {
                throw new IllegalStateException("chunk " + index + " of page " + page + " was not complete");
            }
        }
    }
}
