package dev.ffmtrace.tracing.producer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.Message;
import dev.ffmtrace.protozero.MessageFactory;
import dev.ffmtrace.protozero.ScatteredHeapBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The sender's queue: order kept across growth and wrap-around, commits bounded, commit arrays reused. */
class OutgoingQueueTest {
    private static final class Raw extends Message {
    }

    private static ScatteredHeapBuffer request(int value, int size) {
        HeapBuffered<Raw> message = new HeapBuffered<>(MessageFactory.of(Raw::new));
        byte[] payload = new byte[size];
        Arrays.fill(payload, (byte) value);
        message.get().appendBytes(1, payload);
        message.get().finalizeMessage();
        return message.buffer();
    }

    private static List<String> drain(OutgoingQueue<String> queue) {
        List<String> sent = new ArrayList<>();
        OutgoingQueue.Message<String> message;
        while ((message = queue.peek()) != null) {
            sent.add(message.session + ":" + message.method + ":" + message.length);
            queue.release(message);
        }
        return sent;
    }

    @Test
    void messagesLeaveInTheOrderTheyCameThroughGrowthAndWrapAround() {
        OutgoingQueue<String> queue = new OutgoingQueue<>(1000);
        List<String> expected = new ArrayList<>();
        // Wrap the ring first: 10 in, 10 out, so that the growth below starts mid-ring.
        for (int i = 0; i < 10; i++) {
            queue.add("s", "warm", new byte[i], null);
        }
        drain(queue);
        for (int i = 0; i < 100; i++) {
            if (i % 3 == 0) {
                queue.add("s" + i, "Other", new byte[i], null);
                expected.add("s" + i + ":Other:" + i);
            } else {
                assertTrue(queue.addCommit("s" + i, "CommitData", request(i, i)));
                expected.add("s" + i + ":CommitData:" + request(i, i).size());
            }
        }
        assertEquals(expected, drain(queue));
    }

    @Test
    void commitsPastTheLimitAreRefusedAndOtherMessagesAreNot() {
        OutgoingQueue<String> queue = new OutgoingQueue<>(2);
        assertTrue(queue.addCommit("s", "CommitData", request(1, 4)));
        assertTrue(queue.addCommit("s", "CommitData", request(2, 4)));
        assertFalse(queue.addCommit("s", "CommitData", request(3, 4)), "a third commit is refused");
        queue.add("s", "Sync", new byte[0], null);
        OutgoingQueue.Message<String> first = queue.peek();
        queue.release(first);
        assertTrue(queue.addCommit("s", "CommitData", request(4, 4)), "a sent commit frees its place");
        assertEquals(3, drain(queue).size());
    }

    @Test
    void aCommitSlotKeepsItsArrayAndCopiesTheRequest() {
        OutgoingQueue<String> queue = new OutgoingQueue<>(8);
        ScatteredHeapBuffer first = request(7, 100);
        queue.addCommit("s", "CommitData", first);
        OutgoingQueue.Message<String> message = queue.peek();
        byte[] array = message.args;
        byte[] expected = new byte[(int) first.size()];
        first.copyTo(java.lang.foreign.MemorySegment.ofArray(expected), 0);
        first.reset();
        assertArrayEquals(expected, Arrays.copyOf(message.args, message.length), "the request was copied");
        queue.release(message);
        // Around the ring, back to the same slot: a smaller commit reuses its array.
        for (int i = 0; i < 15; i++) {
            queue.add("s", "Other", new byte[1], null);
            queue.release(queue.peek());
        }
        queue.addCommit("s", "CommitData", request(8, 10));
        assertSame(array, queue.peek().args);
    }

    @Test
    void onlyTheOldestIsReleased() {
        OutgoingQueue<String> queue = new OutgoingQueue<>(8);
        queue.add("s", "a", new byte[1], null);
        OutgoingQueue.Message<String> oldest = queue.peek();
        queue.release(oldest);
        queue.add("s", "b", new byte[1], null);
        assertThrows(IllegalStateException.class, () -> queue.release(oldest));
    }

    @Test
    void aWaitingSenderWakesForAMessage() throws Exception {
        OutgoingQueue<String> queue = new OutgoingQueue<>(8);
        assertNull(queue.peek(), "nothing queued");
        List<String> got = new ArrayList<>();
        Thread sender = Thread.ofPlatform().start(() -> {
            try {
                got.add(queue.take().method);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        Await.until("the sender waits", () -> sender.getState() == Thread.State.WAITING);
        queue.add("s", "Sync", new byte[0], null);
        assertTrue(sender.join(java.time.Duration.ofSeconds(10)), "the sender woke");
        assertEquals(List.of("Sync"), got);
    }

    @Test
    void wakeEndsAWaitWithNoMessageEvenOneThatBeginsAfterIt() throws Exception {
        OutgoingQueue<String> queue = new OutgoingQueue<>(8);
        List<Object> got = new ArrayList<>();
        Thread sender = Thread.ofPlatform().start(() -> {
            try {
                got.add(String.valueOf(queue.take()));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        Await.until("the sender waits", () -> sender.getState() == Thread.State.WAITING);
        queue.wake();
        assertTrue(sender.join(java.time.Duration.ofSeconds(10)), "the sender woke");
        assertEquals(List.of("null"), got);
        // A wake before the wait is not lost; it ends one wait only.
        queue.wake();
        assertNull(queue.take());
        queue.add("s", "Sync", new byte[0], null);
        assertEquals("Sync", queue.take().method);
    }
}
