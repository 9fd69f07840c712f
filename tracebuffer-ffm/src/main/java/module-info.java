/** Perfetto's TraceBufferV2: the service's buffer of producers' chunks, read back as whole packets. */
module dev.ffmtrace.tracing.buffer {
    requires transitive dev.ffmtrace.perfetto.protos;
    requires dev.ffmtrace.tracing.core;
    requires transitive dev.ffmtrace.protovm;

    exports dev.ffmtrace.tracing.buffer;
}
