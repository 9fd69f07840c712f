package dev.ffmtrace.cli;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Turns SIGINT and SIGTERM into a request to stop early, as Perfetto's command line does on
 * Ctrl-C: the JVM runs this shutdown hook, which tells the recording to stop and waits
 * (up to {@value #FINISH_TIMEOUT_SECONDS} s) until it has written its trace and
 * {@linkplain #close() closed} this; then the JVM exits, with status 128 + the signal.
 */
final class StopOnSignal implements AutoCloseable {
    private static final long FINISH_TIMEOUT_SECONDS = 60;

    private final CountDownLatch stopRequested = new CountDownLatch(1);
    private final CountDownLatch finished = new CountDownLatch(1);
    private final Thread hook = new Thread(this::stopAndWait, "ffmtrace stop on signal");

    StopOnSignal() {
        Runtime.getRuntime().addShutdownHook(hook);
    }

    private void stopAndWait() {
        stopRequested.countDown();
        try {
            finished.await(FINISH_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Waits for a stop request. */
    void awaitStop() throws InterruptedException {
        stopRequested.await();
    }

    /** Waits up to {@code millis} ms for a stop request; returns whether there is one. */
    boolean awaitStop(long millis) throws InterruptedException {
        return stopRequested.await(millis, TimeUnit.MILLISECONDS);
    }

    boolean stopRequested() {
        return stopRequested.getCount() == 0;
    }

    /** The recording is over: a signal from now on exits at once. */
    @Override
    public void close() {
        finished.countDown();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // The JVM is shutting down: the hook is running, and now returns.
        }
    }
}
