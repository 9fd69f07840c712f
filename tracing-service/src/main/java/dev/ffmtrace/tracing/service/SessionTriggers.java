package dev.ffmtrace.tracing.service;

import java.util.ArrayList;
import java.util.List;

/**
 * The triggers one session received, and the {@code trigger} packets that tell them in
 * its trace: each once in a consuming read, all of them in a snapshot. Only the first
 * {@value #MAX_RECORDED} are kept (Perfetto keeps every one): a producer that fires a
 * trigger in a loop must not grow the session without bound. Thread-safe.
 */
final class SessionTriggers {
    /** Triggers kept per session; later ones still act, but are not written into the trace. */
    static final int MAX_RECORDED = 1000;

    private final List<TriggerHit> received = new ArrayList<>();
    /** How many of {@link #received} a consuming read has written. */
    private int written;
    private long notRecorded;

    /** Records {@code trigger}; returns whether it is the session's first. */
    synchronized boolean add(TriggerHit trigger) {
        if (received.size() == MAX_RECORDED) {
            notRecorded++;
            return false;
        }
        received.add(trigger);
        return received.size() == 1;
    }

    /** Triggers that came after the first {@value #MAX_RECORDED}: they acted, but the trace does not list them. */
    synchronized long notRecorded() {
        return notRecorded;
    }

    /** Whether no trigger came yet. */
    synchronized boolean isEmpty() {
        return received.isEmpty();
    }

    /** The packets of the triggers no consuming read has written, now counted as written. */
    synchronized List<byte[]> takeUnwrittenPackets() {
        List<byte[]> packets = packets(written);
        written = received.size();
        return packets;
    }

    /** The packets of every trigger received, for a snapshot. */
    synchronized List<byte[]> allPackets() {
        return packets(0);
    }

    /**
     * The packets of every trigger received, which a clone takes away: the session starts
     * a new list, as Perfetto's clone moves them (a CLONE_SNAPSHOT session snapshotted for
     * hours would otherwise carry every old trigger into each snapshot).
     */
    synchronized List<byte[]> takeAllPackets() {
        List<byte[]> packets = packets(0);
        received.clear();
        written = 0;
        return packets;
    }

    /** The packets of the triggers from {@code from} on; none, without allocating, if there are none. */
    private List<byte[]> packets(int from) {
        if (from == received.size()) {
            return List.of();
        }
        ServicePackets encoder = new ServicePackets();
        List<byte[]> packets = new ArrayList<>(received.size() - from);
        for (int i = from; i < received.size(); i++) {
            packets.add(encoder.trigger(received.get(i)).toByteArray());
        }
        return packets;
    }
}
