package dev.ffmtrace.tracing.trackevent;

import dev.ffmtrace.perfetto.protos.InternedData;
import dev.ffmtrace.perfetto.protos.TracePacket;
import java.util.Arrays;
import java.util.HashMap;

/**
 * The ids one sequence's incremental state gives category, event and debug annotation
 * names: each name is written once in a packet's {@code interned_data}, then referred to
 * by id. Interned names and categories are looked up by their index, names given as
 * strings by value, up to {@value TrackEventWriter#MAX_DYNAMIC_NAMES} of them. One
 * writer's, so one thread at a time.
 */
final class InterningTable {
    /** A string name's iid once the table holds its bound of them: the name is written inline. */
    static final long INLINE_NAME = -1;

    /** Per {@link InternedName#index}, its iid; 0 for none yet. */
    private long[] nameIids = new long[64];
    /** Per {@link InternedName#index}, its iid as a debug annotation name. */
    private long[] annotationIids = new long[16];
    /** Per {@link Category#index}, its iid. */
    private long[] categoryIids = new long[16];
    private final HashMap<String, Long> stringIids = new HashMap<>();
    private long nextIid = 1;

    /** Forgets every id: a new incremental state starts from iid 1. */
    void clear() {
        Arrays.fill(nameIids, 0);
        Arrays.fill(annotationIids, 0);
        Arrays.fill(categoryIids, 0);
        stringIids.clear();
        nextIid = 1;
    }

    /** The iid of {@code category}, interned before by {@link #intern} or {@link #internString}. */
    long categoryIid(Category category) {
        return categoryIids[category.index];
    }

    /** The iid of debug annotation name {@code argument}, interned before by {@link #intern}. */
    long annotationIid(InternedName argument) {
        return annotationIids[argument.index];
    }

    /**
     * Adds to an event's packet the interned data its new names need (any of them null:
     * none); returns the iid of {@code name} (0 for none).
     */
    long intern(TracePacket packet, Category category, InternedName name, InternedName argument) {
        boolean newCategory = category != Category.NONE && lacksIid(categoryIids, category.index);
        boolean newName = name != null && lacksIid(nameIids, name.index);
        boolean newArgument = argument != null && lacksIid(annotationIids, argument.index);
        if (newCategory || newName || newArgument) {
            InternedData interned = packet.setInternedData();
            if (newCategory) {
                internCategory(interned, category);
            }
            if (newName) {
                nameIids = assignIid(nameIids, name.index);
                var entry = interned.addEventNames();
                entry.setIid(nameIids[name.index]);
                entry.setName(name.name());
            }
            if (newArgument) {
                annotationIids = assignIid(annotationIids, argument.index);
                var entry = interned.addDebugAnnotationNames();
                entry.setIid(annotationIids[argument.index]);
                entry.setName(argument.name());
            }
        }
        return name == null ? 0 : nameIids[name.index];
    }

    /**
     * Adds to an event's packet the interned data its category and its name given as a
     * string need; returns the name's iid, or {@link #INLINE_NAME} once the table holds
     * {@value TrackEventWriter#MAX_DYNAMIC_NAMES} string names.
     */
    long internString(TracePacket packet, Category category, String name) {
        boolean newCategory = category != Category.NONE && lacksIid(categoryIids, category.index);
        Long known = stringIids.get(name);
        long iid;
        boolean newName = false;
        if (known != null) {
            iid = known;
        } else if (stringIids.size() >= TrackEventWriter.MAX_DYNAMIC_NAMES) {
            iid = INLINE_NAME;
        } else {
            iid = nextIid++;
            stringIids.put(name, iid);
            newName = true;
        }
        if (newCategory || newName) {
            InternedData interned = packet.setInternedData();
            if (newCategory) {
                internCategory(interned, category);
            }
            if (newName) {
                var entry = interned.addEventNames();
                entry.setIid(iid);
                entry.setName(name);
            }
        }
        return iid;
    }

    private void internCategory(InternedData interned, Category category) {
        categoryIids = assignIid(categoryIids, category.index);
        var entry = interned.addEventCategories();
        entry.setIid(categoryIids[category.index]);
        entry.setName(category.name());
    }

    private static boolean lacksIid(long[] iids, int index) {
        return index >= iids.length || iids[index] == 0;
    }

    /** {@code iids}, grown if needed, with the next iid given to {@code index}. */
    private long[] assignIid(long[] iids, int index) {
        long[] grown = index < iids.length ? iids : Arrays.copyOf(iids, Math.max(index + 1, iids.length * 2));
        grown[index] = nextIid++;
        return grown;
    }
}
