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
    /** At most one loss-triggered clear of the writers' incremental state per second: a wrapping ring loses data on every commit. */
    static final long LOSS_CLEAR_INTERVAL_NANOS = 1_000_000_000L;

    final int id;
    final SharedMemory memory;
    final TraceBufferV2 buffer;
    final ReentrantLock lock = new ReentrantLock();
    /**
     * When the last loss made the service clear its writers' state (at first an interval ago,
     * so the first loss clears); guarded by {@link #lock}.
     */
    private long lastLossClear = System.nanoTime() - LOSS_CLEAR_INTERVAL_NANOS;
    /**
     * Chunks still being written when their producer disconnected, which can never
     * complete: their last packet, perhaps cut short, is lost (Perfetto's TraceStats
     * {@code chunks_discarded}). Guarded by {@link #lock}.
     */
    long chunksDiscarded;

    ServiceBuffer(int id, SessionConfig.Buffer config) {
        this.id = id;
        this.memory = SharedMemory.create("ffmtrace-buffer-" + id, config.sizeBytes());
        this.buffer = new TraceBufferV2(memory.segment(), config.overwritePolicy());
    }

    /**
     * Whether the buffer lost data since {@code lostBefore} (its {@code chunksLost()} then)
     * and its writers should clear their incremental state: the first loss, then at most
     * once per {@link #LOSS_CLEAR_INTERVAL_NANOS}. The caller holds {@link #lock}.
     */
    boolean shouldClearAfterLoss(long lostBefore) {
        if (buffer.chunksLost() == lostBefore) {
            return false;
        }
        long now = System.nanoTime();
        if (now - lastLossClear < LOSS_CLEAR_INTERVAL_NANOS) {
            return false;
        }
        lastLossClear = now;
        return true;
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
