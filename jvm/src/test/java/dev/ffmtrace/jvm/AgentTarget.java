package dev.ffmtrace.jvm;

import dev.ffmtrace.tracing.sdk.TrackEvent;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The program {@link JvmAgentTest} runs under the agent. It traces nothing itself; it
 * only waits (through the SDK the agent set up) for the session to reach it (its
 * track_event and jvm data sources both started), collects
 * twice, sleeps and allocates, says so on stdout, and stays until the test writes
 * {@code exit} on its stdin (once the session has stopped); or, given {@code exit}, exits
 * at once while the session still runs.
 */
public final class AgentTarget {
    static final int GCS = 2;
    static final long SLEEP_MILLIS = 30;
    /**
     * How long it allocates at least. JFR samples allocations at most 150 times a second,
     * in windows of 20 ms, so a program that allocates little while the session runs may
     * leave no sample at all: this spans several windows, with allocations in each.
     */
    static final long ALLOCATE_MILLIS = 200;
    /** Allocations of at least this many, whatever the time. */
    static final int ALLOCATIONS = 64;
    /** Keeps the latest allocation reachable, so it is not optimised away. */
    static volatile Allocated[] kept;

    /** The class whose arrays the heap profile must show: arrays of 128 K references, each allocated outside a TLAB. */
    static final class Allocated {
    }

    private AgentTarget() {
    }

    public static void main(String[] args) throws InterruptedException, IOException {
        // The jvm data source's JFR stream too, not only track_event's session: the
        // collections below are JFR events, lost if they come before its recording starts.
        if (!TrackEvent.awaitSessions(1, Duration.ofSeconds(60))
                || !JvmDataSource.awaitInstances(1, Duration.ofSeconds(60))) {
            System.exit(3);
        }
        for (int i = 0; i < GCS; i++) {
            System.gc();
        }
        Thread.sleep(SLEEP_MILLIS);
        long deadline = System.nanoTime() + ALLOCATE_MILLIS * 1_000_000;
        for (int i = 0; i < ALLOCATIONS || System.nanoTime() < deadline; i++) {
            kept = new Allocated[128 * 1024];
        }
        System.out.println("worked");
        System.out.flush();
        if (args.length > 0 && args[0].equals("exit")) {
            return;
        }
        // Stays until the test, which has stopped the session and read its trace, says so:
        // a program that exits while the session runs races JFR's exit hook (docs/jvm.md).
        if (!"exit".equals(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine())) {
            System.exit(4);
        }
        // For the test's failure messages: a stream that could not start or stop says so here.
        System.err.println("jvm data source failures: " + JvmDataSource.failures());
    }
}
