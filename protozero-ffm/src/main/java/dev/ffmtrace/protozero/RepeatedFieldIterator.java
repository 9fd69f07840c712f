package dev.ffmtrace.protozero;

import java.lang.foreign.MemorySegment;

/**
 * Iterates the occurrences of one field of a message, in order, as {@link ProtoField}
 * views. Obtained from a generated decoder; reusable, allocation-free.
 */
public final class RepeatedFieldIterator {
    private final ProtoDecoder decoder = new ProtoDecoder();
    private int fieldId;
    private int remaining;

    /** An iterator over nothing, for a decoder to point at a repeated field. */
    public RepeatedFieldIterator() {
    }

    void reset(MemorySegment data, long from, long end, int fieldId, int count) {
        decoder.reset(data, from, end - from);
        this.fieldId = fieldId;
        this.remaining = count;
    }

    /** Moves to the next occurrence; false when there is none. */
    public boolean next() {
        if (remaining == 0) {
            return false;
        }
        remaining--;
        return decoder.nextWithId(fieldId);
    }

    /** The current occurrence; valid until {@link #next()}. */
    public ProtoField field() {
        return decoder.field();
    }
}
