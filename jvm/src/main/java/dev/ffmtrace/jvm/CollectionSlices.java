package dev.ffmtrace.jvm;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes each garbage collection as a slice with its phases nested under it. JFR commits
 * a collection's phases before the collection itself, often with the same start and end,
 * and not in the order they nest: phases wait here by gcId until their collection comes,
 * then the group is sorted so that, at equal times, the enclosing slice begins first and
 * ends last (the trace processor breaks ties by file order). A phase that does not fit
 * inside its parent, or whose collection never comes, is dropped and counted.
 */
final class CollectionSlices {
    /** Collections whose phases wait at once; the oldest group goes when one more comes. */
    static final int MAX_WAITING_COLLECTIONS = 256;

    private record Interval(long start, long end, int level, String name) {
    }

    private static final Comparator<Interval> NESTING_ORDER = Comparator.comparingLong(Interval::start)
            .thenComparing(Comparator.comparingLong(Interval::end).reversed())
            .thenComparingInt(Interval::level);

    private final JvmPacketWriter writer;
    private final Map<Long, List<Interval>> waiting = new LinkedHashMap<>();
    private long droppedPhases;

    CollectionSlices(JvmPacketWriter writer) {
        this.writer = writer;
    }

    /** A phase of collection {@code gcId}, {@code level} deep (1 directly under the collection). */
    void phase(long gcId, int level, String name, long start, long end) {
        List<Interval> phases = waiting.get(gcId);
        if (phases == null) {
            if (waiting.size() == MAX_WAITING_COLLECTIONS) {
                Iterator<List<Interval>> oldest = waiting.values().iterator();
                droppedPhases += oldest.next().size();
                oldest.remove();
            }
            phases = new ArrayList<>();
            waiting.put(gcId, phases);
        }
        phases.add(new Interval(start, end, level, name));
    }

    /** Collection {@code gcId} on {@code track}: written now, with the phases that came before it. */
    void collection(long gcId, JvmTrack track, String name, long start, long end, Args args) {
        List<Interval> group = waiting.remove(gcId);
        if (group == null) {
            group = new ArrayList<>(1);
        }
        Interval collection = new Interval(start, end, 0, name);
        group.add(collection);
        group.sort(NESTING_ORDER);
        List<Interval> open = new ArrayList<>();
        for (Interval interval : group) {
            while (!open.isEmpty() && open.getLast().end <= interval.start) {
                writer.end(open.removeLast().end, track);
            }
            boolean outside = interval != collection
                    && (open.isEmpty() || interval.end > open.getLast().end);
            if (outside) {
                droppedPhases++;
                continue;
            }
            writer.begin(interval.start, track, interval.name, interval == collection ? args : null);
            open.add(interval);
        }
        while (!open.isEmpty()) {
            writer.end(open.removeLast().end, track);
        }
    }

    /** Phases dropped so far: not nested in their parent, or their collection never came. */
    long droppedPhases() {
        return droppedPhases;
    }

    /** Drops the phases still waiting: their collections will not come. */
    void finish() {
        for (List<Interval> phases : waiting.values()) {
            droppedPhases += phases.size();
        }
        waiting.clear();
    }
}
