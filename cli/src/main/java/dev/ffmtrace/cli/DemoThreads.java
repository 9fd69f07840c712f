package dev.ffmtrace.cli;

import java.util.ArrayList;
import java.util.List;

/**
 * The demo's worker threads, each running a {@link DemoWorkload}. They are started ahead
 * of any session, so that a limit on threads fails the command at once and a session's
 * stop finds them however soon it comes; they make their first request once told to
 * {@linkplain #go() go} (a session started track_event), and each makes one at least
 * before it sees the {@linkplain #stop() stop}.
 */
final class DemoThreads {
    private final DemoWorkload.Shared shared = new DemoWorkload.Shared();
    /** Guarded by this: the threads started. */
    private final List<Thread> workers = new ArrayList<>();

    /**
     * Starts {@code count} threads; one that cannot be started is a one-line failure, and
     * those started are stopped by {@link #stop}.
     */
    synchronized void start(int count) throws CliFailure {
        for (int i = 0; i < count; i++) {
            try {
                workers.add(Thread.ofPlatform().name("demo worker " + i).start(new DemoWorkload(i, shared)));
            } catch (OutOfMemoryError e) {
                throw new CliFailure("cannot start demo thread " + (i + 1) + " of " + count + ": " + e.getMessage(),
                        CliFailure.FAILED);
            }
        }
    }

    /** Lets the threads make their requests. */
    void go() {
        shared.go().countDown();
    }

    /** Stops the threads, each after its request at least (written nowhere if no session records), and waits for them. */
    void stop() throws InterruptedException {
        List<Thread> started;
        synchronized (this) {
            shared.stop().set(true);
            started = List.copyOf(workers);
        }
        shared.go().countDown();
        for (Thread worker : started) {
            worker.join();
        }
    }

    /** The requests the threads made so far. */
    long requests() {
        return shared.requests().sum();
    }
}
