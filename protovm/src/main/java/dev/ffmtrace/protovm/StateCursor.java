package dev.ffmtrace.protovm;

import java.lang.foreign.MemorySegment;

/**
 * The DST cursor: a read-write position in the incremental state, Perfetto's
 * {@code RwProtoCursor}, with every conversion it makes on the way (bytes decoded into a
 * message when entered, a field made repeated when indexed, re-keyed when looked up by key) in
 * the C++'s order, so memory is requested, and the limit hit, at the same points.
 *
 * <p>A cursor knows the map entry it came through (its parent link) so that {@code del} can
 * unlink it. One without a link (the root, or an element a DST foreach hands out) is
 * treated as a root by {@code del}, as in the C++.
 */
final class StateCursor {
    /** How deep a node may lie below the root: the nesting protozero serialises. */
    static final int MAX_DEPTH = 32;

    private final Machine machine;
    private StateNode node;
    private EntryMap parentMap;
    private EntryMap.Entry parentEntry;
    /** Messages between the root and {@link #node}: the nesting at which it serialises. */
    private int depth;

    /** The parts of a VM a cursor works with. */
    record Machine(StateAllocator allocator, AbortTrace trace, StateNode root, Readers readers) {
    }

    /** One reader per decoding that can be under way at once, reused patch after patch. */
    static final class Readers {
        final WireReader key = new WireReader();
        final WireReader message = new WireReader();
        final WireReader merge = new WireReader();
    }

    StateCursor(Machine machine) {
        this.machine = machine;
    }

    /** At the root of the state. */
    StateCursor atRoot() {
        node = machine.root();
        parentMap = null;
        parentEntry = null;
        depth = 0;
        return this;
    }

    /** At {@code element}, with no parent link: what a DST foreach hands out. */
    void atElement(StateNode element, int depth) {
        node = element;
        parentMap = null;
        parentEntry = null;
        this.depth = depth;
    }

    void set(StateCursor other) {
        node = other.node;
        parentMap = other.parentMap;
        parentEntry = other.parentEntry;
        depth = other.depth;
    }

    /** Points at the same node as {@code other}: Perfetto's cursor equality. */
    boolean sameNode(StateCursor other) {
        return node == other.node;
    }

    int depth() {
        return depth;
    }

    private boolean invalid() {
        if (node == null) {
            machine.trace().abort("Attempted to access invalid cursor");
            return true;
        }
        return false;
    }

    /** 1 if the node has no parent link, 0 if it has, ABORT (as a negative) on a deleted cursor. */
    int isRoot() {
        if (invalid()) {
            return -1;
        }
        return parentEntry == null ? 1 : 0;
    }

    /** 1 if the node, decoded into a message, has field {@code fieldId}, 0 if not, -1 aborted. */
    int hasField(int fieldId) {
        if (invalid() || convertToMessage(node) != Status.CODE_OK) {
            return -1;
        }
        return node.entries.find(Integer.toUnsignedLong(fieldId)) != null ? 1 : 0;
    }

    int enterField(int fieldId) {
        if (invalid() || tooDeep()) {
            return Status.CODE_ABORT;
        }
        EntryMap.Entry entry = findOrCreateMessageField(node, fieldId);
        if (entry == null) {
            return Status.CODE_ABORT;
        }
        if (entry.value.kind == StateNode.INDEXED || entry.value.kind == StateNode.MAPPED) {
            return machine.trace().abort("Attempted to enter field (id=" + Integer.toUnsignedString(fieldId)
                    + ") as a simple field but it is a " + entry.value.kindName());
        }
        moveTo(node.entries, entry);
        return Status.CODE_OK;
    }

    int enterRepeatedFieldAt(int fieldId, int index) {
        if (invalid() || tooDeep()) {
            return Status.CODE_ABORT;
        }
        EntryMap.Entry field = findOrCreateMessageField(node, fieldId);
        if (field == null || convertToIndexed(field.value) != Status.CODE_OK) {
            return Status.CODE_ABORT;
        }
        EntryMap elements = field.value.entries;
        long key = Integer.toUnsignedLong(index);
        EntryMap.Entry element = elements.find(key);
        if (element == null) {
            if (key > elements.size()) {
                return machine.trace().abort("Attempted to insert repeated field at arbitrary position (only "
                        + "append operation is supported)");
            }
            element = insertNew(elements, key);
            if (element == null) {
                return Status.CODE_ABORT;
            }
        }
        moveTo(elements, element);
        return Status.CODE_OK;
    }

