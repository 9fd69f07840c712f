package dev.ffmtrace.tracing.service;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A session's timed task that the service's timer only starts: each run goes on a virtual
 * thread of its own, so that whatever it waits for (a file nobody reads, a producer that
 * never answers a flush) holds up neither the timer nor any other session's timers. At
 * most one run is under way: one still running when the next is due makes that one skip,
 * as the periodic tasks lose nothing by it (the next run takes what the skipped one would
 * have).
 */
final class OffTimerTask implements Runnable {
    private final String name;
    private final Runnable task;
    private final AtomicBoolean running = new AtomicBoolean();

    OffTimerTask(String name, Runnable task) {
        this.name = name;
        this.task = task;
    }

    @Override
    public void run() {
        if (!running.compareAndSet(false, true)) {
            return;
        }
        Thread.ofVirtual().name(name).start(() -> {
            try {
                task.run();
            } finally {
                running.set(false);
            }
        });
    }
}
