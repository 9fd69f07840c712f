package dev.ffmtrace.bench;

import dev.ffmtrace.jvm.JfrMapping;
import dev.ffmtrace.jvm.JvmDataSource;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.sdk.TrackEvent;
import dev.ffmtrace.tracing.sdk.Tracing;
import dev.ffmtrace.tracing.sdk.TracingOptions;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.trackevent.Category;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import jdk.jfr.Configuration;
import jdk.jfr.consumer.RecordingStream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What the live {@code jvm} data source costs an application, against plain JFR with the
 * same settings. Either way the application's requests are TrackEvent slices recorded by
 * a session of an in-process service (8 MiB ring buffer); the {@code backend} is what else
 * runs:
 * <ul>
 *   <li>{@code jfr}: a JFR {@code RecordingStream} with the settings the data source would
 *       use (JFR's {@code settings} configuration restricted to {@link JfrMapping#EVENT_TYPES}),
 *       whose events are consumed and dropped;
 *   <li>{@code jvm}: the {@code jvm} data source in the same session, mapping the same
 *       events into it.
 * </ul>
 * A request is a slice around a little computation ({@link #request}, allocating nothing)
 * or around a copy of its 1 KiB of data ({@link #allocatingRequest}, so that JFR has allocation
 * samples and collections to report).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Benchmark)
public class JvmDataSourceBenchmark {
    private static final Category APP = new Category("app");

    @Param({"jfr", "jvm"})
    public String backend;

    @Param({"default", "profile"})
    public String settings;

    private TracingService service;
    private TracingSession session;
    private RecordingStream plain;

    /** The application thread's own data. */
    @State(Scope.Thread)
    public static class Work {
        final long[] data = new long[128];
    }

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        boolean jvm = backend.equals("jvm");
        if (jvm) {
            JvmDataSource.register();
        }
        TrackEvent.register(APP);
        service = new TracingService();
        Tracing.initialize(TracingOptions.named("bench").withInProcessBackend(service));
        session = service.startSession(config(jvm ? "settings=" + settings : null));
        if (!TrackEvent.awaitSessions(1, Duration.ofSeconds(30))) {
            throw new IllegalStateException("the session did not start track_event");
        }
        if (jvm) {
            if (!JvmDataSource.awaitInstances(1, Duration.ofSeconds(30))) {
                throw new IllegalStateException("the session did not start the jvm data source");
            }
        } else {
            plain = new RecordingStream();
            plain.setSettings(mappedSettings(settings));
            plain.onEvent(event -> { });
            plain.startAsync();
        }
    }

    /** JFR's configuration {@code name}, restricted to the events the mapping writes, as the data source does. */
    private static Map<String, String> mappedSettings(String name) throws Exception {
        Map<String, String> mapped = new HashMap<>();
        Configuration.getConfiguration(name).getSettings().forEach((key, value) -> {
            int hash = key.indexOf('#');
            if (JfrMapping.EVENT_TYPES.contains(hash < 0 ? key : key.substring(0, hash))) {
                mapped.put(key, value);
            }
        });
        return mapped;
    }

    private static SessionConfig config(String jvmConfig) throws Exception {
        HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
        config.get().addBuffers().setSizeKb(8192);
        config.get().addDataSources().setConfig().setName(TrackEvent.DATA_SOURCE_NAME);
        if (jvmConfig != null) {
            var jvm = config.get().addDataSources().setConfig();
            jvm.setName(JvmDataSource.NAME);
            jvm.setLegacyConfig(jvmConfig);
        }
        return SessionConfig.parse(MemorySegment.ofArray(config.toByteArray()));
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        if (plain != null) {
            plain.close();
        }
        session.stop();
        session.close();
        Tracing.shutdown();
        service.close();
    }

    @Benchmark
    public long request(Work work) {
        try (var _ = TrackEvent.slice(APP, "request")) {
            return compute(work.data);
        }
    }

    @Benchmark
    public long allocatingRequest(Work work) {
        try (var _ = TrackEvent.slice(APP, "allocating request")) {
            long[] copy = work.data.clone();
            copy[0] = compute(work.data);
            return copy[0] + copy.length;
        }
    }

    private static long compute(long[] data) {
        long sum = 0;
        for (int i = 0; i < data.length; i++) {
            sum = sum * 31 + data[i] + i;
            data[i] = sum;
        }
        return sum;
    }
}
