package dev.ffmtrace.protozero;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.util.Arrays;
import java.util.Objects;

/**
 * A {@link ScatteredStreamWriter.Delegate} that hands out slices it allocates itself,
 * the first of {@code initialSliceSize} bytes and each next one twice the previous, up
 * to {@code maxSliceSize}. Slices are kept across {@link #reset()} and handed out again
 * in the same order, so a reused buffer allocates nothing and produces the same bytes
 * as a fresh one.
 */
public final class ScatteredHeapBuffer implements ScatteredStreamWriter.Delegate {
    private final SegmentAllocator allocator;
    private final long initialSliceSize;
    private final long maxSliceSize;
    private MemorySegment[] slices = new MemorySegment[4];
    private long[] usedBytes = new long[4];
    private int allocated;
    private int current = -1;
    private ScatteredStreamWriter writer;

    /**
     * @param allocator where slices come from: {@code null} for heap {@code byte[]}
     *                  slices, or an arena for off-heap ones (they live as long as it)
     */
    public ScatteredHeapBuffer(SegmentAllocator allocator, long initialSliceSize, long maxSliceSize) {
        if (initialSliceSize < ProtoWire.MESSAGE_LENGTH_FIELD_SIZE || maxSliceSize < initialSliceSize) {
            throw new IllegalArgumentException("need " + ProtoWire.MESSAGE_LENGTH_FIELD_SIZE
                    + " <= initialSliceSize <= maxSliceSize, got " + initialSliceSize + ", " + maxSliceSize);
        }
        this.allocator = allocator;
        this.initialSliceSize = initialSliceSize;
        this.maxSliceSize = maxSliceSize;
    }

    /** The writer whose position closes the last slice; set once, before writing. */
    public void setWriter(ScatteredStreamWriter writer) {
        this.writer = writer;
    }

    @Override
    public MemorySegment newSlice(long usedBytesOfPrevious) {
        if (current >= 0) {
            usedBytes[current] = usedBytesOfPrevious;
        }
        current++;
        if (current == allocated) {
            allocateSlice();
        }
        usedBytes[current] = 0;
        return slices[current];
    }

    private void allocateSlice() {
        if (allocated == slices.length) {
            slices = Arrays.copyOf(slices, allocated * 2);
            usedBytes = Arrays.copyOf(usedBytes, allocated * 2);
        }
        long size = allocated == 0 ? initialSliceSize
                : Math.min(maxSliceSize, slices[allocated - 1].byteSize() * 2);
        slices[allocated++] = allocator == null
                ? MemorySegment.ofArray(new byte[Math.toIntExact(size)])
                : allocator.allocate(size);
    }

    /** Number of slices holding data. */
    public int sliceCount() {
        return current + 1;
    }

    private long used(int index) {
        if (index < current) {
            return usedBytes[index];
        }
        if (writer == null) {
            throw new IllegalStateException("setWriter was not called: the last slice's end is unknown");
        }
        return writer.position();
    }

    /** The used part of slice {@code index}; the last one ends at the writer's position. */
    public MemorySegment usedSlice(int index) {
        Objects.checkIndex(index, current + 1);
        return slices[index].asSlice(0, used(index));
    }

    /** Bytes of stream data held across all slices. */
    public long size() {
        long total = 0;
        for (int i = 0; i <= current; i++) {
            total += used(i);
        }
        return total;
    }

    /** Copies the stream data into {@code dst} at {@code offset}; returns the bytes copied. */
    public long copyTo(MemorySegment dst, long offset) {
        long at = offset;
        for (int i = 0; i <= current; i++) {
            long used = used(i);
            MemorySegment.copy(slices[i], 0, dst, at, used);
            at += used;
        }
        return at - offset;
    }

    /** Forgets the data; the allocated slices are kept for reuse. */
    public void reset() {
        current = -1;
    }

    /**
     * Forgets the data and makes the first slice current again, for the writer to
     * continue in without asking for it ({@link ScatteredStreamWriter#reset}); returns
     * {@link MemorySegment#NULL}, and changes nothing else, if no slice was allocated yet.
     */
    public MemorySegment resetToFirstSlice() {
        current = -1;
        return allocated == 0 ? MemorySegment.NULL : newSlice(0);
    }
}
