package dev.ffmtrace.tracing.buffer;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

class ChunkOffsetQueueTest {

    @Test
    void behavesLikeAListUnderRandomOperations() {
        Random random = new Random(1);
        ChunkOffsetQueue queue = new ChunkOffsetQueue(2);
        List<Integer> model = new ArrayList<>();
        for (int op = 0; op < 4_000; op++) {
            int choice = random.nextInt(5);
            if (choice == 0 && !model.isEmpty()) {
                model.removeFirst();
                queue.removeFirst();
            } else if (choice == 1) {
                int index = random.nextInt(model.size() + 1);
                model.add(index, op);
                queue.insert(index, op, ~op);
            } else {
                model.add(op);
                queue.insert(queue.size(), op, ~op);
            }
            assertEquals(model.size(), queue.size());
            for (int i = 0; i < model.size(); i++) {
                assertEquals((int) model.get(i), queue.offsetAt(i));
                assertEquals(~model.get(i), queue.chunkIdAt(i));
            }
        }
    }

    @Test
    void copyIsIndependent() {
        ChunkOffsetQueue queue = new ChunkOffsetQueue(4);
        queue.insert(0, 16, 1);
        queue.insert(1, 32, 2);
        ChunkOffsetQueue copy = queue.copy();
        queue.removeFirst();
        queue.insert(1, 48, -1);
        assertEquals(2, copy.size());
        assertEquals(16, copy.offsetAt(0));
        assertEquals(2, copy.chunkIdAt(1));
        assertEquals("[2@32, -1@48]", queue.toString());
    }
}
