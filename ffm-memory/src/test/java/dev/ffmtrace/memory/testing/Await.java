package dev.ffmtrace.memory.testing;

import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Waits for a condition that no event announces (what /proc shows of another process, a
 * count another thread keeps): checked every few milliseconds until it holds. The deadline
 * is a hang detector, a minute, far above any wait a test expects: reaching it fails the
 * test with what was awaited and the state last seen.
 */
public final class Await {
    private static final long DEADLINE_SECONDS = 60;
    private static final long POLL_MILLIS = 5;

    private Await() {
    }

    /** Waits until {@code condition} holds; {@code state} describes what was seen, for the failure. */
    public static void until(String what, BooleanSupplier condition, Supplier<String> state) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(what + ": not within " + DEADLINE_SECONDS + " s; last seen " + state.get());
            }
            Thread.sleep(POLL_MILLIS);
        }
    }
}
