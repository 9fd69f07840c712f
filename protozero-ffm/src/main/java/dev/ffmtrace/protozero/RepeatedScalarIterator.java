package dev.ffmtrace.protozero;

import dev.ffmtrace.memory.Layouts;

import java.lang.foreign.MemorySegment;

/**
 * Iterates the elements of a repeated scalar field, whether each occurrence is a single
 * element or a packed run (protobuf parsers accept both for either declaration).
 * Obtained from a generated decoder; reusable, allocation-free. A malformed packed run
 * ends the iteration with {@link #hasError()} true.
 */
public final class RepeatedScalarIterator {
    private final ProtoDecoder decoder = new ProtoDecoder();
    private final VarIntReader varInt = new VarIntReader();
    private MemorySegment data = MemorySegment.NULL;
    private int fieldId;
    private int remaining;
    private int elementWireType;
    private long packedPosition;
    private long packedEnd;
    private long value;
    private boolean error;

    /** An iterator over nothing, for a decoder to point at a repeated field. */
    public RepeatedScalarIterator() {
    }

    void reset(MemorySegment data, long from, long end, int fieldId, int count, int elementWireType) {
        decoder.reset(data, from, end - from);
        this.data = data;
        this.fieldId = fieldId;
        this.remaining = count;
        this.elementWireType = elementWireType;
        this.packedPosition = 0;
        this.packedEnd = 0;
        this.error = false;
    }

    /** Moves to the next element; false at the end or on a malformed packed run. */
    public boolean next() {
        while (true) {
            if (packedPosition < packedEnd) {
                return readPacked();
            }
            if (remaining == 0 || error) {
                return false;
            }
            remaining--;
            if (!decoder.nextWithId(fieldId)) {
                return false;
            }
            ProtoField f = decoder.field();
            if (f.wireType() == ProtoWire.WIRE_TYPE_LENGTH_DELIMITED) {
                packedPosition = f.offset();
                packedEnd = packedPosition + f.length();
            } else if (f.wireType() == elementWireType) {
                value = f.asLong();
                return true;
            }
        }
    }

    private boolean readPacked() {
        long p = packedPosition;
        switch (elementWireType) {
            case ProtoWire.WIRE_TYPE_FIXED32 -> {
                if (packedEnd - p < Integer.BYTES) {
                    return fail();
                }
                value = Integer.toUnsignedLong(data.get(Layouts.INT_UNALIGNED, p));
                packedPosition = p + Integer.BYTES;
            }
            case ProtoWire.WIRE_TYPE_FIXED64 -> {
                if (packedEnd - p < Long.BYTES) {
                    return fail();
                }
                value = data.get(Layouts.LONG_UNALIGNED, p);
                packedPosition = p + Long.BYTES;
            }
            default -> {
                long varIntEnd = varInt.read(data, p, packedEnd);
                if (varIntEnd < 0) {
                    return fail();
                }
                value = varInt.value();
                packedPosition = varIntEnd;
            }
        }
        return true;
    }

    private boolean fail() {
        error = true;
        packedPosition = packedEnd;
        return false;
    }

    /** The current element as 64 bits (a fixed32 element zero-extended). */
    public long value() {
        return value;
    }

    /** Whether a packed run of this field was malformed. */
    public boolean hasError() {
        return error;
    }
}
