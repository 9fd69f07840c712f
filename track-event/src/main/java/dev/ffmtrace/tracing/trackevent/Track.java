package dev.ffmtrace.tracing.trackevent;

import dev.ffmtrace.perfetto.protos.ThreadDescriptor;
import dev.ffmtrace.perfetto.protos.TrackDescriptor;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A timeline events are drawn on: a process, a thread of it, a named track under any
 * other (nested to any depth), or a counter track. Its descriptor is written once per
 * sequence, parents first, before the first event on it.
 */
public final class Track {
    /** How the UI orders a track's children ({@code TrackDescriptor.ChildTracksOrdering}). */
    public enum ChildOrdering {
        /** The UI's default order. */
        UNSPECIFIED(TrackDescriptor.ChildTracksOrdering.UNKNOWN),
        /** By name. */
        LEXICOGRAPHIC(TrackDescriptor.ChildTracksOrdering.LEXICOGRAPHIC),
        /** By the time of each child's first event. */
        CHRONOLOGICAL(TrackDescriptor.ChildTracksOrdering.CHRONOLOGICAL),
        /** By each child's sibling order rank. */
        EXPLICIT(TrackDescriptor.ChildTracksOrdering.EXPLICIT);

        final TrackDescriptor.ChildTracksOrdering value;

        ChildOrdering(TrackDescriptor.ChildTracksOrdering value) {
            this.value = value;
        }
    }

    private enum Kind { PROCESS, THREAD, NAMED, COUNTER }

    private final Kind kind;
    private final long uuid;
    private final Track parent;
    private final String name;
    private final String trackName;
    private final int pid;
    private final long tid;
    private final ChildOrdering childOrdering;
    private final Integer siblingOrderRank;
    /** Unique among live tracks, reused once this one is unreachable ({@link TrackIndexes}). */
    final int index = TrackIndexes.acquire(this);

    private Track(Kind kind, long uuid, Track parent, String name, String trackName, int pid, long tid,
                  ChildOrdering childOrdering, Integer siblingOrderRank) {
        this.kind = kind;
        this.uuid = uuid;
        this.parent = parent;
        this.name = name;
        this.trackName = trackName;
        this.pid = pid;
        this.tid = tid;
        this.childOrdering = childOrdering;
        this.siblingOrderRank = siblingOrderRank;
    }

    private Track(Kind kind, Track parent, String name, int pid, long tid, ChildOrdering childOrdering,
                  Integer siblingOrderRank) {
        this(kind, ThreadLocalRandom.current().nextLong() | 1, parent, name, null, pid, tid, childOrdering,
                siblingOrderRank);
    }

    /** The track of process {@code pid}, named {@code processName}, with a random uuid ({@link #withUuid} fixes one). */
    public static Track process(int pid, String processName) {
        return new Track(Kind.PROCESS, null, processName, pid, 0, ChildOrdering.UNSPECIFIED, null);
    }

    /** The track of thread {@code tid} of {@code process}, named {@code threadName}. */
    public static Track thread(Track process, long tid, String threadName) {
        requireKind(process, Kind.PROCESS, "a thread track's parent must be a process track");
        return new Track(Kind.THREAD, process, threadName, process.pid, tid, ChildOrdering.UNSPECIFIED, null);
    }

    /** A thread track of process {@code pid} whose process has no track of its own. */
    public static Track thread(int pid, long tid, String threadName) {
        return new Track(Kind.THREAD, null, threadName, pid, tid, ChildOrdering.UNSPECIFIED, null);
    }

    /** A named track under {@code parent} (null for a top-level track). */
    public static Track named(Track parent, String name) {
        return named(parent, name, ChildOrdering.UNSPECIFIED, null);
    }

    /**
     * A named track under {@code parent}, ordering its own children as said, and placed
     * among its siblings by {@code siblingOrderRank} (null: no rank) when the parent's
     * ordering is {@link ChildOrdering#EXPLICIT}.
     */
    public static Track named(Track parent, String name, ChildOrdering childOrdering, Integer siblingOrderRank) {
        requireName(name);
        return new Track(Kind.NAMED, parent, name, 0, 0, childOrdering, siblingOrderRank);
    }

