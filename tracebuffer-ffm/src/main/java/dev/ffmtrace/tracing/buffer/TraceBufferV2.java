package dev.ffmtrace.tracing.buffer;

import dev.ffmtrace.memory.Layouts;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Objects;

import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.ABI_FLAGS_MASK;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.ALIGNMENT;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.FLAG_CHUNK_NEEDS_PATCHING;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.FLAG_CORRUPTED;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.FLAG_COUNTED;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.FLAG_INCOMPLETE;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.FLAG_FIRST_PACKET_CONTINUES_FROM_PREV_CHUNK;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.FLAG_PATCHED;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.FLAG_WRITER_ABORT;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.HEADER_SIZE;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.MAX_SIZE;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.chunkId;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.flags;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.isChecksumValid;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.isPadding;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.outerSize;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.payloadAvail;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.payloadSize;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.producerAndWriterId;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.setFlags;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.setPayloadAvail;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.writeHeader;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.writePadding;

/**
 * The tracing service's trace buffer (Perfetto's TraceBufferV2): producers' chunks
 * copied into one off-heap segment as {@link TBChunkDescriptor TBChunks}, read back
 * as whole packets in FIFO order per {producer, writer} sequence.
 *
 * <p>Writes use a bump pointer. In {@link OverwritePolicy#RING_BUFFER} mode the
 * pointer wraps and the chunks in its way are deleted by the same sequence-order walk
 * the reader uses (the "erase mode"), so that their unread packets reach the
 * {@link OverwriteListener} in order and losses are recorded on their sequences. In
 * {@link OverwritePolicy#DISCARD} mode the first chunk that does not fit latches the
 * buffer shut.
 *
 * <p>Readback walks in two layers: the outer layer visits chunks in buffer order
 * starting at the oldest; for each it walks that chunk's sequence from its first
 * chunk in chunk-id order up to it (the package's {@code ChunkSequenceReader}), so
 * out-of-order commits still read in order. Fragmented packets are reassembled by looking ahead along the sequence. A sequence
 * stalls, for the rest of a read pass, on a fragmented packet whose chunks are not
 * all there or still need patching, and on a scraped (incomplete) chunk.
 *
 * <p>Everything about a chunk's contents is untrusted: {@link #copyChunkUntrusted}
 * copies the bytes first, tokenizes the copy, keeps the fragments that are sound and
 * counts the rest in {@link TraceBufferStats#abiViolations()}; nothing a producer
 * sends makes it throw. The write and read paths allocate nothing once the sequences
 * are known and the per-sequence queues have grown to their working size.
 *
 * <p>Memory: {@link #allocate} gives a buffer its own native memory, freed by
 * {@link #close()}; the constructors put it over a segment the caller owns (shared
 * memory, a test's arena), which {@code close()} leaves alone.
 *
 * <p>Not thread-safe: the service calls it from one thread. Reads are a batch:
 * {@link #beginRead()}, then {@link #readNextTracePacket} until it returns false; a
 * chunk copied in between ends the batch.
 *
 * <p>Large because the write, read and overwrite paths share the chunk index and its
 * invariants under one lock; fragment scanning ({@code FragmentScan}), the chunk layout
 * ({@code TBChunkDescriptor}) and the counters already live apart. Issue #31 lists it.
 */
public final class TraceBufferV2 implements AutoCloseable {
    /** Largest buffer: chunk offsets are kept as {@code int}. */
    public static final long MAX_BUFFER_SIZE = Integer.MAX_VALUE & -ALIGNMENT;
    /** Size of each 4-byte patch of {@link #tryPatchChunkContents}. */
    public static final int PATCH_SIZE = 4;

    /** Empty sequences kept so that a sporadic writer's chunk-id gaps are still seen. */
    static final int KEEP_LAST_EMPTY_SEQUENCES = 1024;
    /** Hysteresis: sweep only past this many, so a sweep is not a sort per emptied sequence. */
    static final int EMPTY_SEQUENCES_GC_THRESHOLD = KEEP_LAST_EMPTY_SEQUENCES + 128;

    private static final int NOT_RELOCATED = -1;

    private final MemorySegment buffer;
    private final int size;
    private final OverwritePolicy overwritePolicy;
    private final OverwriteListener overwriteListener;
    private final boolean readOnly;
    /** The arena of the memory {@link #allocate} made for this buffer; null over a caller's segment. */
    private final Arena ownedArena;

    /**
     * Where untrusted chunks land before they are tokenized: never parse memory a producer
     * can change. Null in a read-only clone, which is never written: a snapshot saves the
     * allocation.
     */
    private final byte[] stagingBytes;
    private final MemorySegment staging;
    private final FragmentScan fragmentScan = new FragmentScan();
    private final ChunkSequenceReader reader;
    private final ChunkSequenceReader eraser;
    private final TracePacketView overwrittenPacket = new TracePacketView();
    private final SequenceMap sequences;
    private final BufferProtoVms protoVms;

