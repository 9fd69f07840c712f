/**
 * The core of Perfetto's tracing, as its {@code src/tracing/core}: the shared memory
 * buffer ABI, the arbiter that hands out its chunks, TraceWriter and commit requests. All
 * a Java application needs to write a trace into an SMB; no IPC, no TraceBufferV2, no
 * service.
 */
module dev.ffmtrace.tracing.core {
    requires transitive dev.ffmtrace.perfetto.protos;

    exports dev.ffmtrace.tracing.smb;
    // The SMB's layout and chunk state machine: for the service that reads it, the
    // buffer that stores its chunks and the stress suite's hostile producer, not for
    // applications.
    exports dev.ffmtrace.tracing.smb.abi to dev.ffmtrace.tracing.buffer, dev.ffmtrace.tracing.service,
            dev.ffmtrace.cli;
    // Helpers the modules on top share, not API.
    exports dev.ffmtrace.tracing.util to dev.ffmtrace.heapprofd.service, dev.ffmtrace.jvm;
}
