package dev.ffmtrace.protovm;

import dev.ffmtrace.memory.Layouts;

import java.lang.foreign.MemorySegment;

/**
 * Reads the fields of one message exactly as Perfetto's protozero {@code ProtoDecoder::ReadField}
 * does, because the VM's results (which fields a patch has, what a state decodes into) must
 * match the C++ byte for byte: it stops silently at the first malformed field; it skips, and
 * does not stop at, a well-formed field whose id (the tag's bits above the wire type, cut to
 * 32 bits) is above {@link #MAX_FIELD_ID}; a tag that is the last byte of the message ends it.
 * Never reads outside the range it was given.
 */
final class WireReader {
    /** protozero's {@code Field::kMaxId}: ids above it are skipped. */
    static final long MAX_FIELD_ID = (1L << 24) - 1;
    static final int VARINT = 0;
    static final int FIXED64 = 1;
    static final int LENGTH_DELIMITED = 2;
    static final int FIXED32 = 5;

    private MemorySegment data = MemorySegment.NULL;
    private long position;
    private long end;
    private int id;
    private int type;
    /** The value of a scalar field; the offset of the payload of a length-delimited one. */
    private long value;
    private long length;

    /** Reads the {@code length} bytes at {@code offset} of {@code data}. */
    WireReader reset(MemorySegment data, long offset, long length) {
        this.data = data;
        this.position = offset;
        this.end = offset + length;
        this.id = 0;
        return this;
    }

    /** The next field, skipping those with too large an id; false at the end or at malformed bytes. */
    boolean next() {
        while (position < end) {
            long tag = readVarInt();
            if (varIntFailed) {
                return stop();
            }
            int fieldId = (int) (tag >>> 3);
            if (fieldId == 0 || position >= end) {
                return stop();
            }
            int wireType = (int) tag & 7;
            switch (wireType) {
                case VARINT -> {
                    value = readVarInt();
                    if (varIntFailed) {
                        return stop();
                    }
                    length = 0;
                }
                case LENGTH_DELIMITED -> {
                    long size = readVarInt();
                    if (varIntFailed || Long.compareUnsigned(size, end - position) > 0) {
                        return stop();
                    }
                    value = position;
                    length = size;
                    position += size;
                }
                case FIXED64 -> {
                    if (end - position < Long.BYTES) {
                        return stop();
                    }
                    value = data.get(Layouts.LONG_UNALIGNED, position);
                    length = 0;
                    position += Long.BYTES;
                }
                case FIXED32 -> {
                    if (end - position < Integer.BYTES) {
                        return stop();
                    }
                    value = Integer.toUnsignedLong(data.get(Layouts.INT_UNALIGNED, position));
                    length = 0;
                    position += Integer.BYTES;
                }
                default -> {
                    return stop();
                }
            }
            if (Integer.toUnsignedLong(fieldId) <= MAX_FIELD_ID) {
                id = fieldId;
                type = wireType;
                return true;
            }
        }
        return stop();
    }

    private boolean stop() {
        position = end;
        id = 0;
        return false;
    }

    /** Set by {@link #readVarInt} when the bytes ran out or the varint was longer than 10 bytes. */
    private boolean varIntFailed;

    private long readVarInt() {
        long result = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (position >= end) {
                varIntFailed = true;
                return -1;
            }
            byte b = data.get(Layouts.BYTE, position++);
            result |= (long) (b & 0x7f) << shift;
            if (b >= 0) {
                varIntFailed = false;
                return result;
            }
        }
        varIntFailed = true;
        return -1;
    }

    int id() {
        return id;
    }

    int type() {
        return type;
    }

    /** A scalar field's value as protozero's {@code as_uint64} gives it (fixed32 zero-extended). */
    long value() {
        return value;
    }

    /** A length-delimited field's payload offset in {@link #segment()}. */
    long payloadOffset() {
        return value;
    }

    /** A length-delimited field's payload length. */
    long payloadLength() {
        return length;
    }

    MemorySegment segment() {
        return data;
    }

    boolean isLengthDelimited() {
        return type == LENGTH_DELIMITED;
    }
}
