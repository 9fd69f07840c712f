package dev.ffmtrace.tracing.trackevent;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A category of track events, enabled or not. A disabled category costs an event one
 * opaque load and a branch. Interned per sequence: the name is written once, then
 * referred to by id. {@link #NONE} is for events with no category (as in traces generated
 * by hand).
 */
public final class Category {
    private static final AtomicInteger NEXT_INDEX = new AtomicInteger();
    private static final VarHandle ENABLED;

    static {
        try {
            ENABLED = MethodHandles.lookup().findVarHandle(Category.class, "enabled", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** No category: events written with it carry no {@code category_iids}; always enabled. */
    public static final Category NONE = new Category();

    private final String name;
    final int index = NEXT_INDEX.getAndIncrement();
    /**
     * Read opaque, as Perfetto's SDK reads its category state relaxed: the flag publishes
     * nothing else, so the read needs no ordering, only to be done each time (never
     * hoisted out of a caller's loop) so that a change is seen promptly.
     */
    private boolean enabled = true;

    /** A category of this name, enabled; keep it in a static final field. */
    public Category(String name) {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("a category needs a name");
        }
        this.name = name;
    }

    private Category() {
        this.name = "";
    }

    /** The category's name as written in the trace. */
    public String name() {
        return name;
    }

    /** Whether events of this category are written: one volatile load, so disabled events cost almost nothing. */
    public boolean isEnabled() {
        return (boolean) ENABLED.getOpaque(this);
    }

    /** Turns this category's events on or off, for every writer, from any thread. */
    public void setEnabled(boolean enabled) {
        if (this == NONE) {
            throw new UnsupportedOperationException("Category.NONE is always enabled");
        }
        ENABLED.setOpaque(this, enabled);
    }
}
