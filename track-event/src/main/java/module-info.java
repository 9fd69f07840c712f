/**
 * Perfetto's TrackEvent API: slices, instants, counters and flows on tracks, written
 * through a TraceWriter or offline into a trace file, and read back.
 */
module dev.ffmtrace.tracing.trackevent {
    requires transitive dev.ffmtrace.tracing.core;

    exports dev.ffmtrace.tracing.trackevent;
}
