package dev.ffmtrace.jvm;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes each garbage collection as a slice with its phases nested under it. JFR commits
 * a collection's phases and the collection itself from different buffers, in no fixed
 * order: most phases come before their collection, some after it, as late as the next
 * flush of JFR's buffers (about once a second; measured in 30 recordings under load: up to
 * 1.0 s of stream time and 19 collections later). So each collection waits, with its
 * phases, by gcId, until a collection or phase ending {@value #SETTLE_NANOS} ns after it
 * has come (or the end); then the group is sorted so that, at equal times, the enclosing
 * slice begins first and ends last (the trace processor breaks ties by file order) and
 * written. A phase that does not fit inside its parent, or whose collection never comes,
 * is dropped and counted.
 */
final class CollectionSlices {
    /** Collections whose groups wait at once, complete or not; the oldest goes when one more comes. */
    static final int MAX_WAITING_COLLECTIONS = 256;
    /** Stream time a complete collection waits for late phases: several of JFR's flushes. */
    static final long SETTLE_NANOS = 5_000_000_000L;

    private record Interval(long start, long end, int level, String name) {
    }

    /** A collection's phases, and the collection itself once it came. */
    private static final class Group {
        final List<Interval> phases = new ArrayList<>();
        Interval collection;
        JvmTrack track;
        Args args;
    }

    private static final Comparator<Interval> NESTING_ORDER = Comparator.comparingLong(Interval::start)
            .thenComparing(Comparator.comparingLong(Interval::end).reversed())
            .thenComparingInt(Interval::level);

    private final JvmPacketWriter writer;
    private final Map<Long, Group> waiting = new LinkedHashMap<>();
    /** The gcIds of the complete groups in {@link #waiting}, in the order they completed. */
    private final Deque<Long> complete = new ArrayDeque<>();
    private long droppedPhases;

    CollectionSlices(JvmPacketWriter writer) {
        this.writer = writer;
    }

    /** A phase of collection {@code gcId}, {@code level} deep (1 directly under the collection). */
    void phase(long gcId, int level, String name, long start, long end) {
        group(gcId).phases.add(new Interval(start, end, level, name));
        writeSettled(end);
    }

    /**
     * Collection {@code gcId} on {@code track}, annotated with {@code args} (copied):
     * written with its phases once a collection or phase ending {@value #SETTLE_NANOS} ns
     * later has come.
     */
    void collection(long gcId, JvmTrack track, String name, long start, long end, Args args) {
        Group group = group(gcId);
        if (group.collection != null) {
            return;
        }
        group.collection = new Interval(start, end, 0, name);
        group.track = track;
        group.args = args.copy();
        complete.addLast(gcId);
        writeSettled(end);
    }

    /** Writes the complete groups, oldest first, whose collections ended long enough before {@code now}. */
    private void writeSettled(long now) {
        while (!complete.isEmpty()) {
            Group oldest = waiting.get(complete.peekFirst());
            if (now - oldest.collection.end < SETTLE_NANOS) {
                return;
            }
            waiting.remove(complete.removeFirst());
            write(oldest);
        }
    }

    /** Phases dropped so far: not nested in their parent, or their collection never came. */
    long droppedPhases() {
        return droppedPhases;
    }

    /** Writes the collections held back; drops the phases whose collections will not come. */
    void finish() {
        for (Group group : waiting.values()) {
            if (group.collection != null) {
                write(group);
            } else {
                droppedPhases += group.phases.size();
            }
        }
        waiting.clear();
        complete.clear();
    }

    private Group group(long gcId) {
        Group group = waiting.get(gcId);
        if (group == null) {
            if (waiting.size() == MAX_WAITING_COLLECTIONS) {
                Iterator<Map.Entry<Long, Group>> oldest = waiting.entrySet().iterator();
                Map.Entry<Long, Group> evicted = oldest.next();
                oldest.remove();
                if (evicted.getValue().collection != null) {
                    complete.remove(evicted.getKey());
                    write(evicted.getValue());
                } else {
                    droppedPhases += evicted.getValue().phases.size();
                }
            }
            group = new Group();
            waiting.put(gcId, group);
        }
        return group;
    }

    private void write(Group group) {
        List<Interval> sorted = group.phases;
        sorted.add(group.collection);
        sorted.sort(NESTING_ORDER);
        List<Interval> open = new ArrayList<>();
        for (Interval interval : sorted) {
            while (!open.isEmpty() && open.getLast().end <= interval.start) {
                writer.end(open.removeLast().end, group.track);
            }
            boolean outside = interval != group.collection
                    && (open.isEmpty() || interval.end > open.getLast().end);
            if (outside) {
                droppedPhases++;
                continue;
            }
            writer.begin(interval.start, group.track, interval.name, interval == group.collection ? group.args : null);
            open.add(interval);
        }
        while (!open.isEmpty()) {
            writer.end(open.removeLast().end, group.track);
        }
    }
}
