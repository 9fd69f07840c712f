package dev.ffmtrace.shmring;

import java.lang.foreign.MemorySegment;

/**
 * A reusable handle on one record of a {@link SharedRingBuffer}: the record being
 * written between {@code beginWrite} and {@code endWrite}, or being read between
 * {@code beginRead} and {@code endRead}.
 *
 * <p>The payload is {@link #length()} bytes at {@link #offset()} in {@link #buffer()},
 * the ring seen twice back to back, so a payload is contiguous even where it wraps.
 * Handing out buffer and offset instead of a fresh slice keeps the write and read paths
 * free of allocation; {@link #payload()} makes the slice for callers that do not mind.
 * A slot belongs to one buffer and one thread at a time; every writer thread needs its
 * own.
 *
 * <p>A payload being read lives in memory the other process can still write: copy what
 * must not change, and bound every offset read from it.
 */
public final class RecordSlot {
    static final int IDLE = 0;
    static final int WRITING = 1;
    static final int READING = 2;

    final SharedRingBuffer owner;
    final MemorySegment buffer;
    int state = IDLE;
    long headerOffset;
    long length;
    long stride;

    RecordSlot(SharedRingBuffer owner, MemorySegment buffer) {
        this.owner = owner;
        this.buffer = buffer;
    }

    /** Both copies of the ring; the payload is a part of it. */
    public MemorySegment buffer() {
        return buffer;
    }

    /** Offset of the first payload byte in {@link #buffer()}. */
    public long offset() {
        checkActive();
        return headerOffset + SharedRingBufferDescriptor.RECORD_HEADER_SIZE;
    }

    /** Payload length in bytes, at least 1. */
    public long length() {
        checkActive();
        return length;
    }

    /** A new slice over the payload (allocates; the hot paths use buffer, offset and length). */
    public MemorySegment payload() {
        return buffer.asSlice(offset(), length);
    }

    /** Whether the slot holds a record between a begin and its end. */
    public boolean isActive() {
        return state != IDLE;
    }

    private void checkActive() {
        if (state == IDLE) {
            throw new IllegalStateException("record slot holds no record (no successful beginWrite or beginRead)");
        }
    }
}
