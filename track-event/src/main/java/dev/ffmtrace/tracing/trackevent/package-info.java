/**
 * Perfetto's TrackEvent API: slices, instants, counters and flows on tracks, with
 * interned names and incremental timestamps, written by a
 * {@link dev.ffmtrace.tracing.trackevent.TrackEventWriter} through a TraceWriter or
 * offline into a trace file, and read back by
 * {@link dev.ffmtrace.tracing.trackevent.TrackEventReader}. Tracing calls never throw into
 * the application once the writer or what it writes into is closed.
 */
package dev.ffmtrace.tracing.trackevent;
