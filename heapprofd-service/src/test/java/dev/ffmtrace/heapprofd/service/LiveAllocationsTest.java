package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.tracing.util.LongMap;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The books' live allocations by address: adds, replacements and removals, against a HashMap. */
class LiveAllocationsTest {
    private static final HeapBooks.Callsite A = new HeapBooks.Callsite(Frame.unknown("a"), null);
    private static final HeapBooks.Callsite B = new HeapBooks.Callsite(Frame.unknown("b"), null);

    private record Allocation(HeapBooks.Callsite callsite, long bytes) {
    }

    /** Books {@code bytes} at {@code address} as a Malloc does: replacing a live one, else adding it. */
    private static void put(LiveAllocations live, long address, HeapBooks.Callsite callsite, long bytes) {
        int slot = live.find(address);
        if (slot >= 0) {
            live.replace(slot, callsite, bytes);
        } else {
            live.add(slot, address, callsite, bytes);
        }
    }

    private static boolean remove(LiveAllocations live, long address) {
        int slot = live.find(address);
        if (slot >= 0) {
            live.remove(slot);
        }
        return slot >= 0;
    }

    private static void assertHolds(Map<Long, Allocation> model, LiveAllocations live) {
        assertEquals(model.size(), live.size());
        for (Map.Entry<Long, Allocation> entry : model.entrySet()) {
            int slot = live.find(entry.getKey());
            assertTrue(slot >= 0, "0x" + Long.toHexString(entry.getKey()) + " lost");
            assertSame(entry.getValue().callsite(), live.callsite(slot));
            assertEquals(entry.getValue().bytes(), live.bytes(slot));
        }
    }

    /** Addresses whose home slot in the first table (16 slots) is its last, so that their probes wrap. */
    private static List<Long> collidingAtTheEnd(int count) {
        List<Long> addresses = new ArrayList<>();
        for (long address = 0; addresses.size() < count; address += 16) {
            if (LongMap.slot(address, 64 - 4) == 15) {
                addresses.add(address);
            }
        }
        return addresses;
    }

    @Test
    void aRemovalInAProbeRunThatWrapsKeepsTheRestFindable() {
        List<Long> run = collidingAtTheEnd(4);
        for (int removed = 0; removed < run.size(); removed++) {
            LiveAllocations live = new LiveAllocations();
            Map<Long, Allocation> model = new HashMap<>();
            for (long address : run) {
                put(live, address, A, address);
                model.put(address, new Allocation(A, address));
            }
            assertTrue(remove(live, run.get(removed)));
            model.remove(run.get(removed));
            assertHolds(model, live);
            assertTrue(live.find(run.get(removed)) < 0);
        }
    }

    @Test
    void aReplacementKeepsOneEntryWithTheNewCallsiteAndBytes() {
        LiveAllocations live = new LiveAllocations();
        put(live, 0x1000, A, 10);
        put(live, 0x1000, B, 20);
        assertEquals(1, live.size());
        int slot = live.find(0x1000);
        assertSame(B, live.callsite(slot));
        assertEquals(20, live.bytes(slot));
    }

    @Test
    void itGrowsAndEmptiesAgainWithoutTombstones() {
        LiveAllocations live = new LiveAllocations();
        Map<Long, Allocation> model = new HashMap<>();
        for (long i = 0; i < 50_000; i++) {
            put(live, i << 4, i % 2 == 0 ? A : B, i);
            model.put(i << 4, new Allocation(i % 2 == 0 ? A : B, i));
        }
        assertHolds(model, live);
        for (long i = 0; i < 50_000; i += 2) {
            assertTrue(remove(live, i << 4));
            model.remove(i << 4);
        }
        assertHolds(model, live);
        for (long i = 1; i < 50_000; i += 2) {
            assertTrue(remove(live, i << 4));
        }
        assertEquals(0, live.size());
        assertTrue(live.find(0) < 0);
        // Churn at one size: with tombstones a table fills with them; backward shifts leave none.
        for (long i = 0; i < 1_000_000; i++) {
            put(live, i << 4, A, i);
            assertTrue(remove(live, i << 4));
        }
        assertEquals(0, live.size());
    }

    /**
     * Adds, replacements and removals of addresses from a small range (so that they repeat
     * and their probe runs meet) agree with a HashMap after every step.
     */
    @Property(tries = 1000)
    void behavesAsAHashMap(@ForAll @Size(max = 600) List<@IntRange(min = 0, max = 255) Integer> steps) {
        LiveAllocations live = new LiveAllocations();
        Map<Long, Allocation> model = new HashMap<>();
        for (int step : steps) {
            long address = (step % 64 - 32) * 16L;
            if (step / 64 < 2) {
                HeapBooks.Callsite callsite = step / 64 == 0 ? A : B;
                put(live, address, callsite, step);
                model.put(address, new Allocation(callsite, step));
            } else {
                assertEquals(model.remove(address) != null, remove(live, address));
            }
            assertHolds(model, live);
        }
    }
}
