package dev.ffmtrace.tracing.sdk.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * {@link LendingPool} alone; its races are in the stress suite's {@code LendingPoolStress}.
 * A borrower that must wait is waited for by its thread state, never by time.
 */
class LendingPoolTest {
    @Test
    void aCapacityBelowOneIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> new LendingPool<>(0, Object::new));
    }

    @Test
    void oneBorrowerInTurnReusesOneObject() throws InterruptedException {
        LendingPool<Object> pool = new LendingPool<>(4, Object::new);
        Object first = pool.borrow();
        pool.giveBack(first);
        for (int i = 0; i < 1000; i++) {
            Object lent = pool.borrow();
            assertSame(first, lent);
            pool.giveBack(lent);
        }
        assertEquals(1, pool.made());
        assertEquals(1, pool.idleCount());
    }

    @Test
    void aBorrowerPastTheCapacityWaitsForTheObjectGivenBack() throws Exception {
        LendingPool<Object> pool = new LendingPool<>(1, Object::new);
        Object lent = pool.borrow();
        CompletableFuture<Object> waiting = new CompletableFuture<>();
        Thread borrower = parkedBorrower(pool, waiting);
        assertFalse(waiting.isDone());

        pool.giveBack(lent);
        assertSame(lent, waiting.get());
        borrower.join();
        assertEquals(1, pool.made());
    }

    @Test
    void aWaitingBorrowerInterruptedTakesNothing() throws Exception {
        LendingPool<Object> pool = new LendingPool<>(1, Object::new);
        Object lent = pool.borrow();
        CompletableFuture<Object> waiting = new CompletableFuture<>();
        Thread borrower = parkedBorrower(pool, waiting);
        borrower.interrupt();
        borrower.join();
        assertTrue(waiting.isCompletedExceptionally());

        pool.giveBack(lent);
        assertSame(lent, pool.borrow(), "the interrupted borrower's wait took no permit and no object");
        assertEquals(1, pool.made());
    }

    @Test
    void aFactoryThatThrowsLeavesItsPlaceToTheNextBorrower() throws InterruptedException {
        AtomicInteger calls = new AtomicInteger();
        LendingPool<Object> pool = new LendingPool<>(1, () -> {
            if (calls.incrementAndGet() == 1) {
                throw new IllegalStateException("first one fails");
            }
            return new Object();
        });
        assertThrows(IllegalStateException.class, pool::borrow);
        assertEquals(0, pool.made());

        // With the permit or the place leaked this borrow would wait forever.
        Object lent = pool.borrow();
        assertEquals(1, pool.made());
        pool.giveBack(lent);
    }

    @Test
    void manyThreadsNeverHoldOneObjectTogetherNorMoreThanTheCapacity() throws InterruptedException {
        int capacity = 3;
        record Lendable(AtomicBoolean held) {
        }
        LendingPool<Lendable> pool = new LendingPool<>(capacity, () -> new Lendable(new AtomicBoolean()));
        AtomicInteger holders = new AtomicInteger();
        AtomicInteger violations = new AtomicInteger();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 16; t++) {
            threads.add(Thread.ofVirtual().start(() -> {
                for (int i = 0; i < 5_000; i++) {
                    Lendable lent;
                    try {
                        lent = pool.borrow();
                    } catch (InterruptedException e) {
                        violations.incrementAndGet();
                        return;
                    }
                    if (!lent.held().compareAndSet(false, true) || holders.incrementAndGet() > capacity) {
                        violations.incrementAndGet();
                    }
                    if (i % 64 == 0) {
                        Thread.yield();
                    }
                    holders.decrementAndGet();
                    lent.held().set(false);
                    pool.giveBack(lent);
                }
            }));
        }
        for (Thread thread : threads) {
            thread.join();
        }
        assertEquals(0, violations.get());
        assertTrue(pool.made() <= capacity, pool.made() + " made");
        assertEquals(pool.made(), pool.idleCount());
    }

    /** A virtual thread borrowing from {@code pool} into {@code lent}, returned once it is parked waiting. */
    private static Thread parkedBorrower(LendingPool<Object> pool, CompletableFuture<Object> lent) {
        Thread borrower = Thread.ofVirtual().start(() -> {
            try {
                lent.complete(pool.borrow());
            } catch (InterruptedException e) {
                lent.completeExceptionally(e);
            }
        });
        awaitParked(borrower);
        return borrower;
    }

    /** Returns once {@code thread} is parked, as a borrower waiting for a permit is. */
    private static void awaitParked(Thread thread) {
        while (thread.getState() != Thread.State.WAITING) {
            LockSupport.parkNanos(100_000);
        }
    }
}