    private int writeOffset;
    /** High watermark of written bytes: chunks tile [0, usedSize), the reader wraps there. */
    private int usedSize;
    /** The writer filled the buffer exactly: its next chunk, at 0, is a wrap. */
    private boolean wrapPending;
    private boolean discardWrites;

    private int readOffset;
    private boolean readBatchOpen;
    private boolean readerActive;
    private long readGeneration;

    private final TraceBufferCounters counters;

    private long sequenceAge;
    private int emptySequences;
    private long[] sweepAges = new long[0];
    private int[] sweepKeys = new int[0];


    /**
     * A buffer over {@code buffer}, which it uses alone from now on; the memory stays
     * the caller's to free ({@link #close()} leaves it). Only the bytes it writes are ever
     * read, so the segment need not be zeroed.
     *
     * @param buffer a segment whose size is a multiple of 16, at most {@link #MAX_BUFFER_SIZE};
     *               if native, 16-byte aligned
     */
    public TraceBufferV2(MemorySegment buffer, OverwritePolicy overwritePolicy) {
        this(buffer, overwritePolicy, null);
    }

    /** As {@link #TraceBufferV2(MemorySegment, OverwritePolicy)}, feeding overwritten packets to {@code overwriteListener}. */
    public TraceBufferV2(MemorySegment buffer, OverwritePolicy overwritePolicy, OverwriteListener overwriteListener) {
        this(buffer, overwritePolicy, overwriteListener, null);
    }

    private TraceBufferV2(MemorySegment buffer, OverwritePolicy overwritePolicy, OverwriteListener overwriteListener,
                          Arena ownedArena) {
        checkSize(buffer.byteSize());
        if (buffer.isNative() && buffer.address() % ALIGNMENT != 0) {
            throw new IllegalArgumentException("buffer must be 16-byte aligned");
        }
        this.buffer = buffer;
        this.size = (int) buffer.byteSize();
        this.overwritePolicy = Objects.requireNonNull(overwritePolicy);
        this.overwriteListener = overwriteListener;
        this.readOnly = false;
        this.ownedArena = ownedArena;
        this.stagingBytes = new byte[MAX_SIZE];
        this.staging = MemorySegment.ofArray(stagingBytes);
        this.sequences = new SequenceMap();
        this.protoVms = new BufferProtoVms();
        this.counters = new TraceBufferCounters();
        this.reader = new ChunkSequenceReader(this, buffer, sequences, counters, false);
        this.eraser = new ChunkSequenceReader(this, buffer, sequences, counters, true);
    }

    private TraceBufferV2(TraceBufferV2 source, MemorySegment target) {
        this.buffer = target;
        this.size = source.size;
        this.overwritePolicy = source.overwritePolicy;
        this.overwriteListener = null;
        this.readOnly = true;
        this.ownedArena = null;
        this.stagingBytes = null;
        this.staging = null;
        this.sequences = source.sequences.copy();
        this.protoVms = source.protoVms.cloneReadOnly();
        MemorySegment.copy(source.buffer, 0, target, 0, source.usedSize);
        this.writeOffset = source.writeOffset;
        this.usedSize = source.usedSize;
        this.wrapPending = source.wrapPending;
        this.discardWrites = source.discardWrites;
        this.readGeneration = source.readGeneration;
        this.sequenceAge = source.sequenceAge;
        this.emptySequences = source.emptySequences;
        // The read statistics start from zero, so no chunk is in them yet.
        this.counters = source.counters.copyWithoutReads();
        for (int slot = 0; slot < sequences.capacity(); slot++) {
            SequenceState sequence = sequences.valueAt(slot);
            if (sequence == null) {
                continue;
            }
            for (int i = 0; i < sequence.chunks.size(); i++) {
                // A drained chunk stays counted (the clone's reader only erases it);
                // one with payload left is the clone's to read and count.
                int offset = sequence.chunks.offsetAt(i);
                if (payloadAvail(target, offset) > 0) {
                    setFlags(target, offset, flags(target, offset) & ~FLAG_COUNTED);
                }
            }
        }
        this.reader = new ChunkSequenceReader(this, target, sequences, counters, false);
        this.eraser = new ChunkSequenceReader(this, target, sequences, counters, true);
    }

    /** {@link #allocate(long, OverwritePolicy, OverwriteListener)} without a listener. */
    public static TraceBufferV2 allocate(long size, OverwritePolicy overwritePolicy) {
        return allocate(size, overwritePolicy, null);
    }

