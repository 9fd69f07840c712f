package dev.ffmtrace.tracing.smb;

import dev.ffmtrace.perfetto.protos.CommitDataRequest;
import java.util.Arrays;

/**
 * One {@code CommitDataRequest}, in Perfetto's shape: chunks to move (page, chunk,
 * target buffer) and chunks to patch (target buffer, writer id, chunk id, 4-byte
 * patches at offsets relative to the chunk's payload, has-more-patches).
 *
 * <p>Reused by its arbiter: entries live in primitive arrays that grow on demand and
 * are cleared, not freed, after each commit, so steady-state commits allocate nothing.
 * Patches are stored flat; consecutive patches of one chunk form one ChunkToPatch.
 */
public final class CommitRequest {
    private static final int DEFAULT_CAPACITY = 8;

    private int moveCount;
    private int[] movePage;
    private int[] moveChunk;
    private int[] moveTargetBuffer;

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
        patchTargetBuffer = new int[capacity];
        patchWriterId = new int[capacity];
        patchChunkId = new int[capacity];
        patchOffset = new int[capacity];
        patchData = new int[capacity];
        patchHasMore = new boolean[capacity];
    }

    /** Asks the service to move the complete chunk {@code chunk} of page {@code page} into buffer {@code targetBuffer}. */
    public void addChunkToMove(int page, int chunk, int targetBuffer) {
        if (moveCount == movePage.length) {
            int capacity = moveCount * 2;
            movePage = Arrays.copyOf(movePage, capacity);
            moveChunk = Arrays.copyOf(moveChunk, capacity);
            moveTargetBuffer = Arrays.copyOf(moveTargetBuffer, capacity);
        }
        movePage[moveCount] = page;
        moveChunk[moveCount] = chunk;
        moveTargetBuffer[moveCount] = targetBuffer;
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
        for (int i = 0; i < moveCount; i++) {
            CommitDataRequest.ChunksToMove move = message.addChunksToMove();
            move.setPage(movePage[i]);
            move.setChunk(moveChunk[i]);
            move.setTargetBuffer(moveTargetBuffer[i]);
        }
        for (int start = 0, end; start < patchCount; start = end) {
            end = patchRunEnd(start);
            CommitDataRequest.ChunkToPatch chunk = message.addChunksToPatch();
            chunk.setTargetBuffer(patchTargetBuffer[start]);
            chunk.setWriterId(patchWriterId[start]);
            chunk.setChunkId(patchChunkId[start]);
            for (int i = start; i < end; i++) {
                CommitDataRequest.ChunkToPatch.Patch patch = chunk.addPatches();
                patch.setOffset(patchOffset[i]);
                patchBytes[0] = (byte) patchData[i];
                patchBytes[1] = (byte) (patchData[i] >>> 8);
                patchBytes[2] = (byte) (patchData[i] >>> 16);
                patchBytes[3] = (byte) (patchData[i] >>> 24);
                patch.setData(patchBytes);
            }
            if (patchHasMore[end - 1]) {
                chunk.setHasMorePatches(true);
            }
        }
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
