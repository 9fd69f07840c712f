package dev.ffmtrace.jvm;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.sdk.DataSource;
import dev.ffmtrace.tracing.sdk.DataSourceCallbacks;
import dev.ffmtrace.tracing.sdk.InstanceSetup;
import dev.ffmtrace.tracing.sdk.TrackEvent;
import java.time.Duration;
import java.util.concurrent.atomic.LongAdder;

/**
 * The {@code jvm} data source: this JVM's own JFR events, live, in every session that
 * names it, on every backend the SDK was initialized with. Each instance runs a JFR
 * {@code RecordingStream} with the settings its config asks for ({@link JvmConfig}: JFR's
 * "default" configuration restricted to the events {@link JfrMapping} writes, unless the
 * session says otherwise) and maps its events as they are streamed, about once a second.
 * When the session stops, the stream stops, its last events and the allocation heap
 * profile are written, and only then is the instance done: they come before the
 * session's last flush. A JVM that exits while sessions run does the same first, so the
 * service finds them in the shared memory buffer it takes from the gone producer. Nothing is thrown into the application: a stream that cannot
 * start is counted in {@link #failures()} and the instance writes nothing.
 *
 * <pre>{@code
 * Tracing.initialize(TracingOptions.named("my-service").withSystemBackend());
 * JvmDataSource.register();
 * }</pre>
 */
public final class JvmDataSource {
    /** The data source's name, as a session's config names it. */
    public static final String NAME = "jvm";

    private static final LongAdder FAILURES = new LongAdder();
    private static final RunningInstances RUNNING = new RunningInstances();

    private JvmDataSource() {
    }

    /**
     * Registered when first asked for. A backend's thread that sets up an instance while
     * the registering thread is still here waits for it, as any reader of a class being
     * initialized does: the backends call back on threads of their own.
     */
    private static final class Registered {
        static final DataSource<JvmInstance> DATA_SOURCE =
                DataSource.register(DataSourceDescriptor.named(NAME), new Callbacks());
    }

    /** Registers the data source with the SDK, once; later calls return the same. */
    public static DataSource<?> register() {
        return Registered.DATA_SOURCE;
    }

    /**
     * Waits until at least {@code count} sessions run the data source here (their JFR
     * streams started), at most {@code timeout}: for a program that must not run ahead of
     * the session that traces it (the agent's {@code wait=}).
     *
     * @return whether they do
     */
    public static boolean awaitInstances(int count, Duration timeout) throws InterruptedException {
        return RUNNING.await(count, timeout);
    }

    /** Instances whose recording stream could not start, or failed while stopping. */
    public static long failures() {
        return FAILURES.sum();
    }

    private static final class Callbacks implements DataSourceCallbacks<JvmInstance> {
        @Override
        public JvmInstance onSetup(InstanceSetup setup) {
            long realtimeToMonotonicCoarse = Os.clockNanos(Os.CLOCK_REALTIME) - Os.clockNanos(Os.CLOCK_MONOTONIC_COARSE);
            return new JvmInstance(Registered.DATA_SOURCE, setup.index(), JvmConfig.fromDataSourceConfig(setup.config()),
                    ProcessHandle.current().pid(), TrackEvent.processTrack(), realtimeToMonotonicCoarse, FAILURES,
                    RUNNING);
        }

        @Override
        public void onStart(JvmInstance instance) {
            instance.start();
        }

        @Override
        public void onStop(JvmInstance instance, Runnable done) {
            // Stopping waits for the stream's last events, which the stream's thread writes
            // through the SDK: never on the backend's thread.
            Thread.ofPlatform().name("ffmtrace-jvm-stop").daemon().start(() -> instance.stop(done));
        }
    }
}
