package dev.ffmtrace.tracing.service.reader;

import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.*;

import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbi;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.function.IntPredicate;

/**
 * The service's side of a producer's shared memory buffer: takes committed chunks out
 * (Complete → BeingRead → handed to a sink → Free) and scrapes chunks still being
 * written at flush time.
 *
 * <p>Nothing read from the SMB is trusted. Page and chunk indices from a commit are
 * bound-checked by {@link SharedMemoryAbi}; chunk header fields are read once into locals
 * and an invalid writer id is counted and dropped. The sink gets the SMB itself with the
 * payload's offset and size, and must copy before parsing (TraceBufferV2's
 * {@code copyChunkUntrusted} does), since the producer can change the bytes at any time.
 *
 * <p>Used by one service thread per SMB.
 */
public final class SharedMemoryReader {
    /** Where a chunk's payload goes: normally TraceBufferV2's {@code copyChunkUntrusted}. */
    @FunctionalInterface
    public interface ChunkSink {
        /**
         * Takes a chunk's payload; copy it before parsing, as the producer may still change it.
         *
         * @param packets the chunk's packets word: count in bits 0..9, flags above (see
         *        {@link SharedMemoryAbiDescriptor#packetCountOf} and {@link SharedMemoryAbiDescriptor#flagsOf})
         * @param complete false for a chunk scraped while its writer may still be writing
         */
        void accept(int writerId, int chunkId, int packets, boolean complete,
                    MemorySegment smb, long payloadOffset, int payloadSize);
    }

    private static final byte WRITER_UNKNOWN = 0;
    private static final byte WRITER_PENDING = 1;
    private static final byte WRITER_KNOWN = 2;
    private static final ChunkSink NO_SINK = (writerId, chunkId, packets, complete, smb, offset, size) -> { };

    private final SharedMemoryAbi abi;
    private final int[] expectedChunkId = new int[MAX_WRITER_ID + 1];
    /** Per writer id: {@code WRITER_*}, how far the reader is in learning where the writer starts. */
    private final byte[] writerState = new byte[MAX_WRITER_ID + 1];
    /** Scratch of {@link #findLowestChunkIds}: each writer's lowest chunk id in the states looked for. */
    private final int[] lowestChunkId = new int[MAX_WRITER_ID + 1];
    private final boolean[] hasLowest = new boolean[MAX_WRITER_ID + 1];
    /** Chunks {@link #stageChunk} holds at most: a commit of more is staged and delivered in rounds. */
    public static final int MAX_STAGED = 64;
    /** Private copies of staged chunks' payloads, a page's room each (no chunk is larger). */
    private final MemorySegment staging;
    private final int[] stagedWriterId = new int[MAX_STAGED];
    private final int[] stagedChunkId = new int[MAX_STAGED];
    private final int[] stagedPackets = new int[MAX_STAGED];
    private final int[] stagedSize = new int[MAX_STAGED];
    private int staged;
    private long chunksMoved;
    private long chunksScraped;
    private long abiViolations;

    /** A reader of the SMB {@code abi} describes, knowing no writer yet. */
    public SharedMemoryReader(SharedMemoryAbi abi) {
        this.abi = abi;
        this.staging = MemorySegment.ofArray(new byte[MAX_STAGED * abi.pageSize()]);
    }

    /** The SMB's layout, through which every index read from the SMB is bound-checked. */
    public SharedMemoryAbi abi() {
        return abi;
    }

    /**
     * Moves the chunk a commit named into {@code sink} and frees it. Returns false, and
     * counts an ABI violation, if the page or chunk index is out of range, the chunk is
     * not complete, or its header is invalid.
     */
    public boolean moveChunk(int page, int chunk, ChunkSink sink) {
        long offset = abi.tryAcquireChunkForReading(page, chunk);
        if (offset == SharedMemoryAbi.NO_CHUNK) {
            abiViolations++;
            return false;
        }
        boolean delivered = deliver(page, offset, true, sink);
        if (!abi.releaseChunkAsFree(page, chunk)) {
            abiViolations++;
        }
        if (delivered) {
            chunksMoved++;
        }
        return delivered;
    }

