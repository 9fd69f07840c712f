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
    final int clientUid;
    final int clientPid;

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

    SequenceState(int producerId, int writerId, int clientUid, int clientPid) {
        this.producerId = producerId;
        this.writerId = writerId;
        this.clientUid = clientUid;
        this.clientPid = clientPid;
        this.chunks = new ChunkOffsetQueue(INITIAL_CHUNKS);
    }

    private SequenceState(SequenceState other) {
        producerId = other.producerId;
        writerId = other.writerId;
        clientUid = other.clientUid;
        clientPid = other.clientPid;
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
     * Records the loss of the ids before {@code nextChunkId} once: they count as
     * consumed, so a stalled chunk met again by the next read pass is not a new gap,
     * and a late arrival among them is refused.
     */
    void recordReadGap(int nextChunkId) {
        dataLossReasons |= DataLossReason.READ_GAP;
        hasLastChunkIdConsumed = true;
        lastChunkIdConsumed = nextChunkId - 1;
        lastConsumedIncomplete = false;
    }

    /**
     * Whether {@code chunkId} may follow the last consumed chunk without a gap: the
     * next id, or the same id again when that chunk was scraped and evicted and now
     * comes back with more payload.
     */
    boolean followsLastConsumed(int chunkId) {
        return !hasLastChunkIdConsumed
                || chunkId == lastChunkIdConsumed + 1
                || (chunkId == lastChunkIdConsumed && lastConsumedIncomplete);
    }
}