    int enterRepeatedFieldByKey(int fieldId, int keyFieldId, long key) {
        if (invalid() || tooDeep()) {
            return Status.CODE_ABORT;
        }
        EntryMap.Entry field = findOrCreateMessageField(node, fieldId);
        if (field == null || convertToMapped(field.value, keyFieldId) != Status.CODE_OK) {
            return Status.CODE_ABORT;
        }
        EntryMap elements = field.value.entries;
        EntryMap.Entry element = elements.find(key);
        if (element == null) {
            element = insertNew(elements, key);
            if (element == null) {
                return Status.CODE_ABORT;
            }
        }
        moveTo(elements, element);
        return Status.CODE_OK;
    }

    /**
     * The elements of repeated field {@code fieldId} (the field made indexed first), an
     * empty map when the field is absent, or null (aborted).
     */
    EntryMap repeatedField(int fieldId) {
        if (invalid() || convertToMessage(node) != Status.CODE_OK) {
            return null;
        }
        EntryMap.Entry field = node.entries.find(Integer.toUnsignedLong(fieldId));
        if (field == null) {
            return EMPTY;
        }
        return convertToIndexed(field.value) == Status.CODE_OK ? field.value.entries : null;
    }

    private static final EntryMap EMPTY = new EntryMap();

    /** The node, if it is a scalar; null (aborted) otherwise. */
    StateNode scalar() {
        if (invalid()) {
            return null;
        }
        if (node.kind != StateNode.SCALAR) {
            machine.trace().abort("Attempted \"get scalar\" operation but node has type " + node.kindName());
            return null;
        }
        return node;
    }

    int setBytes(MemorySegment data, long offset, long length) {
        if (invalid()) {
            return Status.CODE_ABORT;
        }
        if (node.kind != StateNode.EMPTY && node.kind != StateNode.BYTES && node.kind != StateNode.MESSAGE) {
            return machine.trace().abort("Attempted \"set bytes\" operation but node has type " + node.kindName());
        }
        return machine.allocator().setBytes(node, data, offset, length) ? Status.CODE_OK : Status.CODE_ABORT;
    }

    /**
     * Divergence: a scalar at the root is refused (ABORT). The C++ accepts it and then crashes
     * serialising the state.
     */
    int setScalar(int wireType, long value) {
        if (invalid()) {
            return Status.CODE_ABORT;
        }
        if (node.kind != StateNode.EMPTY && node.kind != StateNode.SCALAR) {
            return machine.trace().abort("Attempted \"set scalar\" operation but node has type " + node.kindName());
        }
        if (node == machine.root()) {
            return machine.trace().abort("Attempted \"set scalar\" at the root: a state is a message");
        }
        node.becomeScalar(wireType, value);
        return Status.CODE_OK;
    }

    /** Shallow merge of the fields in {@code data[offset, offset + length)} into the node, Perfetto's rules. */
    int merge(MemorySegment data, long offset, long length, boolean skipSubmessages, boolean delIfSrcEmpty) {
        if (invalid()) {
            return Status.CODE_ABORT;
        }
        if (node.kind != StateNode.EMPTY && node.kind != StateNode.MESSAGE && node.kind != StateNode.BYTES) {
            return machine.trace().abort("Attempted MERGE operation but node has type " + node.kindName());
        }
        if (length == 0) {
            return Status.CODE_OK;
        }
        if (convertToMessage(node) != Status.CODE_OK) {
            return Status.CODE_ABORT;
        }
        StateAllocator allocator = machine.allocator();
        EntryMap fields = node.entries;
        WireReader reader = machine.readers().merge.reset(data, offset, length);
        while (reader.next()) {
            EntryMap.Entry existing = fields.find(reader.id());
            if (existing != null && delIfSrcEmpty && reader.isLengthDelimited() && reader.payloadLength() == 0) {
                fields.remove(existing);
                allocator.delete(existing);
                continue;
            }
            if (skipSubmessages && existing != null && existing.value.kind == StateNode.MESSAGE) {
                continue;
            }
            StateNode value = createNodeFromField(reader);
            // An abort here leaves the fields' merge marks set, as the C++ does: a later merge
            // of such a field appends to it.
            if (value == null) {
                return Status.CODE_ABORT;
            }
            if (existing == null) {
                EntryMap.Entry inserted = mapInsert(fields, reader.id(), value);
                if (inserted == null) {
                    return Status.CODE_ABORT;
                }
                inserted.value.merged = true;
                continue;
            }
            if (existing.value.kind == StateNode.MAPPED) {
                return machine.trace().abort("Merge operation of mapped repeated field is not supported (field id = "
                        + reader.id() + ")");
            }
            // A second occurrence of the id in this merge: the field is repeated. (On an abort
            // here the new node stays counted: the C++ leaks it.)
            if (existing.value.merged && convertToIndexed(existing.value) != Status.CODE_OK) {
                return Status.CODE_ABORT;
            }
            if (existing.value.kind == StateNode.INDEXED) {
                // A repeated field is replaced wholesale by the occurrences in this merge.
                if (!existing.value.merged) {
                    allocator.deleteReferencedData(existing.value);
                    existing.value.merged = true;
                }
                // As in the C++, an element that does not fit is dropped and the merge goes on.
                mapInsert(existing.value.entries, existing.value.entries.size(), value);
                continue;
            }
            StateNode replaced = existing.value;
            existing.value = value;
            value.merged = true;
            allocator.delete(replaced);
        }
        for (int i = 0; i < fields.size(); i++) {
            fields.at(i).value.merged = false;
        }
        return Status.CODE_OK;
    }

