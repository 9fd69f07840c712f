package dev.ffmtrace.jvm;

import dev.ffmtrace.perfetto.protos.CounterDescriptor;
import dev.ffmtrace.tracing.trackevent.Track;

/**
 * A track the JVM's events are drawn on, with a uuid derived from what it stands for, so
 * that converting the same recording twice gives the same bytes and a live session and
 * an offline conversion name a thread's track alike.
 */
record JvmTrack(long uuid, JvmTrack parent, Kind kind, String name, long pid, long tid, CounterDescriptor.Unit unit) {
    enum Kind { PROCESS, THREAD, NAMED, COUNTER }

    /** The track of process {@code pid}, with a uuid derived from the pid if {@code uuid} is 0. */
    static JvmTrack process(long uuid, long pid, String name) {
        return new JvmTrack(uuid != 0 ? uuid : uuid("process", pid, 0), null, Kind.PROCESS, name, pid, 0, null);
    }

    /** A platform thread's track; {@code key} is its Java thread id, or its OS tid for a VM thread. */
    static JvmTrack thread(JvmTrack process, long key, long tid, String name) {
        return new JvmTrack(uuid("thread", process.pid, key), process, Kind.THREAD, name, process.pid, tid, null);
    }

    /** A virtual thread's track: the one the SDK's TrackEvent draws the thread's slices on ({@link Track#virtualThread}). */
    static JvmTrack virtualThread(JvmTrack process, long javaThreadId, String name) {
        return new JvmTrack(Track.virtualThreadUuid(process.uuid, javaThreadId), process, Kind.NAMED, name,
                process.pid, 0, null);
    }

    /** A track named {@code name} under {@code parent}, one per name. */
    static JvmTrack named(JvmTrack parent, String name) {
        return new JvmTrack(uuid("named:" + name, parent.uuid, 0), parent, Kind.NAMED, name, parent.pid, 0, null);
    }

    static JvmTrack counter(JvmTrack parent, String name, CounterDescriptor.Unit unit) {
        return new JvmTrack(uuid("counter:" + name, parent.uuid, 0), parent, Kind.COUNTER, name, parent.pid, 0, unit);
    }

    /** A uuid derived from (what, a, b), never 0. */
    private static long uuid(String what, long a, long b) {
        return Track.derivedUuid(Track.derivedUuid(what.hashCode() ^ 0x6a766d5f74726b00L, a), b);
    }
}