    /**
     * The track of the virtual thread with Java thread id {@code threadId}: a named track
     * under {@code process} (a virtual thread has no OS thread of its own), its uuid
     * derived from the process track's and the thread id ({@link #virtualThreadUuid}), so
     * that everything writing about the thread, from any sequence, draws on one track.
     */
    public static Track virtualThread(Track process, long threadId, String name) {
        requireKind(process, Kind.PROCESS, "a virtual thread track's parent must be a process track");
        requireName(name);
        return new Track(Kind.NAMED, virtualThreadUuid(process.uuid, threadId), process, name, null, 0, 0,
                ChildOrdering.UNSPECIFIED, null);
    }

    /** The uuid of {@link #virtualThread}'s track, for writers that describe their tracks themselves. */
    public static long virtualThreadUuid(long processUuid, long threadId) {
        return derivedUuid(processUuid ^ 0x76746872_65616400L, threadId);
    }

    /**
     * A uuid derived from {@code seed} and {@code key}, never 0: a 64-bit mix of the two
     * (SplitMix64's finaliser), for tracks that writers on different sequences, or
     * different runs, must name alike.
     */
    public static long derivedUuid(long seed, long key) {
        long h = mix(mix(seed) ^ key);
        return h == 0 ? 1 : h;
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    /** A counter track under {@code parent}. */
    public static Track counter(Track parent, String name) {
        requireName(name);
        return new Track(Kind.COUNTER, parent, name, 0, 0, ChildOrdering.UNSPECIFIED, null);
    }

    /**
     * This track with a chosen uuid instead of a random one: for traces generated offline
     * whose uuids are given. Tracks created under the original keep it as their parent.
     */
    public Track withUuid(long uuid) {
        if (uuid == 0) {
            throw new IllegalArgumentException("0 is not a track uuid");
        }
        return new Track(kind, uuid, parent, name, trackName, pid, tid, childOrdering, siblingOrderRank);
    }

    /**
     * This process or thread track with a track name of its own, shown instead of the
     * process or thread name (TrackDescriptor.name).
     */
    public Track withTrackName(String trackName) {
        if (kind != Kind.PROCESS && kind != Kind.THREAD) {
            throw new IllegalArgumentException("only process and thread tracks have a separate track name");
        }
        requireName(trackName);
        return new Track(kind, uuid, parent, name, trackName, pid, tid, childOrdering, siblingOrderRank);
    }

    /** The track's name, or null for an unnamed one. */
    public String name() {
        return name;
    }

    /** The track's uuid, as events and descriptors carry it. */
    public long uuid() {
        return uuid;
    }

    /** The parent track, or null for a top-level one. */
    public Track parent() {
        return parent;
    }

    /** Whether this is a counter track, which takes counter values rather than slices. */
    public boolean isCounter() {
        return kind == Kind.COUNTER;
    }

    void describe(TrackDescriptor descriptor) {
        descriptor.setUuid(uuid);
        if (parent != null) {
            descriptor.setParentUuid(parent.uuid);
        }
        if (trackName != null) {
            descriptor.setName(trackName);
        }
        switch (kind) {
            case PROCESS -> {
                var process = descriptor.setProcess();
                process.setPid(pid);
                if (name != null) {
                    process.setProcessName(name);
                }
            }
            case THREAD -> {
                ThreadDescriptor thread = descriptor.setThread();
                thread.setPid(pid);
                thread.setTid(tid);
                if (name != null) {
                    thread.setThreadName(name);
                }
            }
            case NAMED -> descriptor.setName(name);
            case COUNTER -> {
                descriptor.setName(name);
                descriptor.setCounter();
            }
        }
        if (childOrdering != ChildOrdering.UNSPECIFIED) {
            descriptor.setChildOrdering(childOrdering.value);
        }
        if (siblingOrderRank != null) {
            descriptor.setSiblingOrderRank(siblingOrderRank);
        }
    }

    private static void requireKind(Track track, Kind kind, String message) {
        if (track == null || track.kind != kind) {
            throw new IllegalArgumentException(message);
        }
    }

    private static void requireName(String name) {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("a named or counter track needs a name");
        }
    }
}
