package dev.ffmtrace.bench;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.producer.internal.DataSourceInstance;
import dev.ffmtrace.tracing.sdk.Tracing;
import dev.ffmtrace.tracing.sdk.TracingOptions;
import dev.ffmtrace.tracing.sdk.TrackEvent;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.trackevent.Category;
import dev.ffmtrace.tracing.trackevent.TraceWriterSink;
import dev.ffmtrace.tracing.trackevent.Track;
import dev.ffmtrace.tracing.trackevent.TrackEventWriter;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The SDK's TrackEvent facade against a TrackEventWriter used directly, in one session of
 * an in-process service with a 1 MiB ring buffer: a scoped slice named by a String (begin
 * and end) and an instant, each beside its direct baseline, and a slice in a category no
 * session records. Both reach the service as the SDK's in-process backend does, through
 * its producer port with local commits; the direct writer is a producer's of its own,
 * held by the caller. Both drop events when the SMB is full, as Perfetto's SDK does.
 *
 * <p>With {@code -jvmArgsAppend -Djmh.executor=VIRTUAL} JMH runs the benchmark on a
 * virtual thread: every facade event then takes the virtual-thread path, a writer
 * borrowed from the instance's few and given back per event, as an event from a new
 * virtual thread does (a virtual thread keeps no writer of its own).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class TrackEventFacadeBenchmark {
    private static final Category BENCHMARK = new Category("benchmark");
    private static final Category UNRECORDED = new Category("unrecorded", "debug");

    /** The SDK's SMB, as the facade's producer has. */
    private static final int SMB_SIZE = 256 * 1024;

    private TracingService service;
    private InProcessProducer directProducer;
    private TracingSession session;
    private TracingSession directSession;
    private TrackEventWriter direct;
    private Track track;
    /** Not a constant, as a name made at run time would not be. */
    private String name = "Event from a string";

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        service = new TracingService();
        Tracing.initialize(TracingOptions.named("bench").withInProcessBackend(service));
        TrackEvent.register(BENCHMARK, UNRECORDED);
        session = service.startSession(config("track_event"));
        if (!TrackEvent.awaitSessions(1, java.time.Duration.ofSeconds(30))) {
            throw new IllegalStateException("the session did not start track_event");
        }
        directProducer = InProcessProducer.connect(service, "bench-direct", SMB_SIZE);
        CompletableFuture<DataSourceInstance> started = directProducer.register("direct");
        directSession = service.startSession(config("direct"));
        DataSourceInstance events = InProcessProducer.await(started);
        track = Track.thread(TrackEvent.processTrack(), Os.tid(), "bench");
        direct = new TrackEventWriter(new TraceWriterSink(events.newTraceWriter(BufferExhaustedPolicy.DROP),
                events::incrementalStateClears), TrackEventWriter.Config.forThread(track));
    }

    /** A session of a 1 MiB buffer with data source {@code dataSource}, as the SDK rows record into. */
    static SessionConfig config(String dataSource) throws Exception {
        HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
        config.get().addBuffers().setSizeKb(1024);
        config.get().addDataSources().setConfig().setName(dataSource);
        return SessionConfig.parse(MemorySegment.ofArray(config.toByteArray()));
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        direct.close();
        directProducer.close();
        Tracing.shutdown();
        session.close();
        directSession.close();
        service.close();
    }

    @Benchmark
    public void facadeScopedSlice() {
        try (var _ = TrackEvent.slice(BENCHMARK, name)) {
            // The block's end ends the slice.
        }
    }

    /** The baseline of {@link #facadeScopedSlice}: the same slice through a writer held by the caller. */
    @Benchmark
    public void directScopedSlice() {
        try (var _ = direct.slice(BENCHMARK, name)) {
            // The block's end ends the slice.
        }
    }

    @Benchmark
    public void facadeInstant() {
        TrackEvent.instant(BENCHMARK, name);
    }

    /** The baseline of {@link #facadeInstant}. */
    @Benchmark
    public void directInstant() {
        direct.instant(BENCHMARK, track, name);
    }

    /** A category tagged "debug", which a session with no track_event_config does not record. */
    @Benchmark
    public void facadeUnrecorded() {
        try (var _ = TrackEvent.slice(UNRECORDED, name)) {
            // Nothing is written.
        }
    }
}
