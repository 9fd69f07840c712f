package dev.ffmtrace.jvm;

import java.util.Map;
import java.util.TreeMap;

/**
 * The process's allocation rate, bytes per second, from JFR's weighted allocation
 * samples: summed per wall-clock second and written as a counter once no sample should
 * still land in that second. Samples come a little out of order (each thread's buffer is
 * committed on its own), so a second is written once a sample {@value #SETTLE_SECONDS}
 * seconds later has come, and every second left at the end. A second with no samples
 * after one with some is written as 0, so the counter does not hold a stale rate; a
 * sample for a second already written is counted in {@link #lateSamples()}.
 */
final class AllocationRate {
    static final long SETTLE_SECONDS = 5;
    private static final long SECOND = 1_000_000_000L;

    private final TreeMap<Long, long[]> bytesBySecond = new TreeMap<>();
    private long lastWritten = Long.MIN_VALUE;
    private long lateSamples;

    void add(long timestamp, long weight, JvmPacketWriter writer, JvmTrack track) {
        long second = Math.floorDiv(timestamp, SECOND);
        if (second <= lastWritten) {
            lateSamples++;
            return;
        }
        bytesBySecond.computeIfAbsent(second, k -> new long[1])[0] += Math.max(0, weight);
        while (bytesBySecond.firstKey() < second - SETTLE_SECONDS) {
            writeFirst(writer, track);
        }
    }

    void finish(JvmPacketWriter writer, JvmTrack track) {
        while (!bytesBySecond.isEmpty()) {
            writeFirst(writer, track);
        }
    }

    long lateSamples() {
        return lateSamples;
    }

    private void writeFirst(JvmPacketWriter writer, JvmTrack track) {
        Map.Entry<Long, long[]> first = bytesBySecond.pollFirstEntry();
        long second = first.getKey();
        writer.counter(second * SECOND, track, first.getValue()[0]);
        lastWritten = second;
        Long next = bytesBySecond.isEmpty() ? null : bytesBySecond.firstKey();
        if (next == null || next != second + 1) {
            writer.counter((second + 1) * SECOND, track, 0L);
            lastWritten = second + 1;
        }
    }
}
