package dev.ffmtrace.tracing.smb;

import dev.ffmtrace.memory.Layouts;
import java.lang.foreign.MemorySegment;

/**
 * A writer's pending patches: size fields of nested messages that were still open when
 * the chunk holding them was returned. Each entry owns a 4-byte slot the message writes
 * its size into when it is finalized; an entry is ready once its slot is written (a
 * redundant varint never starts with a zero byte).
 *
 * <p>A ring of fixed capacity, so slots never move while a message points at them. At
 * most one entry per open nested message is unpatched at a time, and patched entries
 * leave at the next commit, so the capacity is never approached in practice.
 */
final class PatchList {
    static final int CAPACITY = 4 * 64;
    private static final int SLOT = 4;

    private final MemorySegment slots = MemorySegment.ofArray(new byte[CAPACITY * SLOT]);
    private final int[] chunkIds = new int[CAPACITY];
    private final int[] payloadOffsets = new int[CAPACITY];
    private int head;
    private int size;

    MemorySegment slots() {
        return slots;
    }

    /** Adds an entry for a size field at {@code payloadOffset} of chunk {@code chunkId}; returns its slot's offset. */
    long add(int chunkId, int payloadOffset) {
        if (size == CAPACITY) {
            throw new IllegalStateException("more than " + CAPACITY + " size fields awaiting patches");
        }
        int index = (head + size) % CAPACITY;
        slots.set(Layouts.INT_UNALIGNED, (long) index * SLOT, 0);
        chunkIds[index] = chunkId;
        payloadOffsets[index] = payloadOffset;
        size++;
        return (long) index * SLOT;
    }

    boolean isEmpty() {
        return size == 0;
    }

    boolean isFrontReady() {
        return size > 0 && isReady(head);
    }

    private boolean isReady(int index) {
        return slots.get(Layouts.BYTE, (long) index * SLOT) != 0;
    }

    /**
     * Moves the leading ready entries into {@code request}; each is marked as having more
     * patches when an entry of the same chunk stays behind.
     */
    void drainReady(CommitRequest request, int targetBuffer, int writerId) {
        int first = request.patches();
        while (isFrontReady()) {
            request.addPatch(targetBuffer, writerId, chunkIds[head], payloadOffsets[head],
                    slots.get(Layouts.INT_UNALIGNED, (long) head * SLOT), false);
            head = (head + 1) % CAPACITY;
            size--;
        }
        for (int i = first; i < request.patches(); i++) {
            if (contains(request.patchChunkId(i))) {
                request.markHasMorePatches(i);
            }
        }
    }

    private boolean contains(int chunkId) {
        for (int i = 0; i < size; i++) {
            if (chunkIds[(head + i) % CAPACITY] == chunkId) {
                return true;
            }
        }
        return false;
    }
}