    /**
     * Takes the chunk a commit named out of the SMB into this reader's private copy and
     * frees it at once, before anything parses it: a producer gets a committed chunk back
     * after one copy, not after the service has written it into a trace buffer, so a
     * commit of many chunks frees them all before the first is written. Returns the
     * chunk's slot for {@link #deliverStaged}, or -1, counting an ABI violation, as
     * {@link #moveChunk} refuses (the chunk freed all the same if it was complete).
     *
     * @throws IllegalStateException if {@link #stagingFull()}: deliver and {@link #clearStaged()} first
     */
    public int stageChunk(int page, int chunk) {
        if (stagingFull()) {
            throw new IllegalStateException("the staging area is full: deliver the staged chunks first");
        }
        long offset = abi.tryAcquireChunkForReading(page, chunk);
        if (offset == SharedMemoryAbi.NO_CHUNK) {
            abiViolations++;
            return -1;
        }
        int slot = -1;
        int packets = abi.packetsAcquire(offset);
        int writerId = abi.writerId(offset);
        int payloadSize = payloadSize(page, offset);
        if (!validWriter(writerId) || payloadSize <= 0) {
            abiViolations++;
        } else {
            slot = staged++;
            stagedWriterId[slot] = writerId;
            stagedChunkId[slot] = abi.chunkId(offset);
            stagedPackets[slot] = packets;
            stagedSize[slot] = payloadSize;
            MemorySegment.copy(abi.segment(), offset + CHUNK_HEADER_SIZE, staging, (long) slot * abi.pageSize(),
                    payloadSize);
        }
        if (!abi.releaseChunkAsFree(page, chunk)) {
            abiViolations++;
        }
        return slot;
    }

    /** Whether {@link #stageChunk} has no room left until {@link #clearStaged()}. */
    public boolean stagingFull() {
        return staged == MAX_STAGED;
    }

    /** Hands the chunk staged in {@code slot} to {@code sink}, from the private copy; counts it moved. */
    public void deliverStaged(int slot, ChunkSink sink) {
        if (slot < 0 || slot >= staged) {
            throw new IllegalArgumentException("no chunk staged in slot " + slot);
        }
        sink.accept(stagedWriterId[slot], stagedChunkId[slot], stagedPackets[slot], true, staging,
                (long) slot * abi.pageSize(), stagedSize[slot]);
        chunksMoved++;
    }

    /** Forgets the staged chunks: their slots are free for {@link #stageChunk} again. */
    public void clearStaged() {
        staged = 0;
    }

    /**
     * Moves the Complete chunks found by scanning the page headers, each writer's in
     * chunk-id order: the path for producers that do not send commits. Pages are not in
     * chunk-id order, and a chunk seen complete may have a predecessor that completed
     * after its page was scanned; moving it first would look like a lost chunk to the
     * buffer. So a writer's chunk moves only when it is the next one expected, and later
     * ones wait for the next scan. Where a writer starts is learned over two scans, so a
     * chunk that was still being acquired during the first is not skipped. Returns how
     * many chunks moved.
     */
    public int moveCompleteChunks(ChunkSink sink) {
        return moveCompleteChunks(sink, writer -> true);
    }

    /**
     * {@link #moveCompleteChunks(ChunkSink)} for the writers {@code scanned} accepts only,
     * for an SMB shared with writers that commit: their complete chunks are left for their
     * commits.
     */
    public int moveCompleteChunks(ChunkSink sink, IntPredicate scanned) {
        learnFirstChunkIds(scanned);
        int moved = 0;
        for (int round; (round = moveExpectedChunks(sink)) > 0; ) {
            moved += round;
        }
        return moved;
    }

    /**
     * Moves every Complete chunk, as {@link #moveCompleteChunks} does, and then those
     * still waiting behind a missing predecessor, accepting the gap: for a producer that
     * has finished writing.
     */
    public int drainCompleteChunks(ChunkSink sink) {
        int moved = moveCompleteChunks(sink);
        while (findLowestChunkIds(1 << CHUNK_COMPLETE) > 0) {
            // Whatever still waits has lost its predecessor: restart each writer at its lowest.
            for (int writer = 1; writer <= MAX_WRITER_ID; writer++) {
                if (hasLowest[writer]) {
                    expectedChunkId[writer] = lowestChunkId[writer];
                    writerState[writer] = WRITER_KNOWN;
                }
            }
            int round = moveCompleteChunks(sink);
            if (round == 0) {
                break;
            }
            moved += round;
        }
        return moved;
    }

