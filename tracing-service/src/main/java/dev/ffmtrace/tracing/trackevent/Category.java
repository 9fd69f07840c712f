package dev.ffmtrace.tracing.trackevent;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * A category of track events, enabled or not. A disabled category costs an event one
 * volatile load and a branch. Interned per sequence: the name is written once, then
 * referred to by id.
 */
public final class Category {
    private static final AtomicInteger NEXT_INDEX = new AtomicInteger();

    private final String name;
    final int index = NEXT_INDEX.getAndIncrement();
    private volatile boolean enabled = true;

    public Category(String name) {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("a category needs a name");
        }
        this.name = name;
    }

    public String name() {
        return name;
    }

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }
}