    /**
     * A buffer of {@code size} bytes of native memory of its own, freed by {@link #close()}.
     * The memory comes from a shared arena, so that the service may hand the buffer from
     * thread to thread under its lock.
     *
     * @param size              a multiple of 16 in [16, {@link #MAX_BUFFER_SIZE}]
     * @param overwriteListener gets the packets overwritten in ring-buffer mode; may be null
     * @throws IllegalArgumentException if {@code size} is not such a size
     */
    public static TraceBufferV2 allocate(long size, OverwritePolicy overwritePolicy,
                                         OverwriteListener overwriteListener) {
        checkSize(size);
        Objects.requireNonNull(overwritePolicy);
        Arena arena = Arena.ofShared();
        try {
            return new TraceBufferV2(arena.allocate(size, ALIGNMENT), overwritePolicy, overwriteListener, arena);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    private static void checkSize(long byteSize) {
        if (byteSize < ALIGNMENT || byteSize > MAX_BUFFER_SIZE || byteSize % ALIGNMENT != 0) {
            throw new IllegalArgumentException("buffer size must be a multiple of 16 in [16, "
                    + MAX_BUFFER_SIZE + "]: " + byteSize);
        }
    }

    /**
     * Frees the memory of a buffer made by {@link #allocate}; using the buffer afterwards
     * throws {@link IllegalStateException}. Does nothing to a buffer over a caller's
     * segment (that memory is the caller's to free) or to one already closed. Not to be
     * called while another thread uses the buffer.
     */
    @Override
    public void close() {
        if (ownedArena != null && ownedArena.scope().isAlive()) {
            ownedArena.close();
        }
    }

    // ---------------------------------------------------------------- writing

    /** {@link #copyChunkUntrusted(ChunkCommit, MemorySegment, long, long)} from offset 0 of {@code src}. */
    public void copyChunkUntrusted(ChunkCommit chunk, MemorySegment src, long size) {
        copyChunkUntrusted(chunk, src, 0, size);
    }

    /**
     * Copies a chunk's payload (the fragments, after the SMB chunk header) into the
     * buffer. Called for each CommitData and for each chunk found while scraping.
     *
     * <p>{@code chunk}'s producer id and client identity are the service's; everything
     * else comes from the producer and is checked. A complete chunk keeps its first
     * {@link ChunkCommit#numFragments() numFragments} fragments; a scraped one
     * ({@link ChunkCommit#complete() complete} false) hides its last one, reserves the
     * whole {@code size}, and may be committed again with the same id to grow: in place,
     * or moved to the write cursor when its visible packets were all read. Ends the
     * current read batch.
     *
     * @param chunk     read before this returns, so it may be reused right away
     * @param src       the chunk's payload lives at {@code [srcOffset, srcOffset + size)}
     * @throws NullPointerException  if {@code chunk}'s {@link ChunkCommit#producer producer} was never set
     * @throws IllegalStateException on a {@link #cloneReadOnly read-only clone}
     */
    public void copyChunkUntrusted(ChunkCommit chunk, MemorySegment src, long srcOffset, long size) {
        ClientIdentity clientIdentity = Objects.requireNonNull(chunk.clientIdentity(), "producer not set");
        int producerId = chunk.producerId();
        int writerId = chunk.writerId();
        int chunkId = chunk.chunkId();
        int numFragments = chunk.numFragments();
        int chunkFlags = chunk.flags();
        boolean chunkComplete = chunk.complete();
        checkWritable();
        endReadBatch();
        if (discardWrites) {
            discardWrite(producerId, writerId, chunkId);
            return;
        }
        if ((producerId & ~0xFFFF) != 0 || (writerId & ~0xFFFF) != 0 || (producerId | writerId) == 0
                || (numFragments & ~0xFFFF) != 0
                || size < 0 || size > MAX_SIZE || srcOffset < 0 || srcOffset > src.byteSize() - size) {
            counters.abiViolations++;
            return;
        }
        int srcSize = (int) size;
        MemorySegment.copy(src, srcOffset, staging, 0, srcSize);

        int flags = chunkFlags & ABI_FLAGS_MASK;
        int fragmentsToKeep = numFragments;
        if (!chunkComplete) {
            flags |= FLAG_INCOMPLETE;
            if (fragmentsToKeep > 0) {
                // The producer may still be writing the last fragment: drop it, and
                // the flags that only describe it.
                fragmentsToKeep--;
                flags &= ~(FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK | FLAG_CHUNK_NEEDS_PATCHING);
            }
        }
        int payloadSize = fragmentScan.scan(stagingBytes, srcSize, fragmentsToKeep);
        switch (fragmentScan.stop()) {
            // The last kept fragment is no longer the chunk's last one, so it cannot
            // begin a packet continuing on the next chunk.
            case FragmentScan.WRITER_ABORT -> {
                flags = (flags | FLAG_WRITER_ABORT) & ~FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK;
                counters.traceWriterPacketLoss++;
            }
            case FragmentScan.CORRUPTED -> {
                counters.abiViolations++;
                flags = (flags | FLAG_CORRUPTED) & ~FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK;
            }
            case FragmentScan.SHORT -> counters.abiViolations++;
            default -> { }
        }

        int storedSize = chunkComplete ? payloadSize : srcSize;
        if (outerSize(storedSize) > this.size) {
            counters.abiViolations++;
            return;
        }
        int key = producerAndWriterId(producerId, writerId);
        SequenceState sequence = sequences.get(key);
        if (sequence != null) {
            int index = indexOfChunk(sequence, chunkId);
            if (index >= 0) {
                recommit(sequence, index, flags, chunkComplete, payloadSize);
                return;
            }
            if (!admits(sequence, chunkId, chunkComplete, payloadSize)) {
                return;
            }
        }
        writeChunk(key, sequence, producerId, writerId, clientIdentity, chunkId, flags, storedSize, payloadSize,
                NOT_RELOCATED);
    }

    /**
     * Applies 4-byte patches to a chunk's payload and, unless more are pending,
     * clears its "needs patching" flag. All patches are bounds-checked before any is
     * applied.
     *
     * @param patches read before this returns, so they may be reused right away
     * @return whether the chunk was found and every patch was in bounds
     * @throws IllegalStateException on a {@link #cloneReadOnly read-only clone}
     */
    public boolean tryPatchChunkContents(int producerId, int writerId, int chunkId, ChunkPatches patches,
                                         boolean otherPatchesPending) {
        checkWritable();
        int patchCount = patches.size();
        boolean validIds = ((producerId | writerId) & ~0xFFFF) == 0 && (producerId | writerId) != 0;
        SequenceState sequence = validIds ? sequences.get(producerAndWriterId(producerId, writerId)) : null;
        int index = sequence == null ? -1 : indexOfChunk(sequence, chunkId);
        if (index < 0) {
            counters.patchesFailed++;
            return false;
        }
        int offset = sequence.chunks.offsetAt(index);
        int payloadSize = payloadSize(buffer, offset);
        for (int i = 0; i < patchCount; i++) {
            long patchOffset = patches.offset(i);
            if (payloadSize < PATCH_SIZE || patchOffset < 0 || patchOffset > payloadSize - PATCH_SIZE) {
                // The chunk was recycled under a slow IPC, or the producer lies.
                counters.patchesFailed++;
                return false;
            }
        }
        for (int i = 0; i < patchCount; i++) {
            buffer.set(Layouts.INT_UNALIGNED, offset + HEADER_SIZE + patches.offset(i), patches.littleEndianBytes(i));
        }
        counters.patchesSucceeded += patchCount;
        int flags = flags(buffer, offset) | FLAG_PATCHED;
        setFlags(buffer, offset, otherPatchesPending ? flags : flags & ~FLAG_CHUNK_NEEDS_PATCHING);
        return true;
    }

    /**
     * Gives up the patches producer {@code producerId} still owes, for a producer that is
     * gone: each of its chunks still waiting for patches loses its last fragment, the one
     * the patches were for (a writer leaves size fields to patch only in the packet it
     * continues on a later chunk), marked as a packet its writer abandoned. The fragments
     * before it, which the wait held back along with the rest of the sequence, can then
     * be read: without this, a writer killed while a packet spanned chunks loses every
     * packet since the first chunk of that one (Perfetto's buffer keeps them blocked).
     * Returns how many chunks gave up a fragment.
     *
     * @throws IllegalStateException on a {@link #cloneReadOnly read-only clone}
     */
    public int abandonPendingPatches(int producerId) {
        checkWritable();
        endReadBatch();
        int abandoned = 0;
        for (int slot = 0; slot < sequences.capacity(); slot++) {
            SequenceState sequence = sequences.valueAt(slot);
            if (sequence == null || sequence.producerId != producerId) {
                continue;
            }
            for (int i = 0; i < sequence.chunks.size(); i++) {
                if (abandonLastFragment(sequence.chunks.offsetAt(i))) {
                    abandoned++;
                }
            }
        }
        return abandoned;
    }

    /** {@link #abandonPendingPatches} for the chunk at {@code offset}; returns whether it waited for patches. */
    private boolean abandonLastFragment(int offset) {
        int flags = flags(buffer, offset);
        if ((flags & FLAG_CHUNK_NEEDS_PATCHING) == 0) {
            return false;
        }
        int payloadSize = payloadSize(buffer, offset);
        int consumed = payloadSize - payloadAvail(buffer, offset);
        MemorySegment.copy(buffer, offset + HEADER_SIZE, staging, 0, payloadSize);
        // Nothing past the fragment waiting for its patches has been read: the wait blocked it.
        int kept = Math.max(consumed, fragmentScan.lastFragmentStart(stagingBytes, payloadSize));
        TBChunkDescriptor.setPayloadSize(buffer, offset, kept);
        setPayloadAvail(buffer, offset, kept - consumed);
        setFlags(buffer, offset, (flags | FLAG_WRITER_ABORT)
                & ~(FLAG_CHUNK_NEEDS_PATCHING | FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK));
        if (kept == consumed) {
            countRead(offset);
        }
        return true;
    }

    private void recommit(SequenceState sequence, int index, int flags, boolean chunkComplete, int payloadSize) {
        int offset = sequence.chunks.offsetAt(index);
        int oldFlags = flags(buffer, offset);
        int oldAbiFlags = oldFlags & ABI_FLAGS_MASK;
        int oldPayloadSize = payloadSize(buffer, offset);
        if (payloadSize < oldPayloadSize || payloadSize > TBChunkDescriptor.size(buffer, offset)
                || (oldAbiFlags & flags) != oldAbiFlags) {
            // Payload never shrinks nor outgrows the reservation; flags are only added.
            counters.abiViolations++;
            return;
        }
        if (payloadSize == oldPayloadSize) {
            if (chunkComplete) {
                setFlags(buffer, offset, oldFlags & ~FLAG_INCOMPLETE);
            }
            return;
        }
        int avail = payloadAvail(buffer, offset);
        if (chunkComplete && (oldFlags & FLAG_INCOMPLETE) != 0 && avail == 0 && index == 0
                && overwritePolicy == OverwritePolicy.RING_BUFFER) {
            // Everything visible was read: give the final version a fresh place at the
            // cursor instead of leaving it where the writer will soon overwrite it. Only
            // the sequence's first chunk moves, as in Perfetto: a later one waits behind
            // chunks that the reader has not drained yet, so it is not about to be lost.
            int chunkId = chunkId(buffer, offset);
            countRead(offset);
            sequence.chunks.removeFirst();
            writePadding(buffer, offset, TBChunkDescriptor.size(buffer, offset), oldPayloadSize);
            if (sequence.chunks.isEmpty()) {
                markEmpty(sequence);
            }
            writeChunk(producerAndWriterId(sequence.producerId, sequence.writerId), sequence, sequence.producerId,
                    sequence.writerId, null, chunkId, flags, payloadSize, payloadSize, oldPayloadSize);
            return;
        }
        int consumed = oldPayloadSize - avail;
        MemorySegment.copy(staging, 0, buffer, offset + HEADER_SIZE, payloadSize);
        TBChunkDescriptor.setPayloadSize(buffer, offset, payloadSize);
        setPayloadAvail(buffer, offset, payloadSize - consumed);
        setFlags(buffer, offset, (oldFlags & ~FLAG_INCOMPLETE) | flags);
        counters.chunksRewritten++;
    }

    /** Whether a chunk id not in the sequence's list may still be written; counts the refusals. */
    private boolean admits(SequenceState sequence, int chunkId, boolean chunkComplete, int payloadSize) {
        if (!sequence.hasLastChunkIdConsumed || compareChunkIds(chunkId, sequence.lastChunkIdConsumed) > 0) {
            return true;
        }
        if (chunkId == sequence.lastChunkIdConsumed && sequence.lastConsumedIncomplete) {
            // A scraped chunk that was evicted: re-admit it past what was consumed.
            if (payloadSize < sequence.lastConsumedPayloadSize) {
                counters.abiViolations++;
                return false;
            }
            return chunkComplete || payloadSize > sequence.lastConsumedPayloadSize;
        }
        // Consumed already: too late, it would only break the order of what follows.
        counters.chunksDiscarded++;
        return false;
    }

    /**
     * Writes the staged payload as a new chunk at the cursor, making room first.
     *
     * @param relocatedConsumed for a relocated chunk, the payload bytes already read
     *                          from its previous copy; {@link #NOT_RELOCATED} otherwise
     */
    private void writeChunk(int key, SequenceState knownSequence, int producerId, int writerId,
                            ClientIdentity clientIdentity, int chunkId, int flags, int storedSize, int payloadSize,
                            int relocatedConsumed) {
        boolean relocation = relocatedConsumed != NOT_RELOCATED;
        int outer = outerSize(storedSize);
        SequenceState sequence = knownSequence;
        if (overwritePolicy == OverwritePolicy.DISCARD) {
            if (outer > size - writeOffset) {
                discardWrite(producerId, writerId, chunkId);
                return;
            }
        } else {
            if (wrapPending) {
                wrapPending = false;
                counters.writeWrapCount++;
            }
            if (outer > size - writeOffset) {
                // At the end of the first lap the tail past usedSize holds no chunk and
                // stays out of use (readers stop at usedSize), as in Perfetto.
                deleteNextChunksFor(size - writeOffset);
                writeOffset = 0;
                counters.writeWrapCount++;
            }
            deleteNextChunksFor(outer);
            // The erase walk may have consumed this sequence past the chunk.
            if (sequence != null && !admits(sequence, chunkId, (flags & FLAG_INCOMPLETE) == 0, payloadSize)) {
                return;
            }
        }
        int consumed = 0;
        if (sequence == null) {
            sequence = new SequenceState(producerId, writerId, clientIdentity);
            sequences.put(key, sequence);
        } else if (relocation) {
            consumed = relocatedConsumed;
        } else if (sequence.hasLastChunkIdConsumed && chunkId == sequence.lastChunkIdConsumed) {
            consumed = sequence.lastConsumedPayloadSize;
        }
        ChunkOffsetQueue chunks = sequence.chunks;
        int position = chunks.size();
        while (position > 0 && compareChunkIds(chunkId, chunks.chunkIdAt(position - 1)) < 0) {
            position--;
        }
        if (position != chunks.size()) {
            counters.chunksCommittedOutOfOrder++;
        }
        if (sequence.countedEmpty) {
            sequence.countedEmpty = false;
            emptySequences--;
        }
        chunks.insert(position, writeOffset, chunkId);
        writeHeader(buffer, writeOffset, chunkId, key, storedSize, payloadSize, payloadSize - consumed, flags);
        MemorySegment.copy(staging, 0, buffer, writeOffset + HEADER_SIZE, payloadSize);

        writeOffset += outer;
        usedSize = Math.max(usedSize, writeOffset);
        if (writeOffset == size && overwritePolicy == OverwritePolicy.RING_BUFFER) {
            writeOffset = 0;
            wrapPending = true;
        }
        counters.chunksWritten++;
        counters.bytesWritten += outer;
        if (relocation) {
            counters.chunksRelocated++;
        }
        if (emptySequences > EMPTY_SEQUENCES_GC_THRESHOLD) {
            deleteStaleEmptySequences();
        }
    }

    /**
     * Deletes every chunk in {@code [writeOffset, writeOffset + bytesToClear)}, first
     * walking each one's sequence in erase mode so its unread packets go to the
     * listener and the loss is recorded, then covers what is left of a chunk cut in
     * two with a padding chunk.
     */
    private void deleteNextChunksFor(int bytesToClear) {
        int clearEnd = writeOffset + bytesToClear;
        for (int offset = writeOffset, next; offset < clearEnd && offset < usedSize; offset = next) {
            assert isChecksumValid(buffer, offset) : offset;
            int outer = outerSize(TBChunkDescriptor.size(buffer, offset));
            next = offset + outer;
            if (isPadding(buffer, offset)) {
                counters.paddingBytesCleared += outer;
                continue;
            }
            boolean feedVms = !protoVms.isEmpty();
            if (overwriteListener == null && !feedVms && eraseWholePacketsChunk(offset)) {
                continue;
            }
            eraser.reset(offset);
            TracePacketView packet = overwriteListener == null && !feedVms ? null : overwrittenPacket;
            boolean clearedPackets = false;
            if (packet != null) {
                packet.reset(buffer);
            }
            while (eraser.readNextPacket(packet)) {
                clearedPackets = true;
                if (packet != null) {
                    packet.setSequence(eraser.sequence, reportedReasons(eraser.sequence.dataLossReasons));
                    if (feedVms) {
                        protoVms.apply(packet);
                    }
                    if (overwriteListener != null) {
                        overwriteListener.onPacketOverwritten(packet);
                    }
                    packet.reset(buffer);
                }
            }
            if (clearedPackets) {
                eraser.sequence.dataLossReasons |= DataLossReason.OVERWRITE;
            }
            assert isPadding(buffer, offset) : offset;
        }
        for (int offset = writeOffset; offset < clearEnd && offset < usedSize; ) {
            int chunkEnd = offset + outerSize(TBChunkDescriptor.size(buffer, offset));
            if (clearEnd < chunkEnd) {
                writePadding(buffer, clearEnd, chunkEnd - clearEnd - HEADER_SIZE, 0);
                counters.paddingBytesWritten += chunkEnd - clearEnd;
            }
            offset = chunkEnd;
        }
    }

    /**
     * The erase walk's outcome without walking, for the common chunk: first of its
     * sequence, nothing left but whole packets, never patched (so its fragments are
     * still the ones validated when copied). Then the walk would only consume every
     * fragment to find out whether one of them was a packet; one non-empty fragment
     * settles it, which spares touching every fragment header of a chunk about to be
     * overwritten. Returns false, doing nothing, for any other chunk.
     */
    private boolean eraseWholePacketsChunk(int offset) {
        int flags = flags(buffer, offset);
        int payloadSize = payloadSize(buffer, offset);
        int avail = payloadAvail(buffer, offset);
        int unreadOffset = payloadSize - avail;
        if ((flags & (FLAG_PATCHED | FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK)) != 0
                || ((flags & FLAG_FIRST_PACKET_CONTINUES_FROM_PREV_CHUNK) != 0 && unreadOffset == 0)) {
            return false;
        }
        SequenceState sequence = sequences.get(producerAndWriterId(buffer, offset));
        if (sequence.chunks.offsetAt(0) != offset) {
            return false;
        }
        int chunkId = chunkId(buffer, offset);
        if (!sequence.followsLastConsumed(chunkId)) {
            sequence.recordReadGap(chunkId);
        }
        countOverwritten(offset);
        if (avail > 0) {
            FragmentIterator fragments = eraser.fragments;
            fragments.reset(buffer, offset + HEADER_SIZE, payloadSize, unreadOffset, flags);
            while (fragments.next()) {
                if (fragments.fragmentSize() != 0) {
                    sequence.dataLossReasons |= DataLossReason.OVERWRITE;
                    break;
                }
            }
        }
        if ((flags & FLAG_CORRUPTED) != 0) {
            sequence.dataLossReasons |= DataLossReason.CHUNK_CORRUPTED;
        }
        if ((flags & FLAG_WRITER_ABORT) != 0) {
            sequence.dataLossReasons |= DataLossReason.WRITER_ABORT;
        }
        eraser.iterator.reset(sequence);
        eraser.iterator.eraseCurrentChunk();
        return true;
    }

    /*
     * Byte and chunk accounting: a stored chunk enters bytes_written once, when it is
     * written at the cursor (a relocated or re-admitted chunk is a new stored chunk),
     * and leaves through bytes_read or bytes_overwritten exactly once: when its last
     * payload byte is consumed (by the reader, or by the overwrite walk, which may also
     * consume chunks ahead of the one it erases while it reassembles a packet), or when
     * it is erased with nothing to consume (no payload, or payload that no longer
     * parses). So bytes_written = bytes_read + bytes_overwritten + the stored chunks not
     * yet counted, at every step. A re-commit in place stores nothing new, yet it can
     * make a drained chunk readable again; FLAG_COUNTED keeps it from being counted again.
     */

    /** Counts a chunk the reader drained or erased, unless it was counted before. */
    void countRead(int offset) {
        int flags = flags(buffer, offset);
        if ((flags & FLAG_COUNTED) == 0) {
            setFlags(buffer, offset, flags | FLAG_COUNTED);
            counters.chunksRead++;
            counters.bytesRead += outerSize(TBChunkDescriptor.size(buffer, offset));
        }
    }

    /** Counts a chunk the overwrite walk drained or erased, unless it was counted before. */
    void countOverwritten(int offset) {
        int flags = flags(buffer, offset);
        if ((flags & FLAG_COUNTED) == 0) {
            setFlags(buffer, offset, flags | FLAG_COUNTED);
            counters.chunksOverwritten++;
            counters.bytesOverwritten += outerSize(TBChunkDescriptor.size(buffer, offset));
        }
    }

    /** Refuses a chunk for lack of room, from now on every chunk; its sequence, if known, learns of the loss. */
    private void discardWrite(int producerId, int writerId, int chunkId) {
        discardWrites = true;
        counters.chunksDiscarded++;
        if (((producerId | writerId) & ~0xFFFF) == 0) {
            SequenceState sequence = sequences.get(producerAndWriterId(producerId, writerId));
            if (sequence != null) {
                sequence.recordDiscarded(chunkId);
            }
        }
    }

    void markEmpty(SequenceState sequence) {
        if (!sequence.countedEmpty) {
            sequence.countedEmpty = true;
            sequence.ageForGc = ++sequenceAge;
            emptySequences++;
        }
    }

    /** Deletes the empty sequences but the {@value #KEEP_LAST_EMPTY_SEQUENCES} most recently emptied. */
    private void deleteStaleEmptySequences() {
        int capacity = sequences.capacity();
        if (sweepAges.length < capacity) {
            sweepAges = new long[capacity];
            sweepKeys = new int[capacity];
        }
        int empty = 0;
        for (int slot = 0; slot < capacity; slot++) {
            SequenceState sequence = sequences.valueAt(slot);
            if (sequence != null && sequence.chunks.isEmpty()) {
                sweepAges[empty++] = sequence.ageForGc;
            }
        }
        if (empty > KEEP_LAST_EMPTY_SEQUENCES) {
            Arrays.sort(sweepAges, 0, empty);
            long oldestKept = sweepAges[empty - KEEP_LAST_EMPTY_SEQUENCES];
            int doomed = 0;
            for (int slot = 0; slot < capacity; slot++) {
                SequenceState sequence = sequences.valueAt(slot);
                if (sequence != null && sequence.chunks.isEmpty() && sequence.ageForGc < oldestKept) {
                    sweepKeys[doomed++] = sequences.keyAt(slot);
                }
            }
            for (int i = 0; i < doomed; i++) {
                sequences.remove(sweepKeys[i]);
            }
            empty -= doomed;
        }
        emptySequences = empty;
    }

    // ---------------------------------------------------------------- reading

    /** Starts a read batch at the oldest chunk. */
    public void beginRead() {
        readOffset = writeOffset == usedSize ? 0 : writeOffset;
        readerActive = false;
        readBatchOpen = true;
        readGeneration++;
    }

    /**
     * Reads the next whole packet of the batch into {@code packet}: its fragments,
     * its sequence's properties, and the reasons data was lost on that sequence
     * before it. Consumes it.
     *
     * @return false when no packet can be read in this batch (the view is then empty)
     */
    public boolean readNextTracePacket(TracePacketView packet) {
        packet.reset(buffer);
        if (!readBatchOpen || usedSize == 0) {
            return false;
        }
        for (;;) {
            int nextOffset;
            if (!readerActive) {
                assert isChecksumValid(buffer, readOffset) : readOffset;
                if (!isPadding(buffer, readOffset)) {
                    reader.reset(readOffset);
                    readerActive = true;
                    continue;
                }
                nextOffset = readOffset + outerSize(TBChunkDescriptor.size(buffer, readOffset));
            } else {
                if (reader.readNextPacket(packet)) {
                    SequenceState sequence = reader.sequence;
                    packet.setSequence(sequence, reportedReasons(sequence.dataLossReasons));
                    sequence.dataLossReasons = 0;
                    return true;
                }
                nextOffset = reader.endOffset + outerSize(TBChunkDescriptor.size(buffer, reader.endOffset));
            }
            readerActive = false;
            boolean wrap = nextOffset >= usedSize;
            if (nextOffset == writeOffset || (wrap && writeOffset == 0)) {
                readBatchOpen = false;
                return false;
            }
            readOffset = wrap ? 0 : nextOffset;
        }
    }

    private static int reportedReasons(int causes) {
        return causes == 0 ? 0 : causes | DataLossReason.PRESENT;
    }

    /** Read passes so far: a sequence stalled in the current one is skipped until the next. */
    long readGeneration() {
        return readGeneration;
    }

    private void endReadBatch() {
        readBatchOpen = false;
        readerActive = false;
    }

    // ---------------------------------------------------------------- clone, stats

    /**
     * A read-only snapshot in {@code target}, readable from the start: same chunks,
     * sequences and write statistics, read statistics reset. Copies only the bytes
     * written so far.
     *
     * @param target a segment of {@link #size()} bytes, 16-byte aligned if native
     */
    public TraceBufferV2 cloneReadOnly(MemorySegment target) {
        if (target.byteSize() != size || (target.isNative() && target.address() % ALIGNMENT != 0)) {
            throw new IllegalArgumentException("clone target must be " + size + " bytes, 16-byte aligned");
        }
        return new TraceBufferV2(this, target);
    }

    /** {@link #cloneReadOnly(MemorySegment)} into memory allocated from {@code arena}. */
    public TraceBufferV2 cloneReadOnly(Arena arena) {
        return cloneReadOnly(arena.allocate(size, ALIGNMENT));
    }

    /**
     * The buffer's ProtoVMs: set one up for a data source's producer and its overwritten
     * packets go to it before they are lost (ring buffers only: a discarding buffer never
     * overwrites). A clone's are read-only snapshots. The caller serializes them with the
     * buffer.
     */
    public BufferProtoVms protoVms() {
        return protoVms;
    }

    /**
     * The sequences the buffer keeps state for, ascending, each as
     * {@code (long) producerId << 32 | writerId}: who wrote what it holds, for the
     * service's {@code trace_provenance}.
     */
    public long[] sequences() {
        long[] keys = new long[sequences.size()];
        int count = 0;
        for (int slot = 0; slot < sequences.capacity(); slot++) {
            SequenceState sequence = sequences.valueAt(slot);
            if (sequence != null) {
                keys[count++] = (long) sequence.producerId << 32 | Integer.toUnsignedLong(sequence.writerId);
            }
        }
        long[] result = Arrays.copyOf(keys, count);
        Arrays.sort(result);
        return result;
    }

    /** The counters so far, as a fresh snapshot. */
    public TraceBufferStats stats() {
        return counters.snapshot(size);
    }

    /**
     * Chunks deleted to make room or refused for lack of it, so far: a change tells the
     * service that some sequence lost data, without building {@link #stats()}.
     */
    public long chunksLost() {
        return counters.chunksLost();
    }

    public int size() {
        return size;
    }

    /**
     * The high watermark of written bytes: chunks tile {@code [0, usedSize)}, and the
     * reader wraps there. A tail too short for the chunk that first wrapped stays out of
     * use, as in Perfetto, until a later chunk small enough reaches it.
     */
    public int usedSize() {
        return usedSize;
    }

    public boolean hasData() {
        return usedSize > 0;
    }

    public OverwritePolicy overwritePolicy() {
        return overwritePolicy;
    }

    public boolean isReadOnly() {
        return readOnly;
    }

    /** The segment holding the chunks, for inspection. */
    public MemorySegment segment() {
        return buffer;
    }

    int sequenceCount() {
        return sequences.size();
    }

    int writeOffset() {
        return writeOffset;
    }

    private void checkWritable() {
        if (readOnly) {
            throw new IllegalStateException("read-only clone");
        }
    }

    /** Index of {@code chunkId} in the sequence's list, or -1. */
    private int indexOfChunk(SequenceState sequence, int chunkId) {
        ChunkOffsetQueue chunks = sequence.chunks;
        int latest = chunks.size() - 1;
        if (latest < 0) {
            return -1;
        }
        int behind = chunks.chunkIdAt(latest) - chunkId;
        if (behind < 0) {
            // Newer than every chunk held: a new chunk, not a re-commit.
            return -1;
        }
        // A writer's ids are consecutive unless chunks were lost, so a patch or re-commit is
        // found by its distance from the latest: the same path for a patch of the latest
        // chunk (ffmtrace's writers) and of an older one (the SDK sends a chunk's patches
        // with the next chunk's commit), so neither makes the JIT recompile this.
        if (behind <= latest && chunks.chunkIdAt(latest - behind) == chunkId) {
            return latest - behind;
        }
        for (int i = latest; i >= 0; i--) {
            int cmp = compareChunkIds(chunkId, chunks.chunkIdAt(i));
            if (cmp == 0) {
                return i;
            }
            if (cmp > 0) {
                return -1;
            }
        }
        return -1;
    }

    /** Orders chunk ids modulo 2^32: {@code a} precedes {@code b} if it is less than 2^31 behind. */
    static int compareChunkIds(int a, int b) {
        return a == b ? 0 : (a - b < 0 ? -1 : 1);
    }
}
