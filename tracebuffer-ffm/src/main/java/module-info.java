/** Perfetto's TraceBufferV2: the service's buffer of producers' chunks, read back as whole packets. */
module dev.ffmtrace.tracing.buffer {
    requires transitive dev.ffmtrace.tracing.producer;

    exports dev.ffmtrace.tracing.buffer;
}
