package dev.ffmtrace.protovm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Counts the state's memory exactly as Perfetto's ProtoVM allocator does, because the limit
 * decides where a patch aborts and the count is part of what must match: 48 bytes
 * ({@link #NODE_SIZE}, {@code kNodeSize} on LP64) for every node and every map entry, a
 * blob's length for its bytes, nothing for the root. A request that would pass the limit
 * aborts and allocates nothing; what leaks in the C++ (a node a failed conversion drops)
 * stays counted here too.
 */
final class StateAllocator {
    static final int NODE_SIZE = 48;
    static final byte[] NO_BYTES = {};

    private final long limit;
    private final AbortTrace trace;
    private long used;

    StateAllocator(long limit, AbortTrace trace) {
        this.limit = limit;
        this.trace = trace;
    }

    long used() {
        return used;
    }

    /** A new EMPTY node, or null (aborted) past the limit. */
    StateNode createNode() {
        if (!reserveNode()) {
            return null;
        }
        return new StateNode();
    }

    /** A new entry holding {@code value}, or null (aborted, {@code value} freed) past the limit. */
    EntryMap.Entry createEntry(long key, StateNode value) {
        if (!reserveNode()) {
            delete(value);
            return null;
        }
        return new EntryMap.Entry(key, value);
    }

    private boolean reserveNode() {
        if (used + NODE_SIZE > limit) {
            trace.abort("Failed to allocate element (" + NODE_SIZE + " bytes). Memory limit: " + limit
                    + " [bytes]. Used: " + used + " [bytes].");
            return false;
        }
        used += NODE_SIZE;
        return true;
    }

    /** A copy of {@code length} bytes at {@code offset} ({@link #NO_BYTES} when empty), or null (aborted) past the limit. */
    byte[] copyBytes(MemorySegment data, long offset, long length) {
        if (used + length > limit) {
            trace.abort("Failed to allocate " + length + " bytes. Memory limit: " + limit + " bytes. Used: "
                    + used + " bytes.");
            return null;
        }
        if (length == 0) {
            return NO_BYTES;
        }
        byte[] copy = new byte[Math.toIntExact(length)];
        MemorySegment.copy(data, ValueLayout.JAVA_BYTE, offset, copy, 0, copy.length);
        used += length;
        return copy;
    }

    /** Frees {@code node} and everything under it. */
    void delete(StateNode node) {
        deleteReferencedData(node);
        used -= NODE_SIZE;
    }

    /** Frees an entry and its node. */
    void delete(EntryMap.Entry entry) {
        delete(entry.value);
        used -= NODE_SIZE;
    }

    /** Frees what {@code node} holds (its entries or blob) and leaves its kind as it is. */
    void deleteReferencedData(StateNode node) {
        switch (node.kind) {
            case StateNode.MESSAGE, StateNode.INDEXED, StateNode.MAPPED -> {
                for (EntryMap.Entry entry : node.entries.drain()) {
                    delete(entry);
                }
            }
            case StateNode.BYTES -> {
                freeBytes(node.bytes);
                node.bytes = NO_BYTES;
            }
            default -> {
            }
        }
    }

    /** Frees a blob {@link #copyBytes} returned. */
    void freeBytes(byte[] blob) {
        used -= blob == null ? 0 : blob.length;
    }

    /** Frees a detached map's entries. */
    void deleteEntries(EntryMap map) {
        for (EntryMap.Entry entry : map.drain()) {
            delete(entry);
        }
    }
}
