package dev.ffmtrace.tracing.buffer;

import dev.ffmtrace.memory.Layouts;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.FLAG_CHUNK_NEEDS_PATCHING;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.FLAG_CORRUPTED;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.FLAG_INCOMPLETE;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.FLAG_WRITER_ABORT;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.HEADER_SIZE;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.chunkId;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.flags;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.isChecksumValid;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.payloadAvail;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.payloadSize;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.producerAndWriterId;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.setFlags;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.setPayloadAvail;

/**
 * The inner layer of {@link TraceBufferV2}'s walk (Perfetto's ChunkSeqReader): reads
 * one sequence's packets in chunk-id order, from its first chunk up to a target chunk,
 * consuming fragments, reassembling fragmented packets and erasing the chunks it
 * finishes. In erase mode (overwrites) it never stalls and erases everything up to the
 * target, incomplete or not.
 */
final class ChunkSequenceReader {
    private static final int REASSEMBLY_SUCCESS = 0;
    private static final int REASSEMBLY_NOT_ENOUGH_DATA = 1;
    private static final int REASSEMBLY_DATA_LOSS = 2;
    private static final long CACHE_LINE_SIZE = 64;

    private final TraceBufferV2 owner;
    private final MemorySegment buffer;
    private final SequenceMap sequences;
    private final TraceBufferCounters counters;
    private final boolean eraseMode;
    final ChunkSequenceIterator iterator;
    private final ChunkSequenceIterator lookahead;
    final FragmentIterator fragments = new FragmentIterator();
    private final FragmentIterator lookaheadFragments = new FragmentIterator();

    SequenceState sequence;
    int endOffset;
    private int chunkOffset;
    private int touchedBytesSum;

    private int pendingCount;
    private int[] pendingChunks = new int[8];
    private long[] pendingStarts = new long[8];
    private int[] pendingSizes = new int[8];
    private int[] pendingHeaderSizes = new int[8];
    private int reassemblyLossReason;
    private int reassembledFragments;

    /** A reader of {@code owner}'s chunks, which live in {@code buffer} and are listed in {@code sequences}. */
    ChunkSequenceReader(TraceBufferV2 owner, MemorySegment buffer, SequenceMap sequences,
                        TraceBufferCounters counters, boolean eraseMode) {
        this.owner = owner;
        this.buffer = buffer;
        this.sequences = sequences;
        this.counters = counters;
        this.eraseMode = eraseMode;
        this.iterator = new ChunkSequenceIterator(owner, buffer);
        this.lookahead = new ChunkSequenceIterator(owner, buffer);
    }

    void reset(int targetOffset) {
        endOffset = targetOffset;
        sequence = sequences.get(producerAndWriterId(buffer, targetOffset));
        assert sequence != null : targetOffset;
        iterator.reset(sequence);
        startChunk(iterator.chunkOffset);
        int firstId = chunkId(buffer, chunkOffset);
        if (!sequence.followsLastConsumed(firstId)) {
            sequence.recordReadGap(firstId);
        }
    }

    private void startChunk(int offset) {
        assert isChecksumValid(buffer, offset) : offset;
        chunkOffset = offset;
        int payloadSize = payloadSize(buffer, offset);
        int avail = payloadAvail(buffer, offset);
        fragments.reset(buffer, offset + HEADER_SIZE, payloadSize, payloadSize - avail, flags(buffer, offset));
        if (!eraseMode) {
            touchCacheLines(offset + HEADER_SIZE + payloadSize - avail, offset + HEADER_SIZE + payloadSize);
        }
    }

    /**
     * Loads one byte of every cache line in {@code [from, to)}. Each fragment's
     * position depends on the previous fragment's size, so walking a chunk that
     * is not in cache costs one memory latency per fragment; these loads are
     * independent of each other, so the CPU overlaps their misses and the walk
     * then runs from cache.
     */
    private void touchCacheLines(long from, long to) {
        int sum = 0;
        for (long at = from & -CACHE_LINE_SIZE; at < to; at += CACHE_LINE_SIZE) {
            sum += buffer.get(Layouts.BYTE, at);
        }
        // Kept, so the loads are not dropped as dead code.
        touchedBytesSum += sum;
    }

