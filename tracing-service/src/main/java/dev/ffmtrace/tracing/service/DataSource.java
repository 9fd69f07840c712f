package dev.ffmtrace.tracing.service;

import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.tracing.smb.SharedMemoryArbiter.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;

/**
 * A data source a producer offers. When a session names it, the service starts it bound
 * to the buffer the session resolved for it; its writers then write into that buffer.
 */
public final class DataSource {
    private final Producer producer;
    private final String name;
    private volatile int targetBuffer;

    DataSource(Producer producer, String name) {
        this.producer = producer;
        this.name = name;
    }

    public String name() {
        return name;
    }

    /** Whether a session has started this data source. */
    public boolean isStarted() {
        return targetBuffer != 0;
    }

    /**
     * A writer for this data source's current session, on its own sequence.
     *
     * @throws IllegalStateException if no session has started the data source
     */
    public TraceWriter<TracePacket> newTraceWriter(BufferExhaustedPolicy policy) {
        int target = targetBuffer;
        if (target == 0) {
            throw new IllegalStateException("data source \"" + name + "\" is not started by any session");
        }
        return producer.newTraceWriter(target, policy);
    }

    void start(int bufferId) {
        targetBuffer = bufferId;
    }

    void stop(int bufferId) {
        if (targetBuffer == bufferId) {
            targetBuffer = 0;
        }
    }

    int targetBuffer() {
        return targetBuffer;
    }
}
