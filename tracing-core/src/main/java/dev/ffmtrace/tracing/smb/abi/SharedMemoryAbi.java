package dev.ffmtrace.tracing.smb.abi;

import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.*;

import dev.ffmtrace.memory.AtomicSegment;
import java.lang.foreign.MemorySegment;

/**
 * The state machine of Perfetto's shared memory buffer over a segment (usually a sealed
 * memfd mapping): partitioning pages, acquiring and releasing chunks, and the chunk
 * header fields, each with the memory ordering Perfetto uses (see
 * {@link SharedMemoryAbiDescriptor} for the bytes).
 *
 * <pre>
 *   page free --tryPartitionPage--> partitioned, all chunks Free
 *   Free --tryAcquireChunkForWriting--> BeingWritten --releaseChunkAsComplete--> Complete
 *   Complete --tryAcquireChunkForReading--> BeingRead --releaseChunkAsFree--> Free
 *   (the last chunk of a page going Free resets the page to not partitioned)
 * </pre>
 *
 * <p>Both sides may call every method, but the service must assume the producer writes
 * anything anywhere at any time: every method here validates what it reads from the
 * page header (layout, chunk index, state) and reports failure instead of following a
 * bad value, and no read-modify-write loop spins more than {@link #MAX_ATTEMPTS} times.
 * Page and chunk indices in the transitions may come from a producer's commit request:
 * out-of-range ones fail the transition rather than throw.
 * Perfetto's acq_rel compare-and-exchange is a Java volatile compare-and-set, which is
 * at least as strong.
 */
public final class SharedMemoryAbi {
    /** Compare-and-set attempts before a transition gives up (Perfetto's retry bound). */
    public static final int MAX_ATTEMPTS = 64;
    /** Returned by the acquire methods when no chunk was acquired. */
    public static final long NO_CHUNK = -1;

    private final MemorySegment segment;
    private final AtomicSegment atomics;
    private final int pageSize;
    private final int numPages;

    /**
     * @throws IllegalArgumentException if the page size is not 4..64 KiB in steps of 4 KiB,
     *         the segment is not a whole number of pages, or it is not 4 KiB aligned
     */
    public SharedMemoryAbi(MemorySegment segment, int pageSize) {
        if (!isValidPageSize(pageSize)) {
            throw new IllegalArgumentException("SMB page size must be 4096..65536 in steps of 4096, got " + pageSize);
        }
        if (segment.byteSize() == 0 || segment.byteSize() % pageSize != 0) {
            throw new IllegalArgumentException("SMB size " + segment.byteSize() + " is not a positive multiple of the page size " + pageSize);
        }
        if (segment.maxByteAlignment() < MIN_PAGE_SIZE) {
            throw new IllegalArgumentException("SMB must start on a 4096-byte boundary");
        }
        if (segment.byteSize() / pageSize > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("SMB has too many pages: " + segment.byteSize() / pageSize);
        }
        this.segment = segment;
        this.atomics = new AtomicSegment(segment);
        this.pageSize = pageSize;
        this.numPages = (int) (segment.byteSize() / pageSize);
    }

    public MemorySegment segment() {
        return segment;
    }

    public int pageSize() {
        return pageSize;
    }

    public int numPages() {
        return numPages;
    }

    // ---- pages ----

    private long pageOffset(int page) {
        return (long) page * pageSize;
    }

    /** The page's bitmap, loaded with acquire ordering. */
    public int pageBitmapAcquire(int page) {
        return atomics.getIntAcquire(pageOffset(page) + PAGE_BITMAP_OFFSET);
    }

    /** The page's bitmap, relaxed: for scans and statistics. */
    public int pageBitmapOpaque(int page) {
        return atomics.getIntOpaque(pageOffset(page) + PAGE_BITMAP_OFFSET);
    }

    public boolean isPageFree(int page) {
        return pageBitmapOpaque(page) == 0;
    }

    /** Whether the page is partitioned and every chunk in it is Complete. */
    public boolean isPageComplete(int page) {
        int bitmap = pageBitmapOpaque(page);
        int chunks = chunksPerLayout(layoutOf(bitmap));
        return chunks > 0 && (bitmap & ALL_CHUNKS_MASK) == (ALL_CHUNKS_MASK & ((1 << (chunks * CHUNK_STATE_BITS)) - 1));
    }

    public int pageLayout(int page) {
        return layoutOf(pageBitmapOpaque(page));
    }

