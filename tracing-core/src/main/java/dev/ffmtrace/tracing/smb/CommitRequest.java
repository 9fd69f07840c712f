package dev.ffmtrace.tracing.smb;

import dev.ffmtrace.perfetto.protos.CommitDataRequest;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * One {@code CommitDataRequest}, in Perfetto's shape: chunks to move (page, chunk,
 * target buffer) and chunks to patch (target buffer, writer id, chunk id, 4-byte
 * patches at offsets relative to the chunk's payload, has-more-patches).
 *
 * <p>Reused by its arbiter: entries live in primitive arrays that grow on demand and
 * are cleared, not freed, after each commit, so steady-state commits allocate nothing.
 * Patches are stored flat; consecutive patches of one chunk form one ChunkToPatch.
 *
 * <p>Under shared memory emulation (a producer reached over TCP) a chunk to move also
 * carries the chunk's bytes, and a request may be too big for one IPC frame:
 * {@link #writeTo(CommitDataRequest, int, int)} writes it in parts, as Perfetto's
 * arbiter splits its commits.
 */
public final class CommitRequest {
    /**
     * The most one CommitData may hold: Perfetto's IPC buffer (128 KiB, frame included)
     * less its arbiter's 512 bytes of headroom for the frame and the message's own fields.
     */
    public static final int MAX_COMMIT_BYTES = 128 * 1024 - 512;
    /** A bound on a ChunksToMove's encoding without its bytes: tag, length and three varints. */
    private static final int MOVE_OVERHEAD = 32;
    /** A bound on a ChunkToPatch's encoding without its patches, and on one Patch's. */
    private static final int PATCH_RUN_OVERHEAD = 24;
    private static final int PATCH_SIZE = 16;
    private static final int DEFAULT_CAPACITY = 8;

    private int moveCount;
    private int[] movePage;
    private int[] moveChunk;
    private int[] moveTargetBuffer;
    /** The chunks' bytes under shared memory emulation, else nulls. */
    private MemorySegment[] moveData;

    private int patchCount;
    private int[] patchTargetBuffer;
    private int[] patchWriterId;
    private int[] patchChunkId;
    private int[] patchOffset;
    private int[] patchData;
    private boolean[] patchHasMore;
    private final byte[] patchBytes = new byte[4];

    /** An empty request. */
    public CommitRequest() {
        this(DEFAULT_CAPACITY);
    }

    /**
     * An empty request with room for {@code capacity} chunks to move and as many patches
     * before it grows: for one decoded from peers whose commits batch many chunks, so that
     * it does not grow (a path the JIT may not have compiled) during a burst.
     *
     * @throws IllegalArgumentException if {@code capacity} is less than 1
     */
    public CommitRequest(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity " + capacity + " < 1");
        }
        movePage = new int[capacity];
        moveChunk = new int[capacity];
        moveTargetBuffer = new int[capacity];
        moveData = new MemorySegment[capacity];
        patchTargetBuffer = new int[capacity];
        patchWriterId = new int[capacity];
        patchChunkId = new int[capacity];
        patchOffset = new int[capacity];
        patchData = new int[capacity];
        patchHasMore = new boolean[capacity];
    }

    /** Asks the service to move the complete chunk {@code chunk} of page {@code page} into buffer {@code targetBuffer}. */
    public void addChunkToMove(int page, int chunk, int targetBuffer) {
        addChunkToMove(page, chunk, targetBuffer, null);
    }

    /**
     * Asks the service to move the complete chunk {@code chunk} of page {@code page} into
     * buffer {@code targetBuffer}, sending {@code data}, the whole chunk from its header
     * on, with the request: shared memory emulation, where the service cannot read the
     * producer's buffer. {@code data} is read when the request is written, not copied now.
     */
    public void addChunkToMove(int page, int chunk, int targetBuffer, MemorySegment data) {
        if (moveCount == movePage.length) {
            int capacity = moveCount * 2;
            movePage = Arrays.copyOf(movePage, capacity);
            moveChunk = Arrays.copyOf(moveChunk, capacity);
            moveTargetBuffer = Arrays.copyOf(moveTargetBuffer, capacity);
            moveData = Arrays.copyOf(moveData, capacity);
        }
        movePage[moveCount] = page;
        moveChunk[moveCount] = chunk;
        moveTargetBuffer[moveCount] = targetBuffer;
        moveData[moveCount] = data;
        moveCount++;
    }

    /**
     * Adds a 4-byte patch; {@code data} holds the bytes little-endian (byte 0 in bits
     * 0..7). {@code hasMorePatches} says whether the chunk still waits for patches that
     * are not in this request.
     */
    public void addPatch(int targetBuffer, int writerId, int chunkId, int offset, int data, boolean hasMorePatches) {
        if (patchCount == patchOffset.length) {
            int capacity = patchCount * 2;
            patchTargetBuffer = Arrays.copyOf(patchTargetBuffer, capacity);
            patchWriterId = Arrays.copyOf(patchWriterId, capacity);
            patchChunkId = Arrays.copyOf(patchChunkId, capacity);
            patchOffset = Arrays.copyOf(patchOffset, capacity);
            patchData = Arrays.copyOf(patchData, capacity);
            patchHasMore = Arrays.copyOf(patchHasMore, capacity);
        }
        patchTargetBuffer[patchCount] = targetBuffer;
        patchWriterId[patchCount] = writerId;
        patchChunkId[patchCount] = chunkId;
        patchOffset[patchCount] = offset;
        patchData[patchCount] = data;
        patchHasMore[patchCount] = hasMorePatches;
        patchCount++;
    }

    /** Marks patch {@code i} as leaving its chunk waiting for more patches. */
    public void markHasMorePatches(int i) {
        patchHasMore[check(i, patchCount)] = true;
    }

    /**
     * Writes this request as Perfetto's {@code CommitDataRequest}: one ChunksToMove per
     * chunk, one ChunkToPatch per run of consecutive patches of the same chunk, with the
     * run's last has-more-patches flag.
     */
    public void writeTo(CommitDataRequest message) {
        writeTo(message, 0, Integer.MAX_VALUE);
    }

    /**
     * Writes part of this request, from entry {@code from} on (the chunks to move come
     * first, then the runs of patches), as long as the message stays under about
     * {@code maxBytes}; it holds one entry at least, so a lone chunk or run always goes.
     * Chunks go before patches, and parts are sent in order, so the service has a chunk
     * before a patch for it, as in one request.
     *
     * @return the entry the next part starts from; {@link #entries()} when all are written
     */
    public int writeTo(CommitDataRequest message, int from, int maxBytes) {
        if (from < 0 || from > moveCount + patchCount) {
            throw new IndexOutOfBoundsException("entry " + from + " of " + (moveCount + patchCount));
        }
        long bytes = 0;
        int i = from;
        for (; i < moveCount; i++) {
            bytes += MOVE_OVERHEAD + (moveData[i] == null ? 0 : moveData[i].byteSize());
            if (bytes > maxBytes && i > from) {
                return i;
            }
            CommitDataRequest.ChunksToMove move = message.addChunksToMove();
            move.setPage(movePage[i]);
            move.setChunk(moveChunk[i]);
            move.setTargetBuffer(moveTargetBuffer[i]);
            if (moveData[i] != null) {
                move.setData(moveData[i]);
            }
        }
        for (int start = i - moveCount, end; start < patchCount; start = end) {
            end = patchRunEnd(start);
            bytes += PATCH_RUN_OVERHEAD + (long) PATCH_SIZE * (end - start);
            if (bytes > maxBytes && moveCount + start > from) {
                return moveCount + start;
            }
            CommitDataRequest.ChunkToPatch chunk = message.addChunksToPatch();
            chunk.setTargetBuffer(patchTargetBuffer[start]);
            chunk.setWriterId(patchWriterId[start]);
            chunk.setChunkId(patchChunkId[start]);
            for (int p = start; p < end; p++) {
                CommitDataRequest.ChunkToPatch.Patch patch = chunk.addPatches();
                patch.setOffset(patchOffset[p]);
                patchBytes[0] = (byte) patchData[p];
                patchBytes[1] = (byte) (patchData[p] >>> 8);
                patchBytes[2] = (byte) (patchData[p] >>> 16);
                patchBytes[3] = (byte) (patchData[p] >>> 24);
                patch.setData(patchBytes);
            }
            if (patchHasMore[end - 1]) {
                chunk.setHasMorePatches(true);
            }
        }
        return moveCount + patchCount;
    }

    /** The chunks to move and the patches together: where {@link #writeTo(CommitDataRequest, int, int)} ends. */
    public int entries() {
        return moveCount + patchCount;
    }

    /**
     * The end (exclusive) of the run of patches starting at {@code start} that go to the
     * same chunk (target buffer, writer id, chunk id): one ChunkToPatch, whose
     * has-more-patches is that of the run's last patch.
     */
    public int patchRunEnd(int start) {
        check(start, patchCount);
        int end = start + 1;
        while (end < patchCount && patchTargetBuffer[end] == patchTargetBuffer[start]
                && patchWriterId[end] == patchWriterId[start] && patchChunkId[end] == patchChunkId[start]) {
            end++;
        }
        return end;
    }

    /** Whether the request holds neither a chunk to move nor a patch. */
    public boolean isEmpty() {
        return moveCount == 0 && patchCount == 0;
    }

    /** Empties the request for reuse. */
    public void clear() {
        moveCount = 0;
        patchCount = 0;
    }

    /** The number of chunks to move. */
    public int chunksToMove() {
        return moveCount;
    }

    /** The page of the {@code i}-th chunk to move. */
    public int movePage(int i) {
        return movePage[check(i, moveCount)];
    }

    /** The index in its page of the {@code i}-th chunk to move. */
    public int moveChunk(int i) {
        return moveChunk[check(i, moveCount)];
    }

    /** The target buffer of the {@code i}-th chunk to move. */
    public int moveTargetBuffer(int i) {
        return moveTargetBuffer[check(i, moveCount)];
    }

    /** The bytes sent with the {@code i}-th chunk to move, or null: the service reads the chunk from shared memory. */
    public MemorySegment moveData(int i) {
        return moveData[check(i, moveCount)];
    }

    /** The number of patches. */
    public int patches() {
        return patchCount;
    }

    /** The target buffer of the chunk the {@code i}-th patch applies to. */
    public int patchTargetBuffer(int i) {
        return patchTargetBuffer[check(i, patchCount)];
    }

    /** The writer id of the chunk the {@code i}-th patch applies to. */
    public int patchWriterId(int i) {
        return patchWriterId[check(i, patchCount)];
    }

    /** The chunk id of the chunk the {@code i}-th patch applies to. */
    public int patchChunkId(int i) {
        return patchChunkId[check(i, patchCount)];
    }

    /** The offset in the chunk's payload of the {@code i}-th patch's four bytes. */
    public int patchOffset(int i) {
        return patchOffset[check(i, patchCount)];
    }

    /** The {@code i}-th patch's four bytes, as a little-endian int. */
    public int patchData(int i) {
        return patchData[check(i, patchCount)];
    }

    /** Whether more patches for the {@code i}-th patch's chunk follow in a later request. */
    public boolean patchHasMorePatches(int i) {
        return patchHasMore[check(i, patchCount)];
    }

    private static int check(int i, int count) {
        if (i < 0 || i >= count) {
            throw new IndexOutOfBoundsException("entry " + i + " of " + count);
        }
        return i;
    }
}
