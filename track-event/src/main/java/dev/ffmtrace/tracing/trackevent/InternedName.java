package dev.ffmtrace.tracing.trackevent;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A name written once per sequence and then referred to by id: an event name or a debug
 * annotation name. Meant for the fixed names of a program: keep each in a static final
 * field. {@link #of} returns the same object for the same string, and every name is kept
 * for the life of the process (writers index their per-sequence ids by it), so names
 * made at run time belong in {@link TrackEventWriter}'s {@code String} overloads instead.
 */
public final class InternedName {
    private static final AtomicInteger NEXT_INDEX = new AtomicInteger();
    private static final ConcurrentHashMap<String, InternedName> NAMES = new ConcurrentHashMap<>();

    private final String name;
    final int index;

    private InternedName(String name) {
        this.name = name;
        this.index = NEXT_INDEX.getAndIncrement();
    }

    /**
     * The interned name for {@code name}: the same object for every call with an equal
     * string.
     *
     * @throws IllegalArgumentException if the name is null or empty
     */
    public static InternedName of(String name) {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("an interned name cannot be null or empty");
        }
        InternedName known = NAMES.get(name);
        return known != null ? known : NAMES.computeIfAbsent(name, InternedName::new);
    }

    /** The name as written in the trace. */
    public String name() {
        return name;
    }

    @Override
    public String toString() {
        return name;
    }
}
