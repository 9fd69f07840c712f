package dev.ffmtrace.heapprofd.service;

import java.util.AbstractList;
import java.util.Objects;
import java.util.RandomAccess;

/**
 * The frames of one unwound stack, innermost first, in an array its {@link Unwinder} fills
 * again on each unwind: a stack costs no allocation on the record path. Valid until the
 * next unwind; whoever keeps the frames copies them ({@link HeapBooks} keeps only the
 * callsite they lead to).
 */
final class FrameBuffer extends AbstractList<Frame> implements RandomAccess {
    private final Frame[] frames;
    private int size;

    /** @param capacity the most frames one stack has */
    FrameBuffer(int capacity) {
        this.frames = new Frame[capacity];
    }

    @Override
    public Frame get(int index) {
        Objects.checkIndex(index, size);
        return frames[index];
    }

    @Override
    public int size() {
        return size;
    }

    /** Appends {@code frame}, the caller of the last. */
    @Override
    public boolean add(Frame frame) {
        frames[size++] = frame;
        return true;
    }

    /** Empties the buffer for the next stack. */
    @Override
    public void clear() {
        size = 0;
    }
}
