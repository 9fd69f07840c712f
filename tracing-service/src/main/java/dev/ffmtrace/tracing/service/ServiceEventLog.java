package dev.ffmtrace.tracing.service;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.perfetto.protos.TracingServiceEvent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A session's {@code service_event} packets, as Perfetto's service writes them: each
 * consuming readback writes those not written yet, in the order they happened (of the
 * periodic flushes only the last), and a snapshot or clone writes the milestones, the
 * events that happen once (started, all data sources started, disabled). An event not
 * written yet is kept as its field and time, and encoded when written: a readback's own
 * event costs no allocation. Safe from any thread.
 */
final class ServiceEventLog {
    /**
     * The events not written yet, each its time and its field of Perfetto's
     * TracingServiceEvent, in the order they happened: each is stamped under this lock.
     */
    private long[] unwrittenTimes = new long[8];
    private int[] unwrittenFields = new int[8];
    private int unwrittenCount;
    /** The time of the last flush's event, if not written yet; -1 otherwise. */
    private long unwrittenFlush = -1;
    /** The milestones' packets, encoded once for every snapshot and clone. */
    private final List<byte[]> milestones = new ArrayList<>();

    /** Records the event {@code eventField} (a field of Perfetto's TracingServiceEvent) as of now. */
    synchronized void record(int eventField) {
        long now = Os.clockNanos(Os.CLOCK_BOOTTIME);
        switch (eventField) {
            case TracingServiceEvent.ALL_DATA_SOURCES_FLUSHED_FIELD_NUMBER -> unwrittenFlush = now;
            case TracingServiceEvent.READ_TRACING_BUFFERS_COMPLETED_FIELD_NUMBER -> addUnwritten(now, eventField);
            default -> {
                addUnwritten(now, eventField);
                milestones.add(new ServicePackets().serviceEvent(eventField, now).toByteArray());
            }
        }
    }

    private void addUnwritten(long bootTimeNanos, int eventField) {
        if (unwrittenCount == unwrittenTimes.length) {
            unwrittenTimes = Arrays.copyOf(unwrittenTimes, 2 * unwrittenCount);
            unwrittenFields = Arrays.copyOf(unwrittenFields, 2 * unwrittenCount);
        }
        unwrittenTimes[unwrittenCount] = bootTimeNanos;
        unwrittenFields[unwrittenCount++] = eventField;
    }

    /**
     * Appends the events not written yet to {@code sink}, encoded by {@code packets}, in
     * the order they happened (the last flush after the events of its time, as a stable
     * sort puts it); written, they are not written again.
     */
    synchronized void writeUnwritten(ServicePackets packets, ReadbackSink sink) {
        for (int i = 0; i < unwrittenCount; i++) {
            if (unwrittenFlush >= 0 && unwrittenFlush < unwrittenTimes[i]) {
                writeFlush(packets, sink);
            }
            packets.serviceEvent(unwrittenFields[i], unwrittenTimes[i]).appendTo(sink);
        }
        if (unwrittenFlush >= 0) {
            writeFlush(packets, sink);
        }
        unwrittenCount = 0;
    }

    private void writeFlush(ServicePackets packets, ReadbackSink sink) {
        packets.serviceEvent(TracingServiceEvent.ALL_DATA_SOURCES_FLUSHED_FIELD_NUMBER, unwrittenFlush).appendTo(sink);
        unwrittenFlush = -1;
    }

    /** The packets of the events that happen once, so far. */
    synchronized List<byte[]> milestones() {
        return List.copyOf(milestones);
    }
}
