package dev.ffmtrace.tracing.buffer;

/**
 * The buffer's state for one {producer, writer} sequence: its chunks in chunk-id
 * order and what is needed to detect losses across reads. Holds offsets, not
 * references into the buffer, so a clone is a plain copy.
 */
final class SequenceState {
    private static final int INITIAL_CHUNKS = 16;

    final int producerId;
    final int writerId;
    /** The producer's trusted identity, shared with every packet view read from this sequence. */
    final ClientIdentity client;

    /** Offsets of this sequence's chunks, sorted by chunk id (modulo 2^32). */
    final ChunkOffsetQueue chunks;

    /** Stalled for the rest of a read pass when this equals the buffer's read generation. */
    long skipInGeneration;
    /** When the sequence last became empty; the sweep keeps the most recent. */
    long ageForGc;
    /** Whether the sweep counts this sequence as empty. */
    boolean countedEmpty;

    boolean hasLastChunkIdConsumed;
    int lastChunkIdConsumed;
    /** The last consumed chunk was scraped: it may come back with more payload. */
    boolean lastConsumedIncomplete;
    /** Payload bytes of the last consumed chunk already delivered or dropped. */
    int lastConsumedPayloadSize;

    /** Pending {@link DataLossReason} cause bits, reported and cleared by the next packet read. */
    int dataLossReasons;

    SequenceState(int producerId, int writerId, ClientIdentity client) {
        this.producerId = producerId;
        this.writerId = writerId;
        this.client = client;
        this.chunks = new ChunkOffsetQueue(INITIAL_CHUNKS);
    }

    private SequenceState(SequenceState other) {
        producerId = other.producerId;
        writerId = other.writerId;
        client = other.client;
        chunks = other.chunks.copy();
        skipInGeneration = other.skipInGeneration;
        ageForGc = other.ageForGc;
        countedEmpty = other.countedEmpty;
        hasLastChunkIdConsumed = other.hasLastChunkIdConsumed;
        lastChunkIdConsumed = other.lastChunkIdConsumed;
        lastConsumedIncomplete = other.lastConsumedIncomplete;
        lastConsumedPayloadSize = other.lastConsumedPayloadSize;
        dataLossReasons = other.dataLossReasons;
    }

    SequenceState copy() {
        return new SequenceState(this);
    }

    /**
     * Records, once, the loss before {@code nextChunkId}: the ids missing before it, or
     * the unseen tail of the last consumed chunk when that one was scraped and then
     * overwritten before its final commit. The missing ids count as consumed, so a
     * stalled chunk met again by the next read pass is not a new gap, and a late
     * arrival among them is refused.
     */
    void recordReadGap(int nextChunkId) {
        boolean scrapedTailLost = hasLastChunkIdConsumed && lastConsumedIncomplete
                && nextChunkId == lastChunkIdConsumed + 1;
        dataLossReasons |= scrapedTailLost ? DataLossReason.OVERWRITE : DataLossReason.READ_GAP;
        hasLastChunkIdConsumed = true;
        lastChunkIdConsumed = nextChunkId - 1;
        lastConsumedIncomplete = false;
    }

    /**
     * Records that {@code chunkId} was refused for lack of room, if no read would find
     * the gap it leaves: that is when it comes before every chunk of the sequence still
     * in the buffer (a chunk committed out of order got in first). A gap between
     * buffered chunks is found by the walk; a refused chunk after all of them is
     * followed by nothing, since a buffer that refuses one chunk refuses all the next.
     */
    void recordDiscarded(int chunkId) {
        boolean consumedAlready = hasLastChunkIdConsumed
                && TraceBufferV2.compareChunkIds(chunkId, lastChunkIdConsumed) <= 0;
        boolean walkFindsGap = !chunks.isEmpty() && TraceBufferV2.compareChunkIds(chunkId, chunks.chunkIdAt(0)) > 0;
        if (!consumedAlready && !walkFindsGap) {
            recordReadGap(chunkId + 1);
        }
    }

    /**
     * Whether {@code chunkId} may follow the last consumed chunk without a loss: the
     * next id after a chunk consumed whole, or the same id again when that chunk was
     * scraped and evicted and now comes back with more payload. The next id after such
     * an evicted scraped chunk is a loss: what its writer added after the scrape
     * (at least the fragment the scrape hid) is gone.
     */
    boolean followsLastConsumed(int chunkId) {
        return !hasLastChunkIdConsumed
                || (lastConsumedIncomplete ? chunkId == lastChunkIdConsumed : chunkId == lastChunkIdConsumed + 1);
    }
}