    public int chunkState(int page, int chunk) {
        return chunkStateOf(pageBitmapOpaque(page), chunk);
    }

    /** Partitions a free page into {@code layout}'s chunks, all Free. Fails unless the bitmap is exactly 0. */
    public boolean tryPartitionPage(int page, int layout) {
        if (chunksPerLayout(layout) == 0) {
            throw new IllegalArgumentException("not a chunk layout: " + layout);
        }
        return atomics.compareAndSetInt(pageOffset(page) + PAGE_BITMAP_OFFSET, 0, layout << LAYOUT_SHIFT);
    }

    /** A bit set of the page's Free chunks (bit i for chunk i); 0 if the page is not partitioned or invalid. */
    public int freeChunks(int page) {
        int bitmap = pageBitmapOpaque(page);
        int chunks = chunksPerLayout(layoutOf(bitmap));
        int free = 0;
        for (int i = 0; i < chunks; i++) {
            if (chunkStateOf(bitmap, i) == CHUNK_FREE) {
                free |= 1 << i;
            }
        }
        return free;
    }

    /** Size of every chunk of a page with this layout (header included). */
    public int chunkSize(int layout) {
        return SharedMemoryAbiDescriptor.chunkSize(pageSize, layout);
    }

    /** Offset of chunk {@code chunk} of {@code page} in the segment, for a page of {@code layout}. */
    public long chunkOffset(int page, int chunk, int layout) {
        return pageOffset(page) + PAGE_HEADER_SIZE + (long) chunk * chunkSize(layout);
    }

    // ---- chunk transitions ----

    /**
     * Free → BeingWritten, then writes the chunk header (chunk id and writer id relaxed,
     * packets word last with release, count 0 and no flags). Returns the chunk's offset,
     * or {@link #NO_CHUNK} if the page is not partitioned, the index is past its chunks,
     * or the chunk is not Free.
     */
    public long tryAcquireChunkForWriting(int page, int chunk, int chunkId, int writerId) {
        return tryAcquireChunkForWriting(page, chunk, chunkId, writerId, 0);
    }

    /** As {@link #tryAcquireChunkForWriting(int, int, int, int)}, with an initial packets word (count and flags). */
    public long tryAcquireChunkForWriting(int page, int chunk, int chunkId, int writerId, int initialPackets) {
        long offset = tryTransition(page, chunk, CHUNK_FREE, CHUNK_BEING_WRITTEN);
        if (offset != NO_CHUNK) {
            atomics.putIntOpaque(offset + CHUNK_ID_OFFSET, chunkId);
            atomics.putShortOpaque(offset + CHUNK_WRITER_ID_OFFSET, (short) writerId);
            atomics.putShortRelease(offset + CHUNK_PACKETS_OFFSET, (short) initialPackets);
        }
        return offset;
    }

    /** Complete → BeingRead (service side). Returns the chunk's offset or {@link #NO_CHUNK}. */
    public long tryAcquireChunkForReading(int page, int chunk) {
        return tryTransition(page, chunk, CHUNK_COMPLETE, CHUNK_BEING_READ);
    }

    /** BeingWritten → Complete (producer side). Returns false if the chunk was not being written. */
    public boolean releaseChunkAsComplete(int page, int chunk) {
        return release(page, chunk, CHUNK_BEING_WRITTEN, CHUNK_COMPLETE);
    }

    /**
     * BeingRead → Free (service side): clears the chunk header first, then the state; the
     * page returns to not partitioned when this was its last non-free chunk. Returns false
     * if the chunk was not being read (the page header changed under us: a producer bug or
     * attack), or the bitmap kept changing for {@link #MAX_ATTEMPTS} attempts.
     */
    public boolean releaseChunkAsFree(int page, int chunk) {
        return release(page, chunk, CHUNK_BEING_READ, CHUNK_FREE);
    }

