package dev.ffmtrace.tracing.service;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.perfetto.protos.TracingServiceEvent;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * A session's {@code service_event} packets, as Perfetto's service writes them: each
 * consuming readback writes those not written yet, in the order they happened (of the
 * periodic flushes only the last), and a snapshot or clone writes the milestones, the
 * events that happen once (started, all data sources started, disabled). Safe from any
 * thread.
 */
final class ServiceEventLog {
    /** A {@code service_event} packet and when it happened. */
    private record Event(long bootTimeNanos, byte[] packet) {
    }

    private final List<Event> unwritten = new ArrayList<>();
    /** The last flush's event, if not written yet. */
    private Event unwrittenFlush;
    private final List<Event> milestones = new ArrayList<>();

    /** Records the event {@code eventField} (a field of Perfetto's TracingServiceEvent) as of now. */
    synchronized void record(int eventField) {
        long now = Os.clockNanos(Os.CLOCK_BOOTTIME);
        Event event = new Event(now, ServicePackets.serviceEvent(eventField, now));
        switch (eventField) {
            case TracingServiceEvent.ALL_DATA_SOURCES_FLUSHED_FIELD_NUMBER -> unwrittenFlush = event;
            case TracingServiceEvent.READ_TRACING_BUFFERS_COMPLETED_FIELD_NUMBER -> unwritten.add(event);
            default -> {
                unwritten.add(event);
                milestones.add(event);
            }
        }
    }

    /** The packets of the events not taken yet, in the order they happened; taken, they are not returned again. */
    synchronized List<byte[]> takeUnwritten() {
        if (unwrittenFlush != null) {
            unwritten.add(unwrittenFlush);
            unwrittenFlush = null;
        }
        unwritten.sort(Comparator.comparingLong(Event::bootTimeNanos));
        List<byte[]> packets = unwritten.stream().map(Event::packet).toList();
        unwritten.clear();
        return packets;
    }

    /** The packets of the events that happen once, so far. */
    synchronized List<byte[]> milestones() {
        return milestones.stream().map(Event::packet).toList();
    }
}
