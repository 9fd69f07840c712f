package dev.ffmtrace.tracing.trackevent;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A category of track events, enabled or not. A disabled category costs an event one
 * opaque load and a branch. Interned per sequence: the name is written once, then
 * referred to by id. {@link #NONE} is for events with no category (as in traces generated
 * by hand).
 *
 * <p>As in Perfetto's SDK, a category may carry up to {@value #MAX_TAGS} tags, which a
 * session's {@link CategorySelection} can enable or disable it by ("slow" and "debug" are
 * off unless a session asks for them), and a {@linkplain #group group} names 2 to
 * {@value #MAX_GROUP_MEMBERS} categories for events that belong to all of them.
 */
public final class Category {
    private static final AtomicInteger NEXT_INDEX = new AtomicInteger();
    private static final VarHandle ENABLED;
    private static final VarHandle SESSIONS;

    static {
        try {
            ENABLED = MethodHandles.lookup().findVarHandle(Category.class, "enabled", boolean.class);
            SESSIONS = MethodHandles.lookup().findVarHandle(Category.class, "sessions", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** No category: events written with it carry no {@code category_iids}; always enabled. */
    public static final Category NONE = new Category();

    /** {@link #sessionMask()} of a category the SDK has not decided yet. */
    public static final int SESSIONS_UNDECIDED = -1;

    /** The most tags a category carries, as in Perfetto's SDK. */
    public static final int MAX_TAGS = 4;
    /** The most categories a group names, as in Perfetto's SDK. */
    public static final int MAX_GROUP_MEMBERS = 4;

    private final String name;
    private final List<String> tags;
    /** The names a group joins; empty for a single category. */
    private final List<String> members;
    final int index = NEXT_INDEX.getAndIncrement();
    /**
     * Read opaque, as Perfetto's SDK reads its category state relaxed: the flag publishes
     * nothing else, so the read needs no ordering, only to be done each time (never
     * hoisted out of a caller's loop) so that a change is seen promptly.
     */
    private boolean enabled = true;
    /**
     * The SDK's instances of {@code track_event} that record this category, one bit per
     * instance, or {@link #SESSIONS_UNDECIDED} until the SDK first sees the category: read
     * opaque, as {@link #enabled} is, and changed under the SDK's lock.
     */
    private int sessions = SESSIONS_UNDECIDED;

    /**
     * A category of this name with these tags, enabled; keep it in a static final field.
     *
     * @throws IllegalArgumentException if the name is empty or holds a comma (a group is
     *     made by {@link #group}), or a tag is empty, or there are more than
     *     {@value #MAX_TAGS} tags
     */
    public Category(String name, String... tags) {
        this(checkedName(name), checkedTags(tags), List.of());
    }

    private Category(String name, List<String> tags, List<String> members) {
        this.name = name;
        this.tags = tags;
        this.members = members;
    }

    private Category() {
        this("", List.of(), List.of());
    }

    /**
     * A group: the names of 2 to {@value #MAX_GROUP_MEMBERS} categories joined by commas
     * ({@code "rpc,queue"}), for events that belong to all of them. A session records such
     * an event if it enables any of them; the trace names its category {@code names}.
     *
     * @throws IllegalArgumentException if {@code names} has fewer than 2 or more than
     *     {@value #MAX_GROUP_MEMBERS} names, or an empty one
     */
    public static Category group(String names) {
        if (names == null) {
            throw new IllegalArgumentException("a group needs names");
        }
        List<String> members = List.of(names.split(",", -1));
        if (members.size() < 2 || members.size() > MAX_GROUP_MEMBERS || members.contains("")) {
            throw new IllegalArgumentException("a group names 2 to " + MAX_GROUP_MEMBERS
                    + " categories joined by commas: \"" + names + "\"");
        }
        return new Category(names, List.of(), members);
    }

    private static String checkedName(String name) {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("a category needs a name");
        }
        if (name.indexOf(',') >= 0) {
            throw new IllegalArgumentException("\"" + name + "\" holds a comma: declare a group with Category.group");
        }
        return name;
    }

    private static List<String> checkedTags(String[] tags) {
        List<String> list = List.of(tags);
        if (list.size() > MAX_TAGS || list.contains("")) {
            throw new IllegalArgumentException("a category has at most " + MAX_TAGS + " tags, none empty: " + list);
        }
        return list;
    }

    /** The category's name as written in the trace; a group's names joined by commas. */
    public String name() {
        return name;
    }

    /** Its tags, such as "slow" or "debug"; a group has none of its own. */
    public List<String> tags() {
        return tags;
    }

    /** Whether this is a group of categories. */
    public boolean isGroup() {
        return !members.isEmpty();
    }

    /** The names a group joins; empty for a single category. */
    public List<String> groupMembers() {
        return members;
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

    /**
     * The SDK's {@code track_event} instances whose sessions record this category, bit
     * {@code i} for instance {@code i}: 0 when none does, which costs an event one load
     * and a branch; {@link #SESSIONS_UNDECIDED} before the SDK first decides it. Set by
     * the SDK from each session's {@link CategorySelection}.
     */
    public int sessionMask() {
        return (int) SESSIONS.getOpaque(this);
    }

    /** Sets {@link #sessionMask()}: for the SDK, which decides it per session. */
    public void setSessionMask(int mask) {
        SESSIONS.setOpaque(this, mask);
    }
}
