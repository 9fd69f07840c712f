package dev.ffmtrace.heapprofd.client;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Objects;

/**
 * An {@link Arena} whose allocations a {@link HeapprofdClient} reports on a heap of their
 * own, so that the native memory a Java service allocates through FFM shows in the heap
 * profile, with the Java stack that allocated it. The memory comes from the wrapped arena;
 * closing this arena reports the frees of the sampled allocations (the only ones the
 * service books), then closes the wrapped one. Reporting never throws: a client that has
 * stopped leaves the arena working, unprofiled.
 *
 * <p>Thread-safety is the wrapped arena's; the record of sampled addresses is guarded by
 * this arena's lock.
 */
public final class ProfiledArena implements Arena {
    private final Arena arena;
    private final HeapprofdClient client;
    private final int heapId;
    private long[] sampled = new long[16];
    private int sampledCount;

    /**
     * Wraps {@code arena}, reporting its allocations on heap {@code heapId} of {@code client}
     * (from {@link HeapprofdClient#registerHeap}).
     */
    public ProfiledArena(Arena arena, HeapprofdClient client, int heapId) {
        this.arena = Objects.requireNonNull(arena, "arena");
        this.client = Objects.requireNonNull(client, "client");
        this.heapId = heapId;
    }

    @Override
    public MemorySegment allocate(long byteSize, long byteAlignment) {
        MemorySegment segment = arena.allocate(byteSize, byteAlignment);
        if (client.reportAllocation(heapId, segment.address(), byteSize)) {
            remember(segment.address());
        }
        return segment;
    }

    private synchronized void remember(long address) {
        if (sampledCount == sampled.length) {
            sampled = Arrays.copyOf(sampled, sampledCount * 2);
        }
        sampled[sampledCount++] = address;
    }

    @Override
    public MemorySegment.Scope scope() {
        return arena.scope();
    }

    /** Reports the sampled allocations freed, then closes the wrapped arena. */
    @Override
    public void close() {
        synchronized (this) {
            for (int i = 0; i < sampledCount; i++) {
                client.reportFree(heapId, sampled[i]);
            }
            sampledCount = 0;
        }
        arena.close();
    }
}
