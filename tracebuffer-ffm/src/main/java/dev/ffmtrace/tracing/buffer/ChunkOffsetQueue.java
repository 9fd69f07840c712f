package dev.ffmtrace.tracing.buffer;

/**
 * A deque of (chunk offset, chunk id) pairs in chunk-id order: O(1) at both ends for
 * the common in-order case, O(n) insertion and removal in the middle for the rare
 * out-of-order commit and relocation. The ids are kept next to the offsets so that
 * ordering a new chunk never reads an old chunk's header from the buffer. Grows by
 * doubling; never shrinks.
 */
final class ChunkOffsetQueue {
    /** {@code chunkId << 32 | offset}, in a ring starting at {@link #head}. */
    private long[] items;
    private int head;
    private int size;

    ChunkOffsetQueue(int initialCapacity) {
        items = new long[Integer.highestOneBit(Math.max(2, initialCapacity - 1)) << 1];
    }

    private ChunkOffsetQueue(ChunkOffsetQueue other) {
        items = other.items.clone();
        head = other.head;
        size = other.size;
    }

    ChunkOffsetQueue copy() {
        return new ChunkOffsetQueue(this);
    }

    int size() {
        return size;
    }

    boolean isEmpty() {
        return size == 0;
    }

    int offsetAt(int index) {
        return (int) item(index);
    }

    int chunkIdAt(int index) {
        return (int) (item(index) >>> 32);
    }

    void removeFirst() {
        assert size > 0;
        head = (head + 1) & (items.length - 1);
        size--;
    }

    /** Inserts at logical {@code index}, shifting the later items back by one. */
    void insert(int index, int offset, int chunkId) {
        assert index >= 0 && index <= size : index;
        if (size == items.length) {
            grow();
        }
        int mask = items.length - 1;
        for (int i = size; i > index; i--) {
            items[(head + i) & mask] = items[(head + i - 1) & mask];
        }
        items[(head + index) & mask] = (long) chunkId << 32 | (offset & 0xFFFFFFFFL);
        size++;
    }

    private long item(int index) {
        assert index >= 0 && index < size : index;
        return items[(head + index) & (items.length - 1)];
    }

    private void grow() {
        long[] grown = new long[items.length * 2];
        for (int i = 0; i < size; i++) {
            grown[i] = items[(head + i) & (items.length - 1)];
        }
        items = grown;
        head = 0;
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < size; i++) {
            sb.append(i == 0 ? "" : ", ").append(chunkIdAt(i)).append('@').append(offsetAt(i));
        }
        return sb.append(']').toString();
    }
}