    /**
     * Hands to {@code sink}, as incomplete, the chunks being written that hold at least
     * one packet, without taking them from their writers: what a flush does for data a
     * writer has not committed. Returns how many.
     *
     * <p>Only a writer's oldest chunk still in the SMB is scraped. A writer that runs out
     * of room mid-packet acquires its next chunk before it commits the full one, so for a
     * moment it has a Complete chunk waiting for its commit and a newer one being written;
     * scraping the newer one first would hand the buffer the sequence out of order, which
     * it must read as a lost chunk. (Under this reader's lock no chunk leaves the SMB, as
     * only the service frees chunks, so the oldest found stays the oldest.)
     */
    public int scrapeChunksBeingWritten(ChunkSink sink) {
        findLowestChunkIds((1 << CHUNK_BEING_WRITTEN) | (1 << CHUNK_COMPLETE));
        int scraped = forEachChunk(1 << CHUNK_BEING_WRITTEN, (page, chunk, offset) -> {
            // A chunk counting no packet has nothing to expose, and its header may be
            // torn: the writer's id and chunk-id stores are relaxed and only the packets
            // word is published with release, which a count of 0 cannot tell from the
            // cleared header. A count of 1 or more was stored after them.
            if (packetCountOf(abi.packetsAcquire(offset)) == 0) {
                return false;
            }
            int writer = abi.writerId(offset);
            return validWriter(writer) && hasLowest[writer] && abi.chunkId(offset) == lowestChunkId[writer]
                    && deliver(page, offset, false, sink);
        });
        chunksScraped += scraped;
        return scraped;
    }

    /**
     * Moves the Complete chunks of the writers {@code committing} accepts that no commit
     * will ever name, for a producer that is gone: one killed after it marked a chunk
     * complete and before its commit was sent. Each writer's go in chunk-id order from its
     * oldest chunk still in the SMB, up to one still being written, which is then the
     * oldest for {@link #scrapeChunksBeingWritten}. A gap (a chunk not in the SMB) is
     * accepted. Returns how many moved: no more than the SMB has chunks, so a producer
     * still completing chunks while it is taken from cannot keep the caller here.
     */
    public int moveUncommittedChunks(ChunkSink sink, IntPredicate committing) {
        int limit = abi.numPages() * MAX_CHUNKS_PER_PAGE;
        int moved = 0;
        int round;
        do {
            findLowestChunkIds((1 << CHUNK_BEING_WRITTEN) | (1 << CHUNK_COMPLETE));
            round = forEachChunk(1 << CHUNK_COMPLETE, (page, chunk, offset) -> {
                int writer = abi.writerId(offset);
                if (!validWriter(writer) || !committing.test(writer) || !hasLowest[writer]
                        || abi.chunkId(offset) != lowestChunkId[writer] || !moveChunk(page, chunk, sink)) {
                    return false;
                }
                // Its successor, usually on a later page, may move in this same pass.
                lowestChunkId[writer]++;
                return true;
            });
            moved += round;
        } while (round > 0 && moved < limit);
        return moved;
    }

    /**
     * Finds where new writers start. A writer seen with a complete chunk for the first
     * time only becomes pending: within one scan its earlier chunk may have been free
     * when its page was looked at and acquired just after. On the next scan every
     * earlier chunk of the writer has been acquired (it acquires in order and only the
     * service frees complete chunks), so the lowest id among its chunks being written or
     * complete is its first. Only writers {@code scanned} accepts are learned, and so
     * only their chunks are ever moved by a scan.
     */
    private void learnFirstChunkIds(IntPredicate scanned) {
        findLowestChunkIds((1 << CHUNK_BEING_WRITTEN) | (1 << CHUNK_COMPLETE));
        for (int writer = 1; writer <= MAX_WRITER_ID; writer++) {
            if (writerState[writer] == WRITER_PENDING && hasLowest[writer]) {
                expectedChunkId[writer] = lowestChunkId[writer];
                writerState[writer] = WRITER_KNOWN;
            }
        }
        findLowestChunkIds(1 << CHUNK_COMPLETE);
        for (int writer = 1; writer <= MAX_WRITER_ID; writer++) {
            if (writerState[writer] == WRITER_UNKNOWN && hasLowest[writer] && scanned.test(writer)) {
                writerState[writer] = WRITER_PENDING;
            }
        }
    }

