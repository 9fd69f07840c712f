package dev.ffmtrace.jvm;

import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.sdk.TrackEvent;
import dev.ffmtrace.tracing.sdk.Tracing;
import dev.ffmtrace.tracing.sdk.TracingOptions;
import java.lang.instrument.Instrumentation;
import java.time.Duration;

/**
 * Traces a JVM with no change to its code: {@code java -javaagent:ffmtrace-jvm-agent.jar
 * -jar app.jar} joins the system's tracing service (Perfetto's {@code traced} or
 * {@code ffmtrace serve}, found as Perfetto's producers find it: PERFETTO_PRODUCER_SOCK_NAME,
 * else /run/perfetto/traced-producer.sock) and registers the {@code jvm} and
 * {@code track_event} data sources, so that {@code perfetto -c jvm.cfg} records the JVM
 * and whatever TrackEvents the application writes.
 *
 * <p>Options, comma-separated after the jar ({@code -javaagent:ffmtrace-jvm-agent.jar=name=api,wait=2000}):
 * {@code name=NAME}, the producer's name (by default the process's: its main class or
 * jar); {@code socket=NAME}, the service's producer socket in Perfetto's form (a path, or
 * {@code @name} for an abstract one; by default Perfetto's); {@code wait=MILLIS}, how long the program waits before its {@code main} for a
 * session to start the {@code jvm} data source (by default 0: a session that starts later
 * sees the JVM from then on). An application that initializes the SDK itself keeps its own
 * backends; the data sources join them. Nothing is thrown into the application: a
 * failure is one line on stderr.
 */
public final class JvmAgent {
    private JvmAgent() {
    }

    /** Loaded with {@code -javaagent}. */
    public static void premain(String args, Instrumentation instrumentation) {
        start(args);
    }

    /** Loaded into a running JVM through the Attach API. */
    public static void agentmain(String args, Instrumentation instrumentation) {
        start(args);
    }

    private static void start(String args) {
        try {
            String name = JfrConverter.processName(System.getProperty("sun.java.command", ""));
            String socket = null;
            long waitMillis = 0;
            for (String option : args == null ? new String[0] : args.split(",")) {
                if (option.startsWith("name=") && option.length() > "name=".length()) {
                    name = option.substring("name=".length());
                } else if (option.startsWith("socket=") && option.length() > "socket=".length()) {
                    socket = option.substring("socket=".length());
                } else if (option.startsWith("wait=")) {
                    waitMillis = Long.parseLong(option.substring("wait=".length()));
                } else if (!option.isBlank()) {
                    System.err.println("ffmtrace agent: ignoring option " + option
                            + " (name=NAME, socket=SOCKET, wait=MILLIS)");
                }
            }
            TracingOptions options = TracingOptions.named(name);
            Tracing.initialize(socket == null ? options.withSystemBackend()
                    : options.withSystemBackend(ProducerConnection.socketAddress(socket)));
            JvmDataSource.register();
            TrackEvent.register();
            if (waitMillis > 0 && !JvmDataSource.awaitInstances(1, Duration.ofMillis(waitMillis))) {
                System.err.println("ffmtrace agent: no session started the jvm data source within " + waitMillis
                        + " ms; going on");
            }
        } catch (RuntimeException | LinkageError e) {
            System.err.println("ffmtrace agent: not tracing this JVM: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