    /** Reads the next packet into {@code out} (null: consume without collecting); false when done or stalled. */
    boolean readNextPacket(TracePacketView out) {
        if (!eraseMode && sequence.skipInGeneration == owner.readGeneration()) {
            return false;
        }
        for (;;) {
            if (!fragments.next()) {
                // Every fragment of the chunk visited: move on along the sequence.
                boolean endReached = chunkOffset == endOffset;
                recordTruncation();
                if (!eraseMode && (flags(buffer, chunkOffset) & FLAG_INCOMPLETE) != 0) {
                    // Scraped: its hidden last fragment may be followed by more; wait for the re-commit.
                    sequence.skipInGeneration = owner.readGeneration();
                    endReached = true;
                } else {
                    // Counted already when its last byte was consumed, unless it had none to consume.
                    count(chunkOffset);
                    iterator.eraseCurrentChunk();
                }
                if (endReached) {
                    return false;
                }
                int next = iterator.nextChunkInSequence();
                if (next < 0) {
                    return false;
                }
                if (iterator.lastStepGap) {
                    sequence.recordReadGap(chunkId(buffer, next));
                }
                startChunk(next);
                continue;
            }
            switch (fragments.fragmentType()) {
                case FragmentIterator.WHOLE_PACKET -> {
                    int fragmentSize = fragments.fragmentSize();
                    consume(chunkOffset, fragments.fragmentHeaderSize() + fragmentSize);
                    // Empty packets are dropped, as Perfetto does, so they cost nothing in the trace.
                    if (fragmentSize != 0) {
                        if (out != null) {
                            out.addFragment(fragments.fragmentStart(), fragmentSize);
                        }
                        return true;
                    }
                }
                case FragmentIterator.CONTINUE, FragmentIterator.END -> {
                    // Its beginning was lost (or never written): drop it.
                    sequence.dataLossReasons |= DataLossReason.ORPHAN_CONTINUATION;
                    consume(chunkOffset, fragments.fragmentHeaderSize() + fragments.fragmentSize());
                }
                default -> {
                    int result = reassemble(out);
                    if (result == REASSEMBLY_SUCCESS) {
                        counters.readaheadsSucceeded++;
                        if (reassembledFragments != 0) {
                            return true;
                        }
                    } else {
                        counters.readaheadsFailed++;
                        if (result == REASSEMBLY_NOT_ENOUGH_DATA && !eraseMode) {
                            sequence.skipInGeneration = owner.readGeneration();
                            return false;
                        }
                        sequence.dataLossReasons |= result == REASSEMBLY_NOT_ENOUGH_DATA
                                ? DataLossReason.OVERWRITE
                                : reassemblyLossReason;
                    }
                }
            }
        }
    }

    /** Turns fragments a chunk lost at copy time, or that no longer parse, into a loss on the sequence. */
    private void recordTruncation() {
        if (fragments.corrupted()) {
            sequence.dataLossReasons |= DataLossReason.CHUNK_CORRUPTED;
        }
        if (fragments.writerAbort()) {
            sequence.dataLossReasons |= DataLossReason.WRITER_ABORT;
        }
        int flags = flags(buffer, chunkOffset);
        if ((flags & (FLAG_CORRUPTED | FLAG_WRITER_ABORT)) != 0) {
            if ((flags & FLAG_CORRUPTED) != 0) {
                sequence.dataLossReasons |= DataLossReason.CHUNK_CORRUPTED;
            }
            if ((flags & FLAG_WRITER_ABORT) != 0) {
                sequence.dataLossReasons |= DataLossReason.WRITER_ABORT;
            }
            // Reported once: a stalled chunk is visited again by every read pass.
            setFlags(buffer, chunkOffset, flags & ~(FLAG_CORRUPTED | FLAG_WRITER_ABORT));
        }
    }

    private void consume(int offset, int bytes) {
        int avail = payloadAvail(buffer, offset) - bytes;
        assert avail >= 0 : avail;
        setPayloadAvail(buffer, offset, avail);
        if (avail == 0) {
            count(offset);
        }
    }

    private void count(int offset) {
        if (eraseMode) {
            owner.countOverwritten(offset);
        } else {
            owner.countRead(offset);
        }
    }

