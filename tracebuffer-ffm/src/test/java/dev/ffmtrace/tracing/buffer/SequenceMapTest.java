package dev.ffmtrace.tracing.buffer;

import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

class SequenceMapTest {

    @Test
    void behavesLikeAHashMapUnderRandomOperations() {
        Random random = new Random(3);
        SequenceMap map = new SequenceMap();
        Map<Integer, SequenceState> model = new HashMap<>();
        for (int op = 0; op < 50_000; op++) {
            // Few distinct keys, clustered, so probe runs collide and wrap.
            int key = 1 + random.nextInt(random.nextBoolean() ? 40 : 3000);
            if (random.nextInt(3) == 0) {
                model.remove(key);
                map.remove(key);
            } else {
                SequenceState value = new SequenceState(key >>> 16, key & 0xFFFF, new ClientIdentity(0, 0));
                model.put(key, value);
                map.put(key, value);
            }
            int probe = 1 + random.nextInt(3000);
            assertSame(model.get(probe), map.get(probe));
            assertEquals(model.size(), map.size());
        }
        int found = 0;
        for (int slot = 0; slot < map.capacity(); slot++) {
            if (map.valueAt(slot) != null) {
                assertSame(model.get(map.keyAt(slot)), map.valueAt(slot));
                found++;
            }
        }
        assertEquals(model.size(), found);
    }

    @Test
    void copyDeepCopiesTheStates() {
        SequenceMap map = new SequenceMap();
        SequenceState state = new SequenceState(1, 2, new ClientIdentity(3, 4));
        state.chunks.insert(0, 16, 7);
        map.put(0x10002, state);
        SequenceMap copy = map.copy();
        SequenceState copied = copy.get(0x10002);
        assertNotSame(state, copied);
        state.chunks.removeFirst();
        assertEquals(1, copied.chunks.size());
        copy.remove(0x10002);
        assertNull(copy.get(0x10002));
        assertSame(state, map.get(0x10002));
    }
}
