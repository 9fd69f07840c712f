/**
 * The producer side of Perfetto's tracing protocol: the shared memory buffer ABI, the
 * arbiter that hands out its chunks, TraceWriter and commit requests. All a Java
 * application needs to write a trace into an SMB; neither TraceBufferV2 nor the service.
 */
module dev.ffmtrace.tracing.producer {
    requires transitive dev.ffmtrace.perfetto.protos;
    requires dev.ffmtrace.ipc;

    exports dev.ffmtrace.tracing.smb;
    exports dev.ffmtrace.tracing.producer;
    // The SMB's layout and chunk state machine: for the service that reads it, the
    // buffer that stores its chunks and the stress suite's hostile producer, not for
    // applications.
    exports dev.ffmtrace.tracing.smb.abi to dev.ffmtrace.tracing.buffer, dev.ffmtrace.tracing.service,
            dev.ffmtrace.cli;
}
