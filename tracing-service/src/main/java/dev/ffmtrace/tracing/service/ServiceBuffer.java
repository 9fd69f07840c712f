package dev.ffmtrace.tracing.service;

import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.tracing.buffer.TraceBufferV2;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One of a session's trace buffers: a TraceBufferV2 in its own sealed memfd, with the lock
 * that serializes the producers' commits and the session's reads (TraceBufferV2 is
 * single-threaded).
 */
final class ServiceBuffer {
    final int id;
    final SharedMemory memory;
    final TraceBufferV2 buffer;
    final ReentrantLock lock = new ReentrantLock();

    ServiceBuffer(int id, SessionConfig.Buffer config) {
        this.id = id;
        this.memory = SharedMemory.create("ffmtrace-buffer-" + id, config.sizeBytes());
        this.buffer = new TraceBufferV2(memory.segment(), config.overwritePolicy());
    }

    void close() {
        lock.lock();
        try {
            memory.close();
        } finally {
            lock.unlock();
        }
    }
}
