package dev.ffmtrace.tracing.buffer;

import java.lang.foreign.MemorySegment;

import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.FLAG_INCOMPLETE;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.chunkId;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.flags;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.payloadSize;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.writePadding;

/**
 * Walks one sequence's chunk list in chunk-id order and tells whether each step
 * skipped an id (Perfetto's ChunkSeqIterator). Copyable, so reassembly can look ahead
 * without moving the reader.
 */
final class ChunkSequenceIterator {
    /** Told when erasing a chunk empties its sequence. */
    private final TraceBufferV2 owner;
    private final MemorySegment buffer;

    SequenceState sequence;
    int chunkOffset;
    /** Index of {@link #chunkOffset} in the list; -1 right after erasing it. */
    int listIndex;
    boolean currentErased;
    /** The last {@link #nextChunkInSequence()} skipped at least one chunk id. */
    boolean lastStepGap;

    ChunkSequenceIterator(TraceBufferV2 owner, MemorySegment buffer) {
        this.owner = owner;
        this.buffer = buffer;
    }

    void reset(SequenceState sequence) {
        this.sequence = sequence;
        this.chunkOffset = sequence.chunks.offsetAt(0);
        this.listIndex = 0;
        this.currentErased = false;
        this.lastStepGap = false;
    }

    void copyFrom(ChunkSequenceIterator other) {
        sequence = other.sequence;
        chunkOffset = other.chunkOffset;
        listIndex = other.listIndex;
        currentErased = other.currentErased;
        lastStepGap = other.lastStepGap;
    }

    /** Moves to the next chunk of the sequence; returns its offset, or -1 if there is none. */
    int nextChunkInSequence() {
        int nextIndex = listIndex + 1;
        if (nextIndex >= sequence.chunks.size()) {
            return -1;
        }
        int nextOffset = sequence.chunks.offsetAt(nextIndex);
        int nextId = sequence.chunks.chunkIdAt(nextIndex);
        // Once the current chunk is erased its id lives on as the last consumed one.
        lastStepGap = currentErased
                ? !sequence.followsLastConsumed(nextId)
                : nextId != chunkId(buffer, chunkOffset) + 1;
        chunkOffset = nextOffset;
        listIndex = nextIndex;
        currentErased = false;
        return nextOffset;
    }

    /** Removes the current chunk, always the sequence's first, and turns it into padding. */
    void eraseCurrentChunk() {
        int offset = chunkOffset;
        assert listIndex == 0 && sequence.chunks.offsetAt(0) == offset;
        int payloadSize = payloadSize(buffer, offset);
        sequence.hasLastChunkIdConsumed = true;
        sequence.lastChunkIdConsumed = chunkId(buffer, offset);
        sequence.lastConsumedIncomplete = (flags(buffer, offset) & FLAG_INCOMPLETE) != 0;
        sequence.lastConsumedPayloadSize = payloadSize;
        sequence.chunks.removeFirst();
        if (sequence.chunks.isEmpty()) {
            owner.markEmpty(sequence);
        }
        listIndex = -1;
        currentErased = true;
        writePadding(buffer, offset, TBChunkDescriptor.size(buffer, offset), payloadSize);
    }
}
