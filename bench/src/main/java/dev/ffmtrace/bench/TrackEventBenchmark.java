package dev.ffmtrace.bench;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.producer.internal.DataSourceInstance;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.trackevent.Category;
import dev.ffmtrace.tracing.trackevent.InternedName;
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
 * A TrackEvent through the whole in-process stack, as Perfetto's SDK benchmark sets it
 * up: one session with a 1 MiB ring buffer, a 256 KiB SMB of 4 KiB pages with one chunk
 * per page, a drop-on-full writer, and the service moving full chunks into the buffer as
 * they are committed. Per operation, one slice-begin event of category "benchmark" and
 * name "Event", both interned ({@code eventBasic}); the same with one interned integer
 * debug annotation "value" = 42 ({@code eventWithDebugAnnotation}); and the same on a
 * disabled category ({@code eventDisabled}). The writer's default track is the thread's
 * track and its timestamps are deltas on the incremental clock, as in the SDK, so after the
 * first event each packet is 13 bytes plus its 4-byte size: timestamp delta,
 * sequence_flags, track_event {type, category_iids, name_iid}. The slices are never ended,
 * as in the SDK benchmark; the token is consumed by the blackhole.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class TrackEventBenchmark {
    private static final Category BENCHMARK = new Category("benchmark");
    private static final Category DISABLED = new Category("disabled");
    private static final InternedName EVENT = InternedName.of("Event");
    private static final InternedName VALUE = InternedName.of("value");

    /** The SMB of Perfetto's SDK producers, 256 KiB. */
    private static final int SMB_SIZE = 256 * 1024;

    private TracingService service;
    private InProcessProducer producer;
    private TracingSession session;
    private TrackEventWriter writer;
    private Track track;
    /** Not a constant, as a name made at run time would not be. */
    private String stringName = "Event from a string";

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        DISABLED.setEnabled(false);
        service = new TracingService();
        producer = InProcessProducer.connect(service, "bench", SMB_SIZE);
        CompletableFuture<DataSourceInstance> started = producer.register("track_event");
        HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
        config.get().addBuffers().setSizeKb(1024);
        config.get().addDataSources().setConfig().setName("track_event");
        session = service.startSession(SessionConfig.parse(MemorySegment.ofArray(config.toByteArray())));
        track = Track.thread(Track.process((int) ProcessHandle.current().pid(), "bench"), Os.tid(), "bench");
        DataSourceInstance events = InProcessProducer.await(started);
        writer = new TrackEventWriter(new TraceWriterSink(events.newTraceWriter(BufferExhaustedPolicy.DROP),
                events::incrementalStateClears), TrackEventWriter.Config.forThread(track));
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        writer.close();
        producer.close();
        session.close();
        service.close();
    }

    @Benchmark
    public long eventBasic() {
        return writer.beginSlice(BENCHMARK, track, EVENT);
    }

    @Benchmark
    public long eventWithDebugAnnotation() {
        return writer.beginSlice(BENCHMARK, track, EVENT, VALUE, 42);
    }

    /** A slice begun and ended with explicit calls: the baseline of {@link #scopedSlice}. */
    @Benchmark
    public void beginEndSlice() {
        writer.endSlice(track, writer.beginSlice(BENCHMARK, track, EVENT));
    }

    /** The same slice as a try-with-resources scope on the default track: one reused scope object, no allocation. */
    @Benchmark
    public void scopedSlice() {
        try (var _ = writer.slice(BENCHMARK, EVENT)) {
            // The block's end ends the slice.
        }
    }

    /** A name given as a String, interned per writer after its first use. */
    @Benchmark
    public long eventStringName() {
        return writer.beginSlice(BENCHMARK, track, stringName);
    }

    /** The category check alone, in the same harness: {@code eventDisabled} costs the call beyond it. */
    @Benchmark
    public boolean categoryCheckOnly() {
        return DISABLED.isEnabled();
    }

    @Benchmark
    public long eventDisabled() {
        return writer.beginSlice(DISABLED, track, EVENT);
    }

    /** JMH's own loop around a body that does nothing: the floor under every row here. */
    @Benchmark
    public void emptyLoop() {
        // Nothing: the row measures the harness.
    }
}
