/**
 * The in-process tracing service: sessions from a TraceConfig with named buffers,
 * producers with sealed shared memory buffers, commits, flushes with scraping, and trace
 * files with trusted fields and stats; and Perfetto's consumer port on it, for consumers
 * in other processes.
 */
module dev.ffmtrace.tracing.service {
    requires java.management;
    requires transitive dev.ffmtrace.tracing.buffer;
    requires transitive dev.ffmtrace.tracing.core;
    requires dev.ffmtrace.tracing.client;
    requires transitive dev.ffmtrace.tracing.trackevent;
    requires transitive dev.ffmtrace.ipc;

    exports dev.ffmtrace.tracing.service;
    exports dev.ffmtrace.tracing.service.ipc;
}
