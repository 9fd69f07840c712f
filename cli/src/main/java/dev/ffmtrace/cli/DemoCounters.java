package dev.ffmtrace.cli;

import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.sdk.DataSource;
import dev.ffmtrace.tracing.sdk.DataSourceCallbacks;
import dev.ffmtrace.tracing.sdk.InstanceSetup;
import dev.ffmtrace.tracing.sdk.TrackEvent;
import dev.ffmtrace.tracing.trackevent.Track;
import dev.ffmtrace.tracing.trackevent.TrackEventWriter;

/**
 * The demo's second data source, {@value #NAME}, written through the SDK's
 * {@link DataSource} API rather than the TrackEvent facade: this JVM's heap, in use and
 * committed, sampled each time the service flushes and once more at the stop, as
 * Perfetto's polled data sources (process stats, say) sample. Its instances write from the
 * backend's connection thread, into the buffer their session's config names.
 */
final class DemoCounters implements DataSourceCallbacks<Integer> {
    static final String NAME = "counters";
    private static final DataSource<Integer> SOURCE =
            DataSource.register(DataSourceDescriptor.named(NAME), new DemoCounters());
    private static final Track HEAP = Track.counter(TrackEvent.processTrack(), "JVM heap in use (bytes)");
    private static final Track COMMITTED = Track.counter(TrackEvent.processTrack(), "JVM heap committed (bytes)");

    private DemoCounters() {
    }

    /** Registers the data source, once per process: call before {@code Tracing.initialize}. */
    static void register() {
        // Initializing this class registered it.
    }

    @Override
    public Integer onSetup(InstanceSetup setup) {
        return setup.index();
    }

    @Override
    public void onFlush(Integer index) {
        sample(index);
    }

    @Override
    public void onStop(Integer index, Runnable done) {
        sample(index);
        done.run();
    }

    private static void sample(int index) {
        Runtime runtime = Runtime.getRuntime();
        long committed = runtime.totalMemory();
        long inUse = committed - runtime.freeMemory();
        SOURCE.traceInstance(index, context -> {
            TrackEventWriter writer = context.sequenceState(TrackEventWriter::new);
            writer.counter(HEAP, inUse);
            writer.counter(COMMITTED, committed);
            context.flush();
        });
    }
}
