package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.tracing.util.LongMap;

/**
 * The live sampled allocations of one heap, by address: each one's callsite and bytes, in
 * parallel arrays by open addressing (linear probing, the slots of {@link LongMap#slot}),
 * so booking a Malloc or a Free boxes no address and allocates no entry. A removal shifts
 * the entries after it back instead of leaving a tombstone, so the many frees keep every
 * probe short. Callers go by slot: {@link #find} an address, then read, replace, remove or
 * add at the slot it gave, with no other change between. A slot is empty when its
 * callsite is null. Not thread-safe: its {@link HeapBooks} locks.
 */
final class LiveAllocations {
    private static final int MIN_CAPACITY = 16;

    private long[] addresses;
    private HeapBooks.Callsite[] callsites;
    private long[] bytes;
    /** 64 minus log2 of the capacity, for {@link LongMap#slot}. */
    private int shift;
    private int size;

    LiveAllocations() {
        allocate(MIN_CAPACITY);
    }

    /**
     * The slot of the live allocation at {@code address}; if there is none, the bitwise
     * complement (negative) of the slot {@link #add} would fill.
     */
    int find(long address) {
        int mask = addresses.length - 1;
        int slot = LongMap.slot(address, shift);
        while (callsites[slot] != null) {
            if (addresses[slot] == address) {
                return slot;
            }
            slot = (slot + 1) & mask;
        }
        return ~slot;
    }

    /** The callsite of the allocation at {@code slot}. */
    HeapBooks.Callsite callsite(int slot) {
        return callsites[slot];
    }

    /** The sampled bytes of the allocation at {@code slot}. */
    long bytes(int slot) {
        return bytes[slot];
    }

    /** Books another allocation at the address of {@code slot}: one freed without a free seen. */
    void replace(int slot, HeapBooks.Callsite callsite, long sampleBytes) {
        callsites[slot] = callsite;
        bytes[slot] = sampleBytes;
    }

    /** Adds the allocation at {@code address}, which {@link #find} answered {@code absent} for. */
    void add(int absent, long address, HeapBooks.Callsite callsite, long sampleBytes) {
        int slot = ~absent;
        addresses[slot] = address;
        callsites[slot] = callsite;
        bytes[slot] = sampleBytes;
        // At most half full: probes stay short.
        if (++size > addresses.length / 2) {
            grow();
        }
    }

    /** Removes the allocation at {@code slot}; entries after it in its probe run may move. */
    void remove(int slot) {
        int mask = addresses.length - 1;
        int hole = slot;
        for (int at = (hole + 1) & mask; callsites[at] != null; at = (at + 1) & mask) {
            // The entry at `at` may fill the hole only if the hole is on its probe path, from
            // its home slot up to `at`.
            int home = LongMap.slot(addresses[at], shift);
            if (((at - home) & mask) >= ((at - hole) & mask)) {
                addresses[hole] = addresses[at];
                callsites[hole] = callsites[at];
                bytes[hole] = bytes[at];
                hole = at;
            }
        }
        callsites[hole] = null;
        size--;
    }

    int size() {
        return size;
    }

    private void grow() {
        long[] oldAddresses = addresses;
        HeapBooks.Callsite[] oldCallsites = callsites;
        long[] oldBytes = bytes;
        allocate(addresses.length * 2);
        for (int i = 0; i < oldAddresses.length; i++) {
            if (oldCallsites[i] != null) {
                int slot = ~find(oldAddresses[i]);
                addresses[slot] = oldAddresses[i];
                callsites[slot] = oldCallsites[i];
                bytes[slot] = oldBytes[i];
            }
        }
    }

    private void allocate(int capacity) {
        addresses = new long[capacity];
        callsites = new HeapBooks.Callsite[capacity];
        bytes = new long[capacity];
        shift = 64 - Integer.numberOfTrailingZeros(capacity);
    }
}
