package dev.ffmtrace.tracing.buffer;

import java.util.Arrays;
import java.util.Objects;

/**
 * The 4-byte patches of one chunk, for {@link TraceBufferV2#tryPatchChunkContents}: each
 * an offset into the chunk's payload and the four bytes to write there, in payload
 * order. Offsets come from the producer and are untrusted: any value is accepted here,
 * and the buffer refuses the patches if one does not fit the chunk.
 *
 * <p>Mutable and reusable ({@link #clear()}), so applying patches allocates nothing
 * once the list has grown to the largest batch.
 */
public final class ChunkPatches {
    private long[] offsets = new long[8];
    /** The four bytes of each patch, little-endian: byte 0 in bits 0..7, as stored by one int write. */
    private int[] data = new int[8];
    private int size;

    /** An empty list of patches. */
    public ChunkPatches() {
    }

    /** Removes every patch; keeps the storage. */
    public ChunkPatches clear() {
        size = 0;
        return this;
    }

    /** Adds a patch writing {@code b0, b1, b2, b3} at payload offset {@code offset} onwards. */
    public ChunkPatches add(long offset, byte b0, byte b1, byte b2, byte b3) {
        return addLittleEndian(offset, b0 & 0xFF | (b1 & 0xFF) << 8 | (b2 & 0xFF) << 16 | (b3 & 0xFF) << 24);
    }

    /**
     * Adds a patch whose four bytes are already packed little-endian in {@code bytes}
     * (byte 0 in bits 0..7), as an SMB commit request holds them.
     */
    public ChunkPatches addLittleEndian(long offset, int bytes) {
        if (size == offsets.length) {
            offsets = Arrays.copyOf(offsets, size * 2);
            data = Arrays.copyOf(data, size * 2);
        }
        offsets[size] = offset;
        data[size] = bytes;
        size++;
        return this;
    }

    /** Number of patches. */
    public int size() {
        return size;
    }

    /** Payload offset of patch {@code i}. */
    public long offset(int i) {
        return offsets[Objects.checkIndex(i, size)];
    }

    /** Byte {@code j} (0..3) of patch {@code i}. */
    public byte byteAt(int i, int j) {
        return (byte) (littleEndianBytes(i) >>> (Objects.checkIndex(j, TraceBufferV2.PATCH_SIZE) * Byte.SIZE));
    }

    /** The four bytes of patch {@code i}, packed little-endian. */
    int littleEndianBytes(int i) {
        return data[Objects.checkIndex(i, size)];
    }
}