    /**
     * Unlinks and frees the node; the cursor is invalid afterwards. A node without a parent
     * link is emptied in place instead. Divergence: what it held is freed; the C++ keeps it
     * counted (and a debug build crashes when it held bytes).
     */
    int delete() {
        if (invalid()) {
            return Status.CODE_ABORT;
        }
        if (parentEntry == null) {
            machine.allocator().deleteReferencedData(node);
            node.becomeEmpty();
            return Status.CODE_OK;
        }
        parentMap.remove(parentEntry);
        machine.allocator().delete(parentEntry);
        node = null;
        parentMap = null;
        parentEntry = null;
        return Status.CODE_OK;
    }

    private void moveTo(EntryMap map, EntryMap.Entry entry) {
        parentMap = map;
        parentEntry = entry;
        node = entry.value;
        depth++;
    }

    private boolean tooDeep() {
        if (depth >= MAX_DEPTH) {
            machine.trace().abort("Attempted to enter a field deeper than " + MAX_DEPTH + " levels in the state");
            return true;
        }
        return false;
    }

    private int convertToMessage(StateNode target) {
        if (target.kind == StateNode.MESSAGE) {
            return Status.CODE_OK;
        }
        if (target.kind == StateNode.EMPTY) {
            target.becomeMap(StateNode.MESSAGE);
            return Status.CODE_OK;
        }
        if (target.kind != StateNode.BYTES) {
            return machine.trace().abort("Attempted conversion to message but node has type " + target.kindName());
        }
        StateAllocator allocator = machine.allocator();
        // The fields are built in a borrowed node's map, which replaces the blob once all are decoded.
        StateNode decoded = allocator.borrow();
        EntryMap message = decoded.entries;
        WireReader reader = machine.readers().message.reset(target.blobSegment(), 0, target.blobLength);
        while (reader.next()) {
            StateNode value = createNodeFromField(reader);
            if (value == null) {
                return dropDecoded(decoded);
            }
            EntryMap.Entry existing = message.find(reader.id());
            if (existing == null) {
                if (mapInsert(message, reader.id(), value) == null) {
                    return dropDecoded(decoded);
                }
                continue;
            }
            if (convertToIndexed(existing.value) != Status.CODE_OK) {
                allocator.delete(value);
                return dropDecoded(decoded);
            }
            if (mapInsert(existing.value.entries, existing.value.entries.size(), value) == null) {
                return dropDecoded(decoded);
            }
        }
        allocator.deleteReferencedData(target);
        decoded.becomeMap(StateNode.MESSAGE);
        target.takeValueOf(decoded);
        allocator.recycle(decoded);
        return Status.CODE_OK;
    }

    private int dropDecoded(StateNode decoded) {
        machine.allocator().deleteEntries(decoded.entries);
        machine.allocator().recycle(decoded);
        return Status.CODE_ABORT;
    }

    /** A node for the field {@code reader} is on: a copy of its bytes, or its scalar. Null: aborted. */
    private StateNode createNodeFromField(WireReader reader) {
        StateAllocator allocator = machine.allocator();
        if (reader.isLengthDelimited()) {
            return allocator.createBytesNode(reader.segment(), reader.payloadOffset(), reader.payloadLength());
        }
        StateNode node = allocator.createNode();
        if (node != null) {
            node.becomeScalar(reader.type(), reader.value());
        }
        return node;
    }

    private int convertToMapped(StateNode target, int keyFieldId) {
        switch (target.kind) {
            case StateNode.MAPPED -> {
                return Status.CODE_OK;
            }
            case StateNode.EMPTY -> {
                target.becomeMap(StateNode.MAPPED);
                return Status.CODE_OK;
            }
            case StateNode.BYTES, StateNode.MESSAGE -> {
                long key = readScalarField(target, keyFieldId);
                if (key == NO_KEY && keyFailed) {
                    return Status.CODE_ABORT;
                }
                key &= KEY_MASK;
                StateNode value = machine.allocator().createNode();
                if (value == null) {
                    return Status.CODE_ABORT;
                }
                value.takeValueOf(target);
                target.becomeMap(StateNode.MAPPED);
                return mapInsert(target.entries, key, value) != null ? Status.CODE_OK : Status.CODE_ABORT;
            }
            case StateNode.INDEXED -> {
                // Each element is re-keyed by its key field. As in the C++, an element whose key
                // cannot be read ends the conversion with it and the elements already moved
                // lost (still counted), and one whose key is taken is dropped (still counted).
                StateNode rekeyed = machine.allocator().borrow();
                EntryMap mapped = rekeyed.entries;
                EntryMap indexed = target.entries;
                for (EntryMap.Entry element; (element = indexed.removeFirst()) != null; ) {
                    long key = readScalarField(element.value, keyFieldId);
                    if (key == NO_KEY && keyFailed) {
                        return Status.CODE_ABORT;
                    }
                    element.key = key & KEY_MASK;
                    mapped.insert(element);
                }
                rekeyed.becomeMap(StateNode.MAPPED);
                target.takeValueOf(rekeyed);
                machine.allocator().recycle(rekeyed);
                return Status.CODE_OK;
            }
            default -> {
                return machine.trace().abort("Attempted to access field as MappedRepeatedField but node has type "
                        + target.kindName());
            }
        }
    }

