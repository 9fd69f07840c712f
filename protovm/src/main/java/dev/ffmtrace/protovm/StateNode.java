package dev.ffmtrace.protovm;

/**
 * A node of the incremental state: a schema-less protobuf tree decoded only as far as a
 * program walks into it. The kinds are Perfetto's {@code Node} alternatives; a node keeps its
 * kind's data in its own fields so that changing kind (bytes decoded into a message, a field
 * turned repeated) rewires the node in place, as the C++ variant does, and every cursor
 * pointing at it stays valid.
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

    byte kind = EMPTY;
    /** Set while a merge into the parent message is under way: this field was written by it. */
    boolean merged;
    int wireType;
    long scalar;
    /** A BYTES node's blob; null when it is empty. */
    byte[] bytes;
    /** A MESSAGE's fields, an INDEXED or MAPPED field's elements. */
    EntryMap entries;

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

    int bytesLength() {
        return bytes == null ? 0 : bytes.length;
    }

    /** Takes {@code other}'s value (kind and data) and leaves {@code other} EMPTY: the C++ move of a variant. */
    void takeValueOf(StateNode other) {
        kind = other.kind;
        wireType = other.wireType;
        scalar = other.scalar;
        bytes = other.bytes;
        entries = other.entries;
        other.kind = EMPTY;
        other.bytes = null;
        other.entries = null;
    }

    void becomeEmpty() {
        kind = EMPTY;
        bytes = null;
        entries = null;
    }

    void becomeMap(byte mapKind) {
        kind = mapKind;
        bytes = null;
        entries = new EntryMap();
    }

    void becomeScalar(int wireType, long value) {
        kind = SCALAR;
        this.wireType = wireType;
        scalar = value;
        bytes = null;
        entries = null;
    }

    void becomeBytes(byte[] blob) {
        kind = BYTES;
        bytes = blob;
        entries = null;
    }
}
