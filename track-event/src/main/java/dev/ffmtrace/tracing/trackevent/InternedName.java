package dev.ffmtrace.tracing.trackevent;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * A name written once per sequence and then referred to by id: an event name or a debug
 * annotation name. Create one per distinct name and keep it (a static final field).
 */
public final class InternedName {
    private static final AtomicInteger NEXT_INDEX = new AtomicInteger();

    private final String name;
    final int index = NEXT_INDEX.getAndIncrement();

    private InternedName(String name) {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("an interned name cannot be empty");
        }
        this.name = name;
    }

    /** An event's name (TrackEvent.name_iid). */
    public static InternedName of(String name) {
        return new InternedName(name);
    }

    public String name() {
        return name;
    }
}
