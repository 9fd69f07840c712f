/**
 * Complete programs that use ffmtrace as a library: a trace file written offline with the
 * TrackEvent API, an in-process tracing session, a producer joining a Perfetto tracing service,
 * and a SharedRingBuffer shared by two handles.
 */
module dev.ffmtrace.examples {
    requires dev.ffmtrace.shmring;
    requires dev.ffmtrace.tracing.service;
    requires dev.ffmtrace.tracing.client;
    requires dev.ffmtrace.tracing.sdk;
    // Nothing exported: the programs run with java -m dev.ffmtrace.examples/<main class>.
}
