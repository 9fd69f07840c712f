package dev.ffmtrace.jvm;

import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The {@code jvm} instances whose streams run: what {@link JvmDataSource#awaitInstances}
 * waits on, and what a JVM that exits while sessions still run ends first. On exit, each
 * stream is stopped and its last events and heap profile written into the shared memory
 * buffer, which the service takes when the producer's connection goes; otherwise the
 * events JFR had not yet handed over (up to a second's) would die with the process.
 */
final class RunningInstances {
    private final Set<JvmInstance> running = new LinkedHashSet<>();
    private boolean exitHookAdded;

    synchronized void started(JvmInstance instance) {
        running.add(instance);
        if (!exitHookAdded) {
            exitHookAdded = true;
            Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().name("ffmtrace-jvm-exit").unstarted(this::endAll));
        }
        notifyAll();
    }

    synchronized void stopped(JvmInstance instance) {
        running.remove(instance);
        notifyAll();
    }

    /** Waits until at least {@code count} instances run, at most {@code timeout}; whether they do. */
    synchronized boolean await(int count, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (running.size() < count) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            wait(Math.max(1, left / 1_000_000));
        }
        return true;
    }

    private void endAll() {
        List<JvmInstance> instances;
        synchronized (this) {
            instances = List.copyOf(running);
        }
        for (JvmInstance instance : instances) {
            instance.endStream();
        }
    }
}