    private int convertToIndexed(StateNode target) {
        if (target.kind == StateNode.INDEXED) {
            return Status.CODE_OK;
        }
        if (target.kind == StateNode.MAPPED) {
            return machine.trace().abort("Attempted \"convert to indexed repeated field\" operation but node has type "
                    + target.kindName());
        }
        if (target.kind == StateNode.EMPTY) {
            target.becomeMap(StateNode.INDEXED);
            return Status.CODE_OK;
        }
        StateNode value = machine.allocator().createNode();
        if (value == null) {
            return Status.CODE_ABORT;
        }
        value.takeValueOf(target);
        target.becomeMap(StateNode.INDEXED);
        return mapInsert(target.entries, 0, value) != null ? Status.CODE_OK : Status.CODE_ABORT;
    }

    private EntryMap.Entry findOrCreateMessageField(StateNode target, int fieldId) {
        if (convertToMessage(target) != Status.CODE_OK) {
            return null;
        }
        long key = Integer.toUnsignedLong(fieldId);
        EntryMap.Entry entry = target.entries.find(key);
        return entry != null ? entry : insertNew(target.entries, key);
    }

    /** A new EMPTY node under {@code key}; null (aborted) past the limit. */
    private EntryMap.Entry insertNew(EntryMap map, long key) {
        StateNode value = machine.allocator().createNode();
        return value == null ? null : mapInsert(map, key, value);
    }

    /** Inserts {@code value} under {@code key}; null (aborted, {@code value} freed) past the limit or on a taken key. */
    private EntryMap.Entry mapInsert(EntryMap map, long key, StateNode value) {
        EntryMap.Entry entry = machine.allocator().createEntry(key, value);
        if (entry == null) {
            return null;
        }
        if (!map.insert(entry)) {
            machine.allocator().delete(entry);
            machine.trace().abort("Failed to insert intrusive map entry (key = " + key + "). Duplicated key?");
            return null;
        }
        return entry;
    }

    /**
     * Keys read back from the state are cut to 32 bits, as lookups cut the register.
     * Divergence: the C++ keeps them 64-bit, so a negative int32 key read back from bytes
     * never matches its own lookup and the same lookup inserts a duplicate.
     */
    private static final long KEY_MASK = 0xffff_ffffL;
    private static final long NO_KEY = -1;
    /** Set by {@link #readScalarField} with {@link #NO_KEY}: the key could not be read (aborted). */
    private boolean keyFailed;

    /** The scalar field {@code fieldId} of a message or of bytes decoded on the fly, as the C++ reads a key. */
    private long readScalarField(StateNode target, int fieldId) {
        keyFailed = false;
        if (target.kind == StateNode.BYTES) {
            WireReader reader = machine.readers().key.reset(target.blobSegment(), 0, target.blobLength);
            while (reader.next()) {
                if (reader.id() == fieldId) {
                    if (reader.isLengthDelimited()) {
                        return keyAbort("Attempted to read length-delimited field (id=" + fieldId + ") as scalar");
                    }
                    return reader.value();
                }
            }
            return keyAbort("Attempted to read scalar field (id=" + fieldId + ") but it is not present");
        }
        if (target.kind == StateNode.MESSAGE) {
            EntryMap.Entry field = target.entries.find(Integer.toUnsignedLong(fieldId));
            if (field == null) {
                return keyAbort("Attempted to read scalar field (id=" + fieldId + ") but it is not present");
            }
            if (field.value.kind != StateNode.SCALAR) {
                return keyAbort("Attempted to read scalar field (id=" + fieldId + ") from node with type "
                        + field.value.kindName());
            }
            return field.value.scalar;
        }
        return keyAbort("Attempted to read scalar field (id=" + fieldId + ") but parent node has type "
                + target.kindName());
    }

    private long keyAbort(String reason) {
        machine.trace().abort(reason);
        keyFailed = true;
        return NO_KEY;
    }
}
