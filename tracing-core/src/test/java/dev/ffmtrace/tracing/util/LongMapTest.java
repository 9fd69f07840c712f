package dev.ffmtrace.tracing.util;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The unwinder's frame cache: a long-keyed map, against a HashMap. */
class LongMapTest {
    @Test
    void everyLongIsAKeyAndAPutReplaces() {
        LongMap<String> map = new LongMap<>();
        long[] keys = {0, -1, Long.MIN_VALUE, Long.MAX_VALUE, 0x7f00_0000_1000L};
        for (long key : keys) {
            assertNull(map.get(key));
            map.put(key, "first " + key);
        }
        map.put(0, "second 0");
        assertEquals(keys.length, map.size());
        assertEquals("second 0", map.get(0));
        assertEquals("first -1", map.get(-1));
        assertEquals("first " + Long.MIN_VALUE, map.get(Long.MIN_VALUE));
        assertThrows(NullPointerException.class, () -> map.put(1, null));
    }

    @Test
    void itGrowsPastItsFirstCapacityAndKeepsEveryKey() {
        LongMap<Long> map = new LongMap<>();
        // Page-aligned keys, alike in their low bits as pcs and addresses are.
        for (long i = 0; i < 100_000; i++) {
            map.put(i << 12, i);
        }
        assertEquals(100_000, map.size());
        for (long i = 0; i < 100_000; i++) {
            assertEquals(i, map.get(i << 12));
        }
        assertNull(map.get(100_000L << 12));
    }

    @Test
    void clearForgetsEveryKeyAndTheMapFillsAgain() {
        LongMap<String> map = new LongMap<>();
        for (long i = 0; i < 1000; i++) {
            map.put(i, "a");
        }
        map.clear();
        assertEquals(0, map.size());
        for (long i = 0; i < 1000; i++) {
            assertNull(map.get(i));
        }
        map.put(7, "b");
        assertEquals("b", map.get(7));
        assertEquals(1, map.size());
    }

    /**
     * Puts and clears of keys from a small pool (so that keys repeat and collide) agree
     * with a HashMap after every step.
     */
    @Property(tries = 500)
    void behavesAsAHashMap(@ForAll @Size(min = 1, max = 40) List<Long> pool,
                           @ForAll @Size(max = 400) List<@IntRange(min = 0, max = 1 << 12) Integer> steps) {
        LongMap<Integer> map = new LongMap<>();
        Map<Long, Integer> model = new HashMap<>();
        for (int step : steps) {
            long key = pool.get(step % pool.size());
            if (step % 97 == 0) {
                map.clear();
                model.clear();
            } else {
                map.put(key, step);
                model.put(key, step);
            }
            assertEquals(model.size(), map.size());
            assertEquals(model.get(key), map.get(key));
        }
        for (long key : pool) {
            assertEquals(model.get(key), map.get(key));
        }
    }
}