    private boolean release(int page, int chunk, int from, int to) {
        if (page < 0 || page >= numPages) {
            return false;
        }
        long bitmapOffset = pageOffset(page) + PAGE_BITMAP_OFFSET;
        int bitmap = atomics.getIntOpaque(bitmapOffset);
        int layout = layoutOf(bitmap);
        if (chunk < 0 || chunk >= chunksPerLayout(layout)) {
            return false;
        }
        if (to == CHUNK_FREE) {
            long offset = chunkOffset(page, chunk, layout);
            atomics.putIntOpaque(offset + CHUNK_ID_OFFSET, 0);
            atomics.putShortOpaque(offset + CHUNK_WRITER_ID_OFFSET, (short) 0);
            atomics.putShortRelease(offset + CHUNK_PACKETS_OFFSET, (short) 0);
        }
        int shift = chunk * CHUNK_STATE_BITS;
        for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
            if (layoutOf(bitmap) != layout || chunkStateOf(bitmap, chunk) != from) {
                return false;
            }
            int updated = (bitmap & ~(CHUNK_STATE_MASK << shift)) | (to << shift);
            if ((updated & ALL_CHUNKS_MASK) == 0) {
                updated = 0;
            }
            int witnessed = atomics.compareAndExchangeInt(bitmapOffset, bitmap, updated);
            if (witnessed == bitmap) {
                return true;
            }
            bitmap = witnessed;
        }
        return false;
    }

    private long tryTransition(int page, int chunk, int from, int to) {
        if (page < 0 || page >= numPages) {
            return NO_CHUNK;
        }
        long bitmapOffset = pageOffset(page) + PAGE_BITMAP_OFFSET;
        int bitmap = atomics.getIntAcquire(bitmapOffset);
        int layout = layoutOf(bitmap);
        int shift = chunk * CHUNK_STATE_BITS;
        for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
            if (chunk < 0 || chunk >= chunksPerLayout(layoutOf(bitmap)) || layoutOf(bitmap) != layout
                    || chunkStateOf(bitmap, chunk) != from) {
                return NO_CHUNK;
            }
            int witnessed = atomics.compareAndExchangeInt(bitmapOffset, bitmap,
                    (bitmap & ~(CHUNK_STATE_MASK << shift)) | (to << shift));
            if (witnessed == bitmap) {
                return chunkOffset(page, chunk, layout);
            }
            bitmap = witnessed;
        }
        return NO_CHUNK;
    }

    // ---- chunk header ----

    public int chunkId(long chunkOffset) {
        return atomics.getIntOpaque(chunkOffset + CHUNK_ID_OFFSET);
    }

    public int writerId(long chunkOffset) {
        return Short.toUnsignedInt(atomics.getShortOpaque(chunkOffset + CHUNK_WRITER_ID_OFFSET));
    }

    /** The packets word (count and flags), with acquire ordering: bytes of counted packets are visible after it. */
    public int packetsAcquire(long chunkOffset) {
        return Short.toUnsignedInt(atomics.getShortAcquire(chunkOffset + CHUNK_PACKETS_OFFSET));
    }

    /**
     * Counts one more packet started in the chunk and publishes it with a release store.
     * Not an atomic read-modify-write, as in Perfetto: only the chunk's owner calls it.
     * Returns the new count; past {@link SharedMemoryAbiDescriptor#MAX_PACKET_COUNT} it throws.
     */
    public int incrementPacketCount(long chunkOffset) {
        int packets = Short.toUnsignedInt(atomics.getShortOpaque(chunkOffset + CHUNK_PACKETS_OFFSET));
        int count = packetCountOf(packets);
        if (count >= MAX_PACKET_COUNT) {
            throw new IllegalStateException("chunk already holds " + MAX_PACKET_COUNT + " packets");
        }
        atomics.putShortRelease(chunkOffset + CHUNK_PACKETS_OFFSET, (short) (packets + 1));
        return count + 1;
    }

    /** Sets chunk flags (owner only) and publishes them with a release store. */
    public void setFlags(long chunkOffset, int flags) {
        int packets = Short.toUnsignedInt(atomics.getShortOpaque(chunkOffset + CHUNK_PACKETS_OFFSET));
        atomics.putShortRelease(chunkOffset + CHUNK_PACKETS_OFFSET,
                (short) (packets | ((flags & FLAGS_MASK) << FLAGS_SHIFT)));
    }

    /** Clears the needs-patching flag (owner only), with a release store. */
    public void clearNeedsPatchingFlag(long chunkOffset) {
        int packets = Short.toUnsignedInt(atomics.getShortOpaque(chunkOffset + CHUNK_PACKETS_OFFSET));
        atomics.putShortRelease(chunkOffset + CHUNK_PACKETS_OFFSET,
                (short) (packets & ~(FLAG_CHUNK_NEEDS_PATCHING << FLAGS_SHIFT)));
    }
}
