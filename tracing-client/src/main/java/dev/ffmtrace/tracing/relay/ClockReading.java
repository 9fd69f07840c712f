package dev.ffmtrace.tracing.relay;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.perfetto.protos.BuiltinClock;
import java.util.List;

/**
 * One clock's reading in a relay's clock exchange: a {@code BuiltinClock} id (or a
 * relay's own) and its time in nanoseconds.
 */
public record ClockReading(int clockId, long timestamp) {
    /**
     * This machine's clocks as Perfetto's {@code CaptureClockSnapshots} reads them, in its
     * order, every clock read before any is kept (its x86 TSC reading left out: Java cannot
     * read the TSC): what a relay sends in SyncClock, and what the host keeps beside it.
     */
    public static List<ClockReading> snapshot() {
        long boottime = Os.clockNanos(Os.CLOCK_BOOTTIME);
        long realtimeCoarse = Os.clockNanos(Os.CLOCK_REALTIME_COARSE);
        long monotonicCoarse = Os.clockNanos(Os.CLOCK_MONOTONIC_COARSE);
        long realtime = Os.clockNanos(Os.CLOCK_REALTIME);
        long monotonic = Os.clockNanos(Os.CLOCK_MONOTONIC);
        long monotonicRaw = Os.clockNanos(Os.CLOCK_MONOTONIC_RAW);
        return List.of(
                new ClockReading(BuiltinClock.BUILTIN_CLOCK_BOOTTIME.number(), boottime),
                new ClockReading(BuiltinClock.BUILTIN_CLOCK_REALTIME_COARSE.number(), realtimeCoarse),
                new ClockReading(BuiltinClock.BUILTIN_CLOCK_MONOTONIC_COARSE.number(), monotonicCoarse),
                new ClockReading(BuiltinClock.BUILTIN_CLOCK_REALTIME.number(), realtime),
                new ClockReading(BuiltinClock.BUILTIN_CLOCK_MONOTONIC.number(), monotonic),
                new ClockReading(BuiltinClock.BUILTIN_CLOCK_MONOTONIC_RAW.number(), monotonicRaw));
    }
}
