package dev.ffmtrace.heapprofd.service;

/** The search the address tables share: mappings, functions and JIT code, each sorted by start. */
final class Addresses {
    private Addresses() {
    }

    /**
     * The index of the last of {@code starts} (sorted ascending, compared unsigned) at or
     * below {@code address}; -1 if every start is above it.
     */
    static int lastAtOrBelow(long[] starts, long address) {
        int low = 0;
        int high = starts.length - 1;
        while (low <= high) {
            int middle = (low + high) >>> 1;
            if (Long.compareUnsigned(starts[middle], address) <= 0) {
                low = middle + 1;
            } else {
                high = middle - 1;
            }
        }
        return high;
    }
}
