package dev.ffmtrace.bench;

import dev.ffmtrace.tracing.sdk.Tracing;
import dev.ffmtrace.tracing.sdk.TracingOptions;
import dev.ffmtrace.tracing.sdk.TrackEvent;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.trackevent.Category;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The SDK's events from many virtual threads at once: {@value #EVENTS} instants per
 * operation, split evenly over {@code threads} virtual threads started together (1 to
 * 100,000), into one session of an in-process service, as {@link TrackEventFacadeBenchmark}
 * sets it up. The score is per event, thread starts included: with few threads it is the
 * events' cost, with many the starts' share grows and the threads queue for the instance's
 * few writers ({@code InstanceSlot.VIRTUAL_THREAD_WRITERS}), unmounted while they wait.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Benchmark)
public class VirtualThreadEventsBenchmark {
    static final int EVENTS = 1_000_000;
    private static final Category BENCHMARK = new Category("benchmark");

    @Param({"1", "100", "10000", "100000"})
    public int threads;

    private TracingService service;
    private TracingSession session;
    private Runnable task;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        service = new TracingService();
        Tracing.initialize(TracingOptions.named("bench").withInProcessBackend(service));
        TrackEvent.register(BENCHMARK);
        session = service.startSession(TrackEventFacadeBenchmark.config("track_event"));
        if (!TrackEvent.awaitSessions(1, Duration.ofSeconds(30))) {
            throw new IllegalStateException("the session did not start track_event");
        }
        int perThread = EVENTS / threads;
        task = () -> {
            for (int i = 0; i < perThread; i++) {
                TrackEvent.instant(BENCHMARK, "event");
            }
        };
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        Tracing.shutdown();
        session.close();
        service.close();
    }

    @Benchmark
    @OperationsPerInvocation(EVENTS)
    public void instants() {
        try (ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < threads; i++) {
                executor.execute(task);
            }
        }
    }
}
