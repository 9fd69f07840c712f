package dev.ffmtrace.protovm;

import java.lang.foreign.MemorySegment;

/**
 * The SRC cursor: a read-only position in the patch, Perfetto's {@code RoCursor}. It points
 * either at a run of bytes (the whole patch, or an element entered by index) or at one decoded
 * field; fields are found by scanning the bytes again on every step, as the C++ does, so the
 * cursor holds offsets only and the patch is never copied.
 */
final class PatchCursor {
    private MemorySegment data = MemorySegment.NULL;
    /** False: a run of bytes at {@link #offset}; true: a field of {@link #type}. */
    private boolean isField;
    private int type;
    private long value;
    private long offset;
    private long length;

    PatchCursor setBytes(MemorySegment data, long offset, long length) {
        this.data = data;
        this.isField = false;
        this.offset = offset;
        this.length = length;
        return this;
    }

    /** Points at the field {@code reader} just read. */
    void setField(WireReader reader) {
        data = reader.segment();
        isField = true;
        type = reader.type();
        value = reader.value();
        offset = reader.payloadOffset();
        length = reader.payloadLength();
    }

    void set(PatchCursor other) {
        data = other.data;
        isField = other.isField;
        type = other.type;
        value = other.value;
        offset = other.offset;
        length = other.length;
    }

    /** Moves to the first field {@code fieldId}: OK, ERROR when there is none, ABORT on a scalar. */
    int enterField(WireReader reader, int fieldId, AbortTrace trace) {
        if (!lengthDelimitedData(reader, trace)) {
            return Status.CODE_ABORT;
        }
        while (reader.next()) {
            if (reader.id() == fieldId) {
                setField(reader);
                return Status.CODE_OK;
            }
        }
        return Status.CODE_ERROR;
    }

    /**
     * Moves to the bytes of the {@code index}th field {@code fieldId}. A scalar element is
     * entered as no bytes: the C++ reads a scalar's zero payload length there.
     */
    int enterRepeatedFieldAt(WireReader reader, int fieldId, long index, AbortTrace trace) {
        if (!lengthDelimitedData(reader, trace)) {
            return Status.CODE_ABORT;
        }
        long current = 0;
        while (reader.next()) {
            if (reader.id() != fieldId) {
                continue;
            }
            if (current == index) {
                if (reader.isLengthDelimited()) {
                    setBytes(reader.segment(), reader.payloadOffset(), reader.payloadLength());
                } else {
                    setBytes(reader.segment(), 0, 0);
                }
                return Status.CODE_OK;
            }
            current++;
        }
        return Status.CODE_ERROR;
    }

    /** Points {@code reader} at the bytes this cursor is in, for iterating them; false (aborted) on a scalar. */
    boolean lengthDelimitedData(WireReader reader, AbortTrace trace) {
        if (isField && type != WireReader.LENGTH_DELIMITED) {
            trace.abort("Attempted to access field as length-delimited, but actual wire type is " + type);
            return false;
        }
        reader.reset(data, offset, length);
        return true;
    }

    boolean isScalar() {
        return isField && type != WireReader.LENGTH_DELIMITED;
    }

    boolean isBytes() {
        return !isField || type == WireReader.LENGTH_DELIMITED;
    }

    int type() {
        return type;
    }

    long value() {
        return value;
    }

    MemorySegment data() {
        return data;
    }

    long offset() {
        return offset;
    }

    long length() {
        return length;
    }
}
