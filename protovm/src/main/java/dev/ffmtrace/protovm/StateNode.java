package dev.ffmtrace.protovm;

import java.lang.foreign.MemorySegment;

/**
 * A node of the incremental state: a schema-less protobuf tree decoded only as far as a
 * program walks into it. The kinds are Perfetto's {@code Node} alternatives; a node keeps its
 * kind's data in its own fields so that changing kind (bytes decoded into a message, a field
 * turned repeated) rewires the node in place, as the C++ variant does, and every cursor
 * pointing at it stays valid.
 *
 * <p>A node owns a map and a blob buffer that outlive its kind: the allocator recycles
 * freed nodes, so a VM whose state keeps its shape allocates nothing per patch.
 */
final class StateNode {
    static final byte EMPTY = 0;
    static final byte BYTES = 1;
    static final byte SCALAR = 2;
    static final byte MESSAGE = 3;
    /** A repeated field by position: keys 0..n-1 (more after a del, which never shifts them). */
    static final byte INDEXED = 4;
    /** A repeated field of messages by the value of one of their scalar fields. */
    static final byte MAPPED = 5;

    private static final byte[] NO_BYTES = {};
    private static final MemorySegment NO_SEGMENT = MemorySegment.ofArray(NO_BYTES);

    byte kind = EMPTY;
    /** Set while a merge into the parent message is under way: this field was written by it. */
    boolean merged;
    int wireType;
    long scalar;
    /** A BYTES node's blob is {@code blob[0, blobLength)}; the array is kept for reuse. */
    private byte[] blob = NO_BYTES;
    private MemorySegment blobSegment = NO_SEGMENT;
    int blobLength;
    /** A MESSAGE's fields, an INDEXED or MAPPED field's elements; empty for the other kinds. */
    EntryMap entries = new EntryMap();

    String kindName() {
        return switch (kind) {
            case EMPTY -> "Empty";
            case BYTES -> "Bytes";
            case SCALAR -> "Scalar";
            case MESSAGE -> "Message";
            case INDEXED -> "IndexedRepeatedField";
            default -> "MappedRepeatedField";
        };
    }

    boolean isMap() {
        return kind >= MESSAGE;
    }

    byte[] blob() {
        return blob;
    }

    MemorySegment blobSegment() {
        return blobSegment;
    }

    /** A fresh EMPTY node of the allocator's: what it held was freed before. */
    void reset() {
        kind = EMPTY;
        merged = false;
        blobLength = 0;
    }

    /**
     * Takes {@code other}'s value (kind and data) and leaves {@code other} EMPTY: the C++ move
     * of a variant. The maps and blob buffers trade places, so nothing is copied or allocated.
     */
    void takeValueOf(StateNode other) {
        kind = other.kind;
        wireType = other.wireType;
        scalar = other.scalar;
        EntryMap map = entries;
        entries = other.entries;
        other.entries = map;
        byte[] buffer = blob;
        MemorySegment segment = blobSegment;
        int length = blobLength;
        blob = other.blob;
        blobSegment = other.blobSegment;
        blobLength = other.blobLength;
        other.blob = buffer;
        other.blobSegment = segment;
        other.blobLength = length;
        other.kind = EMPTY;
    }

    /** Becomes an empty map kind; what it held must have been freed. */
    void becomeMap(byte mapKind) {
        kind = mapKind;
        blobLength = 0;
    }

    void becomeEmpty() {
        kind = EMPTY;
        blobLength = 0;
    }

    void becomeScalar(int wireType, long value) {
        kind = SCALAR;
        this.wireType = wireType;
        scalar = value;
        blobLength = 0;
    }

    /** Becomes a copy of {@code data[offset, offset + length)}, reusing the blob buffer when it is large enough. */
    void becomeBytes(MemorySegment data, long offset, int length) {
        if (blob.length < length) {
            blob = new byte[length];
            blobSegment = MemorySegment.ofArray(blob);
        }
        MemorySegment.copy(data, offset, blobSegment, 0, length);
        kind = BYTES;
        blobLength = length;
    }
}
