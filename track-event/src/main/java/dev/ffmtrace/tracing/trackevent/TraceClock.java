package dev.ffmtrace.tracing.trackevent;

import dev.ffmtrace.perfetto.protos.BuiltinClock;

/**
 * The clock a {@link TrackEventWriter} reads for each event, and the id it writes for it.
 */
public enum TraceClock {
    /**
     * CLOCK_MONOTONIC, read with {@link System#nanoTime()}: on Linux the JDK reads that
     * clock through the vDSO, cheaper than any downcall. The service's clock snapshots
     * (MONOTONIC and BOOTTIME read together) let the trace processor move these
     * timestamps onto its BOOTTIME timeline.
     */
    MONOTONIC(BuiltinClock.BUILTIN_CLOCK_MONOTONIC),
    /** CLOCK_BOOTTIME, Perfetto's default trace clock, read through a {@code clock_gettime} downcall. */
    BOOTTIME(BuiltinClock.BUILTIN_CLOCK_BOOTTIME);

    /** The clock's {@code BuiltinClock} id, as written in {@code timestamp_clock_id}. */
    public final int id;

    TraceClock(BuiltinClock clock) {
        this.id = clock.number();
    }
}
