package dev.ffmtrace.jvm;

import dev.ffmtrace.tracing.sdk.TrackEvent;
import java.time.Duration;

/**
 * The program {@link JvmAgentTest} runs under the agent. It traces nothing itself; it
 * only waits (through the SDK the agent set up) for the session to reach it (its
 * track_event and jvm data sources both started), collects
 * twice and sleeps, says so on stdout, and stays until the session has stopped; or, given
 * {@code exit}, exits at once while the session still runs.
 */
public final class AgentTarget {
    static final int GCS = 2;
    static final long SLEEP_MILLIS = 30;

    private AgentTarget() {
    }

    public static void main(String[] args) throws InterruptedException {
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
        System.out.println("worked");
        System.out.flush();
        if (args.length > 0 && args[0].equals("exit")) {
            return;
        }
        if (!TrackEvent.awaitSessions(0, Duration.ofSeconds(60))) {
            System.exit(4);
        }
    }
}
