package dev.ffmtrace.tracing.buffer;

/**
 * Open-addressing map from producer-and-writer id to {@link SequenceState}, linear
 * probing, backward-shift deletion. Key 0 is the padding marker and never a
 * sequence, so it marks free slots.
 */
final class SequenceMap {
    private static final int INITIAL_CAPACITY = 64;

    private int[] keys;
    private SequenceState[] values;
    private int size;

    SequenceMap() {
        keys = new int[INITIAL_CAPACITY];
        values = new SequenceState[INITIAL_CAPACITY];
    }

    int size() {
        return size;
    }

    /** Slot count, for iterating with {@link #valueAt(int)}. */
    int capacity() {
        return keys.length;
    }

    /** The value in {@code slot}, or null if the slot is free. */
    SequenceState valueAt(int slot) {
        return values[slot];
    }

    int keyAt(int slot) {
        return keys[slot];
    }

    SequenceState get(int key) {
        assert key != 0;
        int mask = keys.length - 1;
        for (int slot = hash(key) & mask; ; slot = (slot + 1) & mask) {
            int k = keys[slot];
            if (k == key) {
                return values[slot];
            }
            if (k == 0) {
                return null;
            }
        }
    }

    void put(int key, SequenceState value) {
        assert key != 0 && value != null;
        if ((size + 1) * 2 > keys.length) {
            rehash(keys.length * 2);
        }
        int mask = keys.length - 1;
        int slot = hash(key) & mask;
        while (keys[slot] != 0 && keys[slot] != key) {
            slot = (slot + 1) & mask;
        }
        if (keys[slot] == 0) {
            size++;
        }
        keys[slot] = key;
        values[slot] = value;
    }

    void remove(int key) {
        int mask = keys.length - 1;
        int slot = hash(key) & mask;
        while (keys[slot] != key) {
            if (keys[slot] == 0) {
                return;
            }
            slot = (slot + 1) & mask;
        }
        // Backward shift: pull later entries of the probe run into the hole so that
        // lookups never stop early at it.
        int hole = slot;
        for (int next = (hole + 1) & mask; keys[next] != 0; next = (next + 1) & mask) {
            int home = hash(keys[next]) & mask;
            if (((next - home) & mask) >= ((next - hole) & mask)) {
                keys[hole] = keys[next];
                values[hole] = values[next];
                hole = next;
            }
        }
        keys[hole] = 0;
        values[hole] = null;
        size--;
    }

    SequenceMap copy() {
        SequenceMap copy = new SequenceMap();
        copy.keys = keys.clone();
        copy.values = new SequenceState[values.length];
        for (int i = 0; i < values.length; i++) {
            if (values[i] != null) {
                copy.values[i] = values[i].copy();
            }
        }
        copy.size = size;
        return copy;
    }

    private void rehash(int capacity) {
        int[] oldKeys = keys;
        SequenceState[] oldValues = values;
        keys = new int[capacity];
        values = new SequenceState[capacity];
        size = 0;
        for (int i = 0; i < oldKeys.length; i++) {
            if (oldKeys[i] != 0) {
                put(oldKeys[i], oldValues[i]);
            }
        }
    }

    private static int hash(int key) {
        int h = key * 0x9E3779B9;
        return h ^ (h >>> 16);
    }
}
