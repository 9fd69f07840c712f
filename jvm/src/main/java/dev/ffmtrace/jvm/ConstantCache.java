package dev.ffmtrace.jvm;

import java.util.IdentityHashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * What was computed from a JFR constant (a thread, a class), by the constant's identity.
 * The parser gives each of a chunk's constants one object, and reading one field of it
 * is a lookup by name; so a value is computed once per chunk. Each chunk brings new
 * objects: the cache starts again when it is full, to stay bounded over a long stream.
 */
final class ConstantCache<K, V> {
    private final Map<K, V> values = new IdentityHashMap<>();
    private final int capacity;
    private final Function<K, V> compute;

    ConstantCache(int capacity, Function<K, V> compute) {
        this.capacity = capacity;
        this.compute = compute;
    }

    /** The value of {@code key}, which is not null. */
    V get(K key) {
        V value = values.get(key);
        if (value == null) {
            if (values.size() == capacity) {
                values.clear();
            }
            value = compute.apply(key);
            values.put(key, value);
        }
        return value;
    }
}
