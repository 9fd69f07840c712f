package dev.ffmtrace.protovm;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * Counts the state's memory exactly as Perfetto's ProtoVM allocator does, because the limit
 * decides where a patch aborts and the count is part of what must match: 48 bytes
 * ({@link #NODE_SIZE}, {@code kNodeSize} on LP64) for every node and every map entry, a
 * blob's length for its bytes, nothing for the root. A request that would pass the limit
 * aborts and takes nothing; what leaks in the C++ (a node a failed conversion drops) stays
 * counted here too.
 *
 * <p>Freed nodes and entries go to free lists and come back from them, as the C++'s slab
 * allocator recycles its slots: a state that keeps its shape costs no allocation per patch.
 */
final class StateAllocator {
    static final int NODE_SIZE = 48;

    private final long limit;
    private final AbortTrace trace;
    private long used;
    private StateNode[] freeNodes = new StateNode[16];
    private int freeNodeCount;
    private EntryMap.Entry[] freeEntries = new EntryMap.Entry[16];
    private int freeEntryCount;

    StateAllocator(long limit, AbortTrace trace) {
        this.limit = limit;
        this.trace = trace;
    }

    long used() {
        return used;
    }

    /** A new EMPTY node, or null (aborted) past the limit. */
    StateNode createNode() {
        return reserve(NODE_SIZE) ? takeNode() : null;
    }

    /** A new node holding a copy of {@code length} bytes at {@code offset}, or null (aborted) past the limit. */
    StateNode createBytesNode(MemorySegment data, long offset, long length) {
        // The C++ copies the bytes first, then allocates the node.
        if (!reserve(length)) {
            return null;
        }
        if (!reserve(NODE_SIZE)) {
            used -= length;
            return null;
        }
        StateNode node = takeNode();
        node.becomeBytes(data, offset, (int) length);
        return node;
    }

    /** A new entry holding {@code value}, or null (aborted, {@code value} freed) past the limit. */
    EntryMap.Entry createEntry(long key, StateNode value) {
        if (!reserve(NODE_SIZE)) {
            delete(value);
            return null;
        }
        EntryMap.Entry entry = freeEntryCount > 0 ? freeEntries[--freeEntryCount] : new EntryMap.Entry();
        entry.key = key;
        entry.value = value;
        return entry;
    }

    /** Makes {@code node} a copy of the bytes, freeing what it held: null-free, false (aborted) past the limit. */
    boolean setBytes(StateNode node, MemorySegment data, long offset, long length) {
        // The new blob is counted against the limit while the old content still is, as in the C++.
        if (used + length > limit) {
            abortBytes(length);
            return false;
        }
        deleteReferencedData(node);
        used += length;
        node.becomeBytes(data, offset, (int) length);
        return true;
    }

    private boolean reserve(long bytes) {
        if (used + bytes > limit) {
            if (bytes == NODE_SIZE) {
                trace.abort("Failed to allocate element (" + NODE_SIZE + " bytes). Memory limit: " + limit
                        + " [bytes]. Used: " + used + " [bytes].");
            } else {
                abortBytes(bytes);
            }
            return false;
        }
        used += bytes;
        return true;
    }

    private void abortBytes(long bytes) {
        trace.abort("Failed to allocate " + bytes + " bytes. Memory limit: " + limit + " bytes. Used: " + used
                + " bytes.");
    }

    private StateNode takeNode() {
        StateNode node = freeNodeCount > 0 ? freeNodes[--freeNodeCount] : new StateNode();
        node.reset();
        return node;
    }

    /** Frees {@code node} and everything under it. */
    void delete(StateNode node) {
        deleteReferencedData(node);
        used -= NODE_SIZE;
        recycle(node);
    }

    /** Puts a node whose value was freed or moved elsewhere on the free list; it is not counted. */
    void recycle(StateNode node) {
        node.becomeEmpty();
        if (freeNodeCount == freeNodes.length) {
            freeNodes = Arrays.copyOf(freeNodes, freeNodeCount * 2);
        }
        freeNodes[freeNodeCount++] = node;
    }

    /** Frees an entry and its node. */
    void delete(EntryMap.Entry entry) {
        delete(entry.value);
        entry.value = null;
        used -= NODE_SIZE;
        if (freeEntryCount == freeEntries.length) {
            freeEntries = Arrays.copyOf(freeEntries, freeEntryCount * 2);
        }
        freeEntries[freeEntryCount++] = entry;
    }

    /** Frees what {@code node} holds (its entries or blob) and leaves its kind as it is. */
    void deleteReferencedData(StateNode node) {
        if (node.isMap()) {
            deleteEntries(node.entries);
        } else if (node.kind == StateNode.BYTES) {
            used -= node.blobLength;
            node.blobLength = 0;
        }
    }

    /** Frees a map's entries, leaving it empty. */
    void deleteEntries(EntryMap map) {
        for (EntryMap.Entry entry; (entry = map.removeLast()) != null; ) {
            delete(entry);
        }
    }

    /** An uncounted EMPTY node to build a map in before it replaces a node's: give it back with {@link #recycle}. */
    StateNode borrow() {
        return takeNode();
    }
}
