package dev.ffmtrace.protozero;

import dev.ffmtrace.memory.Layouts;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;

/**
 * A view of one decoded field: its id, wire type and value. For length-delimited fields
 * the value is a range of the decoded segment, not a copy. Views are reused by the
 * decoder that fills them: one stays valid until that decoder moves on.
 */
public final class ProtoField {
    private MemorySegment data = MemorySegment.NULL;
    private int id;
    private int wireType;
    private long value;
    private long length;

    /** An empty field, for a decoder to point at one. */
    public ProtoField() {
    }

    void set(MemorySegment data, int id, int wireType, long value, long length) {
        this.data = data;
        this.id = id;
        this.wireType = wireType;
        this.value = value;
        this.length = length;
    }

    void clear() {
        set(MemorySegment.NULL, 0, 0, 0, 0);
    }

    /** False for the empty view a lookup of an absent field returns. */
    public boolean valid() {
        return id != 0;
    }

    public int id() {
        return id;
    }

    /** One of the {@code ProtoWire.WIRE_TYPE_*} constants. */
    public int wireType() {
        return wireType;
    }

    /** The varint or fixed value as 64 bits; for a length-delimited field, its offset. */
    public long asLong() {
        return value;
    }

    public int asInt() {
        return (int) value;
    }

    public boolean asBool() {
        return value != 0;
    }

    public int asSInt32() {
        return ProtoWire.zigZagDecode32((int) value);
    }

    public long asSInt64() {
        return ProtoWire.zigZagDecode64(value);
    }

    public float asFloat() {
        return Float.intBitsToFloat((int) value);
    }

    public double asDouble() {
        return Double.longBitsToDouble(value);
    }

    /** The segment a length-delimited field's bytes are in. */
    public MemorySegment segment() {
        return data;
    }

    /** Offset of a length-delimited field's bytes in {@link #segment()}. */
    public long offset() {
        return wireType == ProtoWire.WIRE_TYPE_LENGTH_DELIMITED ? value : 0;
    }

    /** Number of bytes of a length-delimited field; 0 for other wire types. */
    public long length() {
        return length;
    }

    /** A slice of the decoded segment holding a length-delimited field's bytes. */
    public MemorySegment asSlice() {
        return data.asSlice(offset(), length);
    }

    /** A length-delimited field's bytes decoded as UTF-8 (malformed sequences replaced). */
    public String asString() {
        if (wireType != ProtoWire.WIRE_TYPE_LENGTH_DELIMITED) {
            return "";
        }
        return new String(asBytes(), StandardCharsets.UTF_8);
    }

    /** A copy of a length-delimited field's bytes. */
    public byte[] asBytes() {
        if (wireType != ProtoWire.WIRE_TYPE_LENGTH_DELIMITED) {
            return new byte[0];
        }
        byte[] bytes = new byte[Math.toIntExact(length)];
        MemorySegment.copy(data, Layouts.BYTE, value, bytes, 0, bytes.length);
        return bytes;
    }

    @Override
    public String toString() {
        return "ProtoField{id=" + id + ", wireType=" + wireType + ", value=" + value
                + ", length=" + length + "}";
    }
}