    /**
     * Collects the rest of the packet begun by the current fragment from the next
     * chunks of the sequence, without moving the reader. On success or loss the
     * collected fragments are consumed; when data is still missing nothing is, except
     * in erase mode: the packet's beginning is about to go, so the continuations found
     * are consumed (and counted overwritten) rather than left to be read as orphans.
     */
    private int reassemble(TracePacketView out) {
        if ((flags(buffer, chunkOffset) & FLAG_CHUNK_NEEDS_PATCHING) != 0) {
            return REASSEMBLY_NOT_ENOUGH_DATA;
        }
        pendingCount = 0;
        addPending(chunkOffset, fragments);
        lookahead.copyFrom(iterator);
        int result;
        for (;;) {
            int next = lookahead.nextChunkInSequence();
            if (next < 0) {
                result = REASSEMBLY_NOT_ENOUGH_DATA;
                break;
            }
            // A gap is a loss whatever state the chunk after it is in: no point waiting for its patch.
            if (lookahead.lastStepGap) {
                result = REASSEMBLY_DATA_LOSS;
                reassemblyLossReason = DataLossReason.REASSEMBLY_GAP;
                break;
            }
            if ((flags(buffer, next) & FLAG_CHUNK_NEEDS_PATCHING) != 0) {
                result = REASSEMBLY_NOT_ENOUGH_DATA;
                break;
            }
            int flags = flags(buffer, next);
            int payloadSize = payloadSize(buffer, next);
            lookaheadFragments.reset(buffer, next + HEADER_SIZE, payloadSize,
                    payloadSize - payloadAvail(buffer, next), flags);
            if (!lookaheadFragments.next()) {
                if (lookaheadFragments.corrupted() || (flags & FLAG_CORRUPTED) != 0) {
                    result = REASSEMBLY_DATA_LOSS;
                    reassemblyLossReason = DataLossReason.CHUNK_CORRUPTED;
                    break;
                }
                if (lookaheadFragments.writerAbort() || (flags & FLAG_WRITER_ABORT) != 0) {
                    result = REASSEMBLY_DATA_LOSS;
                    reassemblyLossReason = DataLossReason.WRITER_ABORT;
                    break;
                }
                if ((flags & FLAG_INCOMPLETE) != 0) {
                    // The continuation is the scraped chunk's hidden fragment.
                    result = REASSEMBLY_NOT_ENOUGH_DATA;
                    break;
                }
                // An empty chunk inside the chain: look further.
                continue;
            }
            int type = lookaheadFragments.fragmentType();
            if (type == FragmentIterator.CONTINUE) {
                addPending(next, lookaheadFragments);
                continue;
            }
            if (type == FragmentIterator.END) {
                addPending(next, lookaheadFragments);
                result = REASSEMBLY_SUCCESS;
                break;
            }
            // Contiguous ids, yet this chunk does not continue the packet. Its
            // fragments are not ours: leave them to the main loop.
            result = REASSEMBLY_DATA_LOSS;
            reassemblyLossReason = DataLossReason.REASSEMBLY_BROKEN_CHAIN;
            break;
        }
        reassembledFragments = 0;
        if (result != REASSEMBLY_NOT_ENOUGH_DATA || eraseMode) {
            for (int i = 0; i < pendingCount; i++) {
                if (result == REASSEMBLY_SUCCESS && pendingSizes[i] != 0) {
                    if (out != null) {
                        out.addFragment(pendingStarts[i], pendingSizes[i]);
                    }
                    reassembledFragments++;
                }
                consume(pendingChunks[i], pendingHeaderSizes[i] + pendingSizes[i]);
            }
        }
        return result;
    }

    private void addPending(int chunk, FragmentIterator fragment) {
        if (pendingCount == pendingChunks.length) {
            int capacity = pendingCount * 2;
            pendingChunks = Arrays.copyOf(pendingChunks, capacity);
            pendingStarts = Arrays.copyOf(pendingStarts, capacity);
            pendingSizes = Arrays.copyOf(pendingSizes, capacity);
            pendingHeaderSizes = Arrays.copyOf(pendingHeaderSizes, capacity);
        }
        pendingChunks[pendingCount] = chunk;
        pendingStarts[pendingCount] = fragment.fragmentStart();
        pendingSizes[pendingCount] = fragment.fragmentSize();
        pendingHeaderSizes[pendingCount] = fragment.fragmentHeaderSize();
        pendingCount++;
    }
}
