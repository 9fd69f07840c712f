package dev.ffmtrace.jvm;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A program whose JVM behaviour is known, for the converter's tests to record with JFR:
 * {@value #GCS} explicit GCs, a thread parked {@value #PARK_MILLIS} ms, a monitor held
 * {@value #HOLD_MILLIS} ms while another thread waits to enter it, a sleep, a hot loop in
 * {@link #hotLoop}, and allocations of {@link KnownAllocation}. Prints how long it held the
 * monitor once the waiter blocked ({@code held-nanos=N}), which the waiter's enter is checked
 * against: a loaded machine's sleep overshoots.
 */
public final class KnownBehaviour {
    static final int GCS = 3;
    static final long PARK_MILLIS = 200;
    static final long HOLD_MILLIS = 150;
    static final long SLEEP_MILLIS = 100;
    /** How long the holder held the monitor once the waiter blocked on it. */
    private static volatile long heldNanos;
    static final long HOT_MILLIS = 1500;
    static final long ALLOCATE_MILLIS = 1500;

    private static final Object MONITOR = new Object();
    /** Keeps the allocations reachable for a while, so they are not optimised away. */
    static final List<KnownAllocation> KEPT = new ArrayList<>();
    static volatile long sink;

    /** The class whose allocations the heap profile must show first: 16 longs, no arrays of its own. */
    static final class KnownAllocation {
        final long a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15;

        KnownAllocation(long seed) {
            a0 = seed; a1 = seed + 1; a2 = seed + 2; a3 = seed + 3; a4 = seed + 4; a5 = seed + 5; a6 = seed + 6;
            a7 = seed + 7; a8 = seed + 8; a9 = seed + 9; a10 = seed + 10; a11 = seed + 11; a12 = seed + 12;
            a13 = seed + 13; a14 = seed + 14; a15 = seed + 15;
        }
    }

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < GCS; i++) {
            System.gc();
        }
        Thread parker = Thread.ofPlatform().name("known-parker").start(
                () -> LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(PARK_MILLIS)));
        parker.join();

        CountDownLatch held = new CountDownLatch(1);
        Thread waiter = Thread.ofPlatform().name("known-waiter").unstarted(() -> {
            synchronized (MONITOR) {
                sink++;
            }
        });
        Thread holder = Thread.ofPlatform().name("known-holder").start(() -> {
            synchronized (MONITOR) {
                held.countDown();
                // The hold starts once the waiter is blocked on the monitor, so that its enter
                // lasts the hold however long its thread took to start on a loaded machine.
                while (waiter.getState() != Thread.State.BLOCKED) {
                    Thread.onSpinWait();
                }
                long start = System.nanoTime();
                sleepQuietly(HOLD_MILLIS);
                heldNanos = System.nanoTime() - start;
            }
        });
        held.await();
        waiter.start();
        holder.join();
        // What the waiter waited, as this program saw it: a loaded machine's sleep overshoots.
        System.out.println("held-nanos=" + heldNanos);
        waiter.join();

        Thread sleeper = Thread.ofPlatform().name("known-sleeper").start(() -> sleepQuietly(SLEEP_MILLIS));
        sleeper.join();

        Thread hot = Thread.ofPlatform().name("known-hot").start(() -> sink += hotLoop(HOT_MILLIS));
        hot.join();

        Thread allocator = Thread.ofPlatform().name("known-allocator").start(KnownBehaviour::allocate);
        allocator.join();
    }

    static long hotLoop(long millis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        long x = 1;
        while (System.nanoTime() < deadline) {
            for (int i = 0; i < 10_000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
        }
        return x;
    }

    static void allocate() {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ALLOCATE_MILLIS);
        while (System.nanoTime() < deadline) {
            KEPT.clear();
            for (int i = 0; i < 5_000; i++) {
                KEPT.add(new KnownAllocation(i));
            }
        }
    }

    private static void sleepQuietly(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
