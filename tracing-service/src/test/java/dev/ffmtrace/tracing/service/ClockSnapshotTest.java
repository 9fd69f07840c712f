package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.perfetto.protos.BuiltinClock;
import dev.ffmtrace.perfetto.protos.ClockSnapshot;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.util.EnumMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The service's clock snapshot describes one instant: its clocks are read back to back
 * before anything is encoded, so each clock's offset to BOOTTIME in the snapshot is the
 * true one, give or take the few microseconds of the reads.
 */
class ClockSnapshotTest {
    /** How far a snapshot's offset may stray from the true one, in the best of {@link #ATTEMPTS}. */
    private static final long READ_WINDOW_NANOS = 50_000;
    private static final int ATTEMPTS = 20;
    /** The longest kernel tick (100 Hz), with room for a slow round of reads. */
    private static final long MAX_TICK_NANOS = 20_000_000;
    /** A coarse clock read after its fine one may have ticked past it in between. */
    private static final long COARSE_SLACK_NANOS = 1_000_000;
    private static final Map<BuiltinClock, Integer> OS_CLOCKS = Map.of(
            BuiltinClock.BUILTIN_CLOCK_MONOTONIC, Os.CLOCK_MONOTONIC,
            BuiltinClock.BUILTIN_CLOCK_MONOTONIC_RAW, Os.CLOCK_MONOTONIC_RAW,
            BuiltinClock.BUILTIN_CLOCK_REALTIME, Os.CLOCK_REALTIME);

    /** A clock's offset to BOOTTIME, bracketed by two BOOTTIME reads around one read of the clock. */
    private record Bracket(long low, long high) {
        static Bracket measure(int osClock) {
            long before = Os.clockNanos(Os.CLOCK_BOOTTIME);
            long clock = Os.clockNanos(osClock);
            long after = Os.clockNanos(Os.CLOCK_BOOTTIME);
            return new Bracket(clock - after, clock - before);
        }

        /** How far {@code offset} lies outside the bracket; 0 inside it. */
        long distance(long offset) {
            return Math.max(0, Math.max(low - offset, offset - high));
        }
    }

    private static Map<BuiltinClock, Long> snapshotClocks(byte[] trace) {
        Trace.Decoder decoder = new Trace.Decoder();
        decoder.reset(MemorySegment.ofArray(trace));
        RepeatedFieldIterator packets = decoder.packet(new RepeatedFieldIterator());
        assertTrue(packets.next());
        TracePacket.Decoder packet = new TracePacket.Decoder();
        packet.reset(packets.field());
        ClockSnapshot.Decoder snapshot = new ClockSnapshot.Decoder();
        assertTrue(packet.clockSnapshot(snapshot), "readback starts with the clock snapshot");
        Map<BuiltinClock, Long> clocks = new EnumMap<>(BuiltinClock.class);
        RepeatedFieldIterator entries = snapshot.clocks(new RepeatedFieldIterator());
        ClockSnapshot.Clock.Decoder clock = new ClockSnapshot.Clock.Decoder();
        while (entries.next()) {
            clock.reset(entries.field());
            clocks.put(BuiltinClock.forNumber(clock.clockId()), clock.timestamp());
        }
        assertEquals(packet.timestamp(), clocks.get(BuiltinClock.BUILTIN_CLOCK_BOOTTIME),
                "the packet's timestamp is the snapshot's BOOTTIME");
        return clocks;
    }

    @Test
    void theCoarseClocksAreTheirFineOnesAtTickResolution() throws Exception {
        try (TracingService service = new TracingService()) {
            TracingSession session = service.startSession(TracingServiceTest.twoNamedBuffers());
            ByteArrayOutputStream trace = new ByteArrayOutputStream();
            session.writeTrace(trace);
            Map<BuiltinClock, Long> clocks = snapshotClocks(trace.toByteArray());
            // A coarse clock is its fine one at the last tick: behind it, by a tick at most (4 ms at 250 Hz).
            long realtimeLag = clocks.get(BuiltinClock.BUILTIN_CLOCK_REALTIME)
                    - clocks.get(BuiltinClock.BUILTIN_CLOCK_REALTIME_COARSE);
            long monotonicLag = clocks.get(BuiltinClock.BUILTIN_CLOCK_MONOTONIC)
                    - clocks.get(BuiltinClock.BUILTIN_CLOCK_MONOTONIC_COARSE);
            assertTrue(realtimeLag >= -COARSE_SLACK_NANOS && realtimeLag <= MAX_TICK_NANOS, "REALTIME lag " + realtimeLag);
            assertTrue(monotonicLag >= -COARSE_SLACK_NANOS && monotonicLag <= MAX_TICK_NANOS,
                    "MONOTONIC lag " + monotonicLag);
        }
    }

    @Test
    void theClocksAreReadBackToBackAndBoottimeIsNeverBehindMonotonic() throws Exception {
        try (TracingService service = new TracingService()) {
            TracingSession session = service.startSession(TracingServiceTest.twoNamedBuffers());
            long bestWindow = Long.MAX_VALUE;
            for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
                Map<BuiltinClock, Bracket> truth = new EnumMap<>(BuiltinClock.class);
                OS_CLOCKS.forEach((clock, osClock) -> truth.put(clock, Bracket.measure(osClock)));
                ByteArrayOutputStream trace = new ByteArrayOutputStream();
                session.writeTrace(trace);
                Map<BuiltinClock, Long> clocks = snapshotClocks(trace.toByteArray());
                long boottime = clocks.get(BuiltinClock.BUILTIN_CLOCK_BOOTTIME);
                // BOOTTIME is MONOTONIC plus the time suspended: a snapshot may never say less.
                assertTrue(boottime >= clocks.get(BuiltinClock.BUILTIN_CLOCK_MONOTONIC),
                        "BOOTTIME - MONOTONIC = " + (boottime - clocks.get(BuiltinClock.BUILTIN_CLOCK_MONOTONIC)) + " ns");
                long window = 0;
                for (Map.Entry<BuiltinClock, Bracket> entry : truth.entrySet()) {
                    window = Math.max(window, entry.getValue().distance(clocks.get(entry.getKey()) - boottime));
                }
                bestWindow = Math.min(bestWindow, window);
            }
            assertTrue(bestWindow <= READ_WINDOW_NANOS, "the snapshot's clocks are " + bestWindow
                    + " ns from describing one instant, in the best of " + ATTEMPTS + " snapshots");
        }
    }
}