    private int moveExpectedChunks(ChunkSink sink) {
        return forEachChunk(1 << CHUNK_COMPLETE, (page, chunk, offset) -> {
            int writer = abi.writerId(offset);
            if (!validWriter(writer)) {
                moveChunk(page, chunk, NO_SINK); // counted and freed: its header is invalid
                return false;
            }
            if (writerState[writer] == WRITER_KNOWN && abi.chunkId(offset) == expectedChunkId[writer]
                    && moveChunk(page, chunk, sink)) {
                expectedChunkId[writer]++;
                return true;
            }
            return false;
        });
    }

    /**
     * Sets {@link #lowestChunkId} and {@link #hasLowest} for every writer with a chunk in
     * one of the states of {@code stateMask} (bit {@code 1 << state}); returns how many
     * such chunks there are. Chunk ids wrap at 2^32: "lower" is a negative difference.
     */
    private int findLowestChunkIds(int stateMask) {
        Arrays.fill(hasLowest, false);
        return forEachChunk(stateMask, (page, chunk, offset) -> {
            int writer = abi.writerId(offset);
            if (!validWriter(writer)) {
                return false;
            }
            int id = abi.chunkId(offset);
            if (!hasLowest[writer] || id - lowestChunkId[writer] < 0) {
                lowestChunkId[writer] = id;
                hasLowest[writer] = true;
            }
            return true;
        });
    }

    /** A chunk found by {@link #forEachChunk}; returns whether it counts (moved, scraped, found). */
    @FunctionalInterface
    private interface ChunkVisitor {
        boolean visit(int page, int chunk, long offset);
    }

    /**
     * Visits every chunk whose state is in {@code stateMask}, as the page headers say now;
     * returns how many visits counted.
     */
    private int forEachChunk(int stateMask, ChunkVisitor visitor) {
        int counted = 0;
        for (int page = 0; page < abi.numPages(); page++) {
            int bitmap = abi.pageBitmapAcquire(page);
            int layout = layoutOf(bitmap);
            for (int c = 0; c < chunksPerLayout(layout); c++) {
                if ((stateMask & (1 << chunkStateOf(bitmap, c))) != 0
                        && visitor.visit(page, c, abi.chunkOffset(page, c, layout))) {
                    counted++;
                }
            }
        }
        return counted;
    }

    private static boolean validWriter(int writer) {
        return writer != 0 && writer <= MAX_WRITER_ID;
    }

    /** Chunks taken out whole: committed, or found complete by a scan. */
    public long chunksMoved() {
        return chunksMoved;
    }

    /** Chunks scraped while their writers may still have been writing them. */
    public long chunksScraped() {
        return chunksScraped;
    }

    /** Commits that named a chunk which was not complete, and chunk headers that were invalid. */
    public long abiViolations() {
        return abiViolations;
    }

    /**
     * The payload size of the chunk at {@code offset}, as its page's layout says now. The
     * layout is re-read and may have been changed by the producer since the chunk was
     * located: whatever it says, the payload never runs past the chunk's page.
     */
    private int payloadSize(int page, long offset) {
        long pageEnd = (long) (page + 1) * abi.pageSize();
        return (int) Math.min(abi.chunkSize(abi.pageLayout(page)) - CHUNK_HEADER_SIZE,
                pageEnd - offset - CHUNK_HEADER_SIZE);
    }

    private boolean deliver(int page, long offset, boolean complete, ChunkSink sink) {
        int packets = abi.packetsAcquire(offset);
        int chunkId = abi.chunkId(offset);
        int writerId = abi.writerId(offset);
        if (!validWriter(writerId)) {
            abiViolations++;
            return false;
        }
        int payloadSize = payloadSize(page, offset);
        if (payloadSize <= 0) {
            abiViolations++;
            return false;
        }
        sink.accept(writerId, chunkId, packets, complete, abi.segment(), offset + CHUNK_HEADER_SIZE, payloadSize);
        return true;
    }
}
