/**
 * heapprofd's service side: accepts clients, makes the handshake, reads each client's
 * ring, unwinds its records and keeps the books of each process's heaps.
 */
module dev.ffmtrace.heapprofd.service {
    requires transitive dev.ffmtrace.heapprofd.client;
    requires dev.ffmtrace.protozero;
    requires transitive dev.ffmtrace.tracing.service;
    requires transitive dev.ffmtrace.tracing.sdk;

    exports dev.ffmtrace.heapprofd.service;
}
