package dev.ffmtrace.memory.testing;

import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The one way a test waits for a condition that no event announces (what /proc shows of
 * another process, a count another thread keeps, bytes reaching a file): checked every
 * few milliseconds until it holds. The deadline is a hang detector, a minute, far above
 * any wait a test expects: reaching it fails the test with what was awaited and the
 * state last seen. A test that can wait on an event (a latch, a future, the producer's
 * {@code sync()}) waits on that instead; nothing here proves that something did not happen.
 */
public final class Await {
    private static final long DEADLINE_SECONDS = 60;
    private static final long POLL_MILLIS = 5;

    private Await() {
    }

    /** A condition that may need I/O to check. */
    @FunctionalInterface
    public interface Condition {
        boolean holds() throws Exception;
    }

    /** Waits until {@code condition} holds; {@code state} describes what was seen, for the failure. */
    public static void until(String what, Condition condition, Supplier<String> state) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS);
        while (!check(what, condition)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(what + ": not within " + DEADLINE_SECONDS + " s; last seen " + state.get());
            }
            Thread.sleep(POLL_MILLIS);
        }
    }

    /** Waits until {@code condition} holds. */
    public static void until(String what, Condition condition) throws InterruptedException {
        until(what, condition, () -> "(no state recorded)");
    }

    /** Waits until {@code condition} holds; a failure names the line that waited. */
    public static void until(Condition condition) throws InterruptedException {
        StackTraceElement caller = StackWalker.getInstance()
                .walk(frames -> frames.skip(1).findFirst().orElseThrow().toStackTraceElement());
        until("the condition at " + caller.getFileName() + ":" + caller.getLineNumber(), condition);
    }

    private static boolean check(String what, Condition condition) {
        try {
            return condition.holds();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(what + ": interrupted", e);
        } catch (Exception e) {
            throw new AssertionError(what + ": checking failed", e);
        }
    }
}
