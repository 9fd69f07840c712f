package dev.ffmtrace.bench;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The program {@link JfrConversionBenchmark} records to get a large recording: pairs of
 * threads handing a token back and forth by park and unpark (each park a
 * {@code jdk.ThreadPark} event when its threshold is 0), for the given number of seconds.
 */
public final class JfrWorkload {
    private JfrWorkload() {
    }

    public static void main(String[] args) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.parseLong(args[0]));
        Thread[] threads = new Thread[4];
        for (int pair = 0; pair < threads.length / 2; pair++) {
            Thread[] both = new Thread[2];
            both[0] = Thread.ofPlatform().name("ping-" + pair).unstarted(() -> bounce(both[1], deadline, true));
            both[1] = Thread.ofPlatform().name("pong-" + pair).unstarted(() -> bounce(both[0], deadline, false));
            threads[2 * pair] = both[0];
            threads[2 * pair + 1] = both[1];
        }
        for (Thread thread : threads) {
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
    }

    /** Unparks the other thread and parks, until the deadline; the first thread serves first. */
    private static void bounce(Thread other, long deadline, boolean first) {
        if (first) {
            LockSupport.unpark(other);
        }
        while (System.nanoTime() < deadline) {
            LockSupport.parkNanos(1_000_000);
            LockSupport.unpark(other);
        }
        LockSupport.unpark(other);
    }
}
