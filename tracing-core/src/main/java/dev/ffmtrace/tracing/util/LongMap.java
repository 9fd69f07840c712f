package dev.ffmtrace.tracing.util;

import java.util.Arrays;
import java.util.Objects;

/**
 * A map from long keys to values by open addressing (linear probing), for hot paths
 * keyed by addresses, pcs or ids: a lookup boxes no key and a put allocates no entry,
 * only a larger table now and then. No removal: it is a cache, emptied whole. A slot is empty when its value is null,
 * so every long is a key and no value is null. Not thread-safe.
 */
public final class LongMap<V> {
    private static final int MIN_CAPACITY = 16;

    private long[] keys;
    private Object[] values;
    /** 64 minus log2 of the capacity: a hash's top bits are a slot. */
    private int shift;
    private int size;

    public LongMap() {
        allocate(MIN_CAPACITY);
    }

    /** The value of {@code key}, or null. */
    @SuppressWarnings("unchecked")
    public V get(long key) {
        int mask = keys.length - 1;
        for (int slot = slot(key, shift); ; slot = (slot + 1) & mask) {
            Object value = values[slot];
            if (value == null || keys[slot] == key) {
                return (V) value;
            }
        }
    }

    /** Maps {@code key} to {@code value}, replacing its value if it had one. */
    public void put(long key, V value) {
        Objects.requireNonNull(value);
        int mask = keys.length - 1;
        int slot = slot(key, shift);
        while (values[slot] != null) {
            if (keys[slot] == key) {
                values[slot] = value;
                return;
            }
            slot = (slot + 1) & mask;
        }
        keys[slot] = key;
        values[slot] = value;
        // At most half full: probes stay short.
        if (++size > keys.length / 2) {
            grow();
        }
    }

    /** Forgets every key, keeping the table's capacity for the keys to come. */
    public void clear() {
        Arrays.fill(values, null);
        size = 0;
    }

    public int size() {
        return size;
    }

    /**
     * The home slot of {@code key} in a table of 2^(64 - {@code shift}) slots: the top
     * bits of a Fibonacci hash, which spreads the aligned addresses and pcs that are the
     * keys here (their low bits alike) over the whole table.
     */
    public static int slot(long key, int shift) {
        return (int) ((key * 0x9E3779B97F4A7C15L) >>> shift);
    }

    private void grow() {
        long[] oldKeys = keys;
        Object[] oldValues = values;
        allocate(keys.length * 2);
        int mask = keys.length - 1;
        for (int i = 0; i < oldKeys.length; i++) {
            if (oldValues[i] != null) {
                int slot = slot(oldKeys[i], shift);
                while (values[slot] != null) {
                    slot = (slot + 1) & mask;
                }
                keys[slot] = oldKeys[i];
                values[slot] = oldValues[i];
            }
        }
    }

    private void allocate(int capacity) {
        keys = new long[capacity];
        values = new Object[capacity];
        shift = 64 - Integer.numberOfTrailingZeros(capacity);
    }
}
