package dev.ffmtrace.protovm;

import java.util.Arrays;

/**
 * The ordered map under a message (field id to node) or a repeated field (index or key to
 * node): Perfetto's intrusive tree keyed by uint64, here sorted arrays searched by binary
 * search, which serialise in the same ascending (unsigned) key order.
 */
final class EntryMap {
    /** One map entry: Perfetto's {@code MapNode}, itself an allocation the VM's memory counts. */
    static final class Entry {
        long key;
        StateNode value;
    }

    private long[] keys = new long[4];
    private Entry[] entries = new Entry[4];
    private int size;

    int size() {
        return size;
    }

    Entry at(int index) {
        return entries[index];
    }

    Entry find(long key) {
        int index = indexOf(key);
        return index >= 0 ? entries[index] : null;
    }

    /** Inserts {@code entry} at its key; false, changing nothing, if the key is taken. */
    boolean insert(Entry entry) {
        int index = indexOf(entry.key);
        if (index >= 0) {
            return false;
        }
        int at = -index - 1;
        if (size == keys.length) {
            keys = Arrays.copyOf(keys, size * 2);
            entries = Arrays.copyOf(entries, size * 2);
        }
        System.arraycopy(keys, at, keys, at + 1, size - at);
        System.arraycopy(entries, at, entries, at + 1, size - at);
        keys[at] = entry.key;
        entries[at] = entry;
        size++;
        return true;
    }

    void remove(Entry entry) {
        int index = indexOf(entry.key);
        if (index < 0 || entries[index] != entry) {
            throw new IllegalStateException("entry not in this map");
        }
        System.arraycopy(keys, index + 1, keys, index, size - index - 1);
        System.arraycopy(entries, index + 1, entries, index, size - index - 1);
        entries[--size] = null;
    }

    /** Removes and returns the entry with the greatest key, or null when empty. */
    Entry removeLast() {
        if (size == 0) {
            return null;
        }
        Entry last = entries[--size];
        entries[size] = null;
        return last;
    }

    /** Removes and returns the entry with the least key, or null when empty. */
    Entry removeFirst() {
        if (size == 0) {
            return null;
        }
        Entry first = entries[0];
        remove(first);
        return first;
    }

    private int indexOf(long key) {
        int low = 0;
        int high = size - 1;
        while (low <= high) {
            int mid = (low + high) >>> 1;
            int cmp = Long.compareUnsigned(keys[mid], key);
            if (cmp < 0) {
                low = mid + 1;
            } else if (cmp > 0) {
                high = mid - 1;
            } else {
                return mid;
            }
        }
        return -(low + 1);
    }
}
