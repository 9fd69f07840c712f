package dev.ffmtrace.protozero;

import dev.ffmtrace.memory.Layouts;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * Zero-copy decoder of the fields of one protobuf message in a {@link MemorySegment}.
 *
 * <pre>{@code
 * ProtoDecoder decoder = new ProtoDecoder().reset(segment);
 * while (decoder.next()) {
 *     ProtoField f = decoder.field();
 *     ...
 * }
 * if (decoder.status() != DecodeStatus.OK) { ... malformed ... }
 * }</pre>
 *
 * <p>Each field is presented through one reused {@link ProtoField} view, so iterating
 * allocates nothing. Malformed input stops the iteration with a {@link DecodeStatus}
 * other than {@code OK}; no exception is thrown for it and no byte outside
 * {@code [offset, offset + length)} of the segment is ever read.
 */
public final class ProtoDecoder {
    private final ProtoField field = new ProtoField();
    private final VarIntReader varInt = new VarIntReader();
    private MemorySegment data = MemorySegment.NULL;
    private long begin;
    private long position;
    private long end;
    private long fieldStart;
    private DecodeStatus status = DecodeStatus.OK;

    /** A decoder of no bytes yet: {@link #reset(MemorySegment)} gives it a message. */
    public ProtoDecoder() {
    }

    /** Decodes all of {@code data}. */
    public ProtoDecoder reset(MemorySegment data) {
        return reset(data, 0, data.byteSize());
    }

    /** Decodes the {@code length} bytes at {@code offset} of {@code data}. */
    public ProtoDecoder reset(MemorySegment data, long offset, long length) {
        Objects.checkFromIndexSize(offset, length, data.byteSize());
        this.data = data;
        this.begin = offset;
        this.position = offset;
        this.end = offset + length;
        this.fieldStart = offset;
        this.status = DecodeStatus.OK;
        field.clear();
        return this;
    }

    /** Decodes the bytes of a length-delimited field, e.g. a nested message. */
    public ProtoDecoder reset(ProtoField lengthDelimited) {
        return reset(lengthDelimited.segment(), lengthDelimited.offset(), lengthDelimited.length());
    }

    /**
     * Reads the next field into {@link #field()}.
     *
     * @return false at the end of the message or on malformed input (see {@link #status()})
     */
    public boolean next() {
        if (position >= end || status != DecodeStatus.OK) {
            return false;
        }
        fieldStart = position;
        long tag = readVarInt();
        long id = tag >>> 3;
        if (id == 0 || id > ProtoWire.MAX_FIELD_ID) {
            return status == DecodeStatus.OK ? fail(DecodeStatus.INVALID_FIELD_ID) : false;
        }
        int wireType = (int) tag & 7;
        if (wireType == ProtoWire.WIRE_TYPE_VARINT) {
            long value = readVarInt();
            if (status != DecodeStatus.OK) {
                return false;
            }
            field.set(data, (int) id, wireType, value, 0);
            return true;
        }
        if (wireType == ProtoWire.WIRE_TYPE_LENGTH_DELIMITED) {
            return readLengthDelimited((int) id);
        }
        return readFixed((int) id, wireType);
    }

    // Kept out of next() so that it stays small enough for the JIT to inline.
    private boolean readLengthDelimited(int id) {
        long length = readVarInt();
        if (status != DecodeStatus.OK) {
            return false;
        }
        if (Long.compareUnsigned(length, end - position) > 0) {
            return fail(DecodeStatus.LENGTH_PAST_END);
        }
        field.set(data, id, ProtoWire.WIRE_TYPE_LENGTH_DELIMITED, position, length);
        position += length;
        return true;
    }

    private boolean readFixed(int id, int wireType) {
        if (wireType == ProtoWire.WIRE_TYPE_FIXED64) {
            if (end - position < Long.BYTES) {
                return fail(DecodeStatus.TRUNCATED_FIXED);
            }
            field.set(data, id, wireType, data.get(Layouts.LONG_UNALIGNED, position), 0);
            position += Long.BYTES;
            return true;
        }
        if (wireType == ProtoWire.WIRE_TYPE_FIXED32) {
            if (end - position < Integer.BYTES) {
                return fail(DecodeStatus.TRUNCATED_FIXED);
            }
            field.set(data, id, wireType, Integer.toUnsignedLong(data.get(Layouts.INT_UNALIGNED, position)), 0);
            position += Integer.BYTES;
            return true;
        }
        return fail(DecodeStatus.INVALID_WIRE_TYPE);
    }

    /** Reads the fields until one with {@code fieldId}; false if none is left or on error. */
    public boolean nextWithId(int fieldId) {
        while (next()) {
            if (field.id() == fieldId) {
                return true;
            }
        }
        return false;
    }

    /** One-byte varints (most tags, small values) inline; the rest in a separate method. */
    private long readVarInt() {
        long p = position;
        if (p < end) {
            byte b = data.get(Layouts.BYTE, p);
            if (b >= 0) {
                position = p + 1;
                return b;
            }
        }
        return readVarIntSlow();
    }

    private long readVarIntSlow() {
        long varIntEnd = varInt.read(data, position, end);
        if (varIntEnd < 0) {
            fail(varIntEnd == VarIntReader.TRUNCATED ? DecodeStatus.TRUNCATED_VARINT : DecodeStatus.VARINT_TOO_LONG);
            return 0;
        }
        position = varIntEnd;
        return varInt.value();
    }

    private boolean fail(DecodeStatus failure) {
        status = failure;
        position = fieldStart;
        field.clear();
        return false;
    }

    /** The field {@link #next()} read last. */
    public ProtoField field() {
        return field;
    }

    /** Offset in the segment of the tag of the field read last (or of the malformed one). */
    public long fieldStart() {
        return fieldStart;
    }

    /** Where the next field starts. */
    public long position() {
        return position;
    }

    /** Bytes not decoded yet; non-zero after a failure. */
    public long bytesLeft() {
        return end - position;
    }

    public long begin() {
        return begin;
    }

    public long end() {
        return end;
    }

    public MemorySegment segment() {
        return data;
    }

    public DecodeStatus status() {
        return status;
    }

    public boolean hasError() {
        return status != DecodeStatus.OK;
    }
}
