package dev.ffmtrace.tracing.service;

import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.producer.internal.DataSourceHandler;
import dev.ffmtrace.tracing.producer.internal.DataSourceInstance;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.trackevent.Category;
import dev.ffmtrace.tracing.trackevent.InternedName;
import dev.ffmtrace.tracing.trackevent.TraceWriterSink;
import dev.ffmtrace.tracing.trackevent.Track;
import dev.ffmtrace.tracing.trackevent.TrackEventWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.stream.IntStream;

/**
 * Runs a {@link ProducerPort}'s commit path hot before a daemon serves its first producer.
 *
 * <p>A producer built with Perfetto's SDK gets its chunks back only as fast as the
 * service moves them out of its SMB, and its writers drop packets (the SDK's default
 * {@code BufferExhaustedPolicy::kDrop}) once the SMB is full. A JVM that has just
 * started runs that path interpreted, then in profiling C1 code, until the JIT has seen
 * enough of it: several times slower per chunk than once compiled, which is slower
 * than an SDK app at full rate writes chunks. {@code traced}, compiled ahead of time,
 * has no such phase. So the daemon writes a trace of its own first, in Perfetto's shape
 * (small TrackEvent packets, slices nested across chunk ends, so patches too, from two
 * writers at once), through
 * the code real producers reach: a {@link ProducerConnection} on a private abstract
 * socket, a {@link ProducerPort} and a session of a {@link TracingService} of its own,
 * all closed before {@link #run} returns. Nothing of it is left in the caller's service.
 *
 * <p>It must take every branch an SDK app's traffic takes: one the JIT has never seen
 * taken is compiled as a trap, and the first SDK commit to take it throws the method
 * back to the interpreter while the app writes at full rate (seen as JFR deoptimizations
 * of {@code Producer.applyPatches} and {@code TraceBufferV2.compareChunkIds} when its
 * commits carried no patches). So do the requests that start a session, whose decoders
 * the commits share: the writers decode them among their commits
 * ({@link ControlRequestShapes}).
 */
public final class CommitPathWarmUp {
    /**
     * Rounds a warm-up runs at most ({@link #runUntilSettled}): on a 2-core VM a JVM with
     * C2 settled after 9 to 37 rounds (4 to 9 s), the last ones about 100 ms each, and now
     * and then not within 40; with C1 only (the {@code serve} daemon's) after 4 to 6 (1 s).
     */
    public static final int MAX_ROUNDS = 40;
    /**
     * Iterations of a round: about 3,400 commits, a third of them of part-filled chunks,
     * and 1,300 to 1,500 patches (more or fewer as the commits and the packets' ends fall).
     */
    public static final int DEFAULT_ITERATIONS = 20_000;
    /** Rounds {@link #runUntilSettled} runs at least, settled or not, where it may run that many. */
    static final int MIN_ROUNDS = 4;
    /** A round is quiet when the JIT compiled for at most this percentage of the round's time. */
    static final int QUIET_PERCENT = 10;
    /** Quiet rounds in a row that settle the JIT: a compilation a round started may finish in the next. */
    static final int QUIET_ROUNDS = 2;
    /** Writer threads, each writing its share of the iterations, at once as an SDK app's threads do. */
    private static final int THREADS = 2;
    /**
     * Iterations per commit in the first half of a writer's iterations: part-filled chunks.
     * In the second half its chunks fill, and packets cross their ends with sizes open:
     * commits, then patches once the packets end.
     */
    private static final int COMMIT_EVERY = 4;
    /** Iterations per writer. */
    private static final int WRITER_EVERY = 1_000;
    /**
     * Iterations per decoding of the control requests an SDK app and {@code perfetto} send
     * ({@link ControlRequestShapes}): often enough that the JIT profiles their branches
     * in the decoders before it compiles them for the commits.
     */
    private static final int CONTROL_EVERY = 16;
    private static final String DATA_SOURCE = "ffmtrace.warm-up";
    private static final Category CATEGORY = new Category("warm-up");
    private static final InternedName FRAME = InternedName.of("frame");
    /** Names written as strings, as the SDK writes a {@code DynamicString}. */
    private static final String[] STEPS = IntStream.range(0, 16).mapToObj(i -> "step " + i)
            .toArray(String[]::new);
    private static final InternedName INDEX = InternedName.of("i");
    private static final InternedName TICK = InternedName.of("tick");
    private static final InternedName DETAIL = InternedName.of("detail");
    private static final String DETAIL_TEXT = "warm-up ".repeat(32);
    /** The longest the trace of its own may take; a service that stalls longer serves cold rather than not at all. */
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    /**
     * What a warm-up moved: chunks taken out of its producer's SMB by commits, patches
     * applied to them, and what its service refused or lost (both 0 when the commit path
     * works).
     */
    public record Result(long chunksMoved, long patchesApplied, long violations, long eventsDiscarded) {
        /** The counts of both. */
        public Result plus(Result other) {
            return new Result(chunksMoved + other.chunksMoved, patchesApplied + other.patchesApplied,
                    violations + other.violations, eventsDiscarded + other.eventsDiscarded);
        }
    }

    private CommitPathWarmUp() {
    }

    /**
     * Rounds of {@link #run(int)}, each on a service, producer port, producer and session of
     * its own (so the paths that set those up run hot too), until the JIT has settled on
     * them: {@link #QUIET_ROUNDS} rounds in a row in which it compiled for at most
     * {@link #QUIET_PERCENT}% of the round's time, after {@link #MIN_ROUNDS} rounds at least
     * and {@code maxRounds} at most. A fixed count was not enough: after ten rounds the JIT
     * still spent 250 to 900 ms compiling per round, and compiled the commit path's last
     * methods in C2 (15 to 45 ms each, a core of this machine's two) while an SDK app's
     * first burst came in (which is why the daemon runs C1 only: docs/daemon.md). A JVM
     * that does not report its compilation time runs
     * {@link #MIN_ROUNDS} and is not called settled.
     *
     * @throws IllegalArgumentException if {@code maxRounds} or {@code iterationsPerRound} is negative
     * @throws InterruptedException if interrupted while a round is written
     */
    public static Rounds runUntilSettled(int maxRounds, int iterationsPerRound) throws InterruptedException {
        return runUntilSettled(maxRounds, iterationsPerRound, JitActivity::compiledMillis);
    }

    /** {@link #runUntilSettled(int, int)} reading the JIT's compilation time from {@code compiledMillis}. */
    static Rounds runUntilSettled(int maxRounds, int iterationsPerRound, LongSupplier compiledMillis)
            throws InterruptedException {
        if (maxRounds < 0 || iterationsPerRound < 0) {
            throw new IllegalArgumentException("rounds " + maxRounds + " or iterations " + iterationsPerRound + " < 0");
        }
        Result total = new Result(0, 0, 0, 0);
        int rounds = 0;
        int quietInARow = 0;
        long compiled = compiledMillis.getAsLong();
        boolean known = compiled != JitActivity.UNKNOWN;
        while (rounds < maxRounds && (rounds < MIN_ROUNDS || known && quietInARow < QUIET_ROUNDS)) {
            long start = System.nanoTime();
            total = total.plus(run(iterationsPerRound));
            rounds++;
            long roundMillis = (System.nanoTime() - start) / 1_000_000;
            long compiledBefore = compiled;
            compiled = compiledMillis.getAsLong();
            known = known && compiled != JitActivity.UNKNOWN;
            quietInARow = known && (compiled - compiledBefore) * 100 <= roundMillis * QUIET_PERCENT ? quietInARow + 1 : 0;
        }
        return new Rounds(total, rounds, quietInARow >= QUIET_ROUNDS);
    }

    /** What {@link #runUntilSettled} did: the rounds' counts summed, how many rounds, and whether the JIT settled. */
    public record Rounds(Result counts, int rounds, boolean jitSettled) {
    }

    /**
     * Writes {@code iterations} iterations (a slice, a nested one, a counter value and an
     * instant each) through a producer port of a service of its own, then closes them.
     *
     * @throws IllegalArgumentException if {@code iterations} is negative
     * @throws InterruptedException if interrupted while the trace is written
     */
    public static Result run(int iterations) throws InterruptedException {
        if (iterations < 0) {
            throw new IllegalArgumentException("iterations " + iterations + " < 0");
        }
        UnixAddress address = UnixAddress.abstractName(
                "ffmtrace-warm-up-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
        Writer writer = new Writer(iterations);
        Result result;
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address);
             TracingSession session = service.startSession(sessionConfig());
             ProducerConnection connection = ProducerConnection.connect(
                     ProducerConnection.Options.named("ffmtrace-warm-up").withSocket(address))) {
            connection.registerDataSource(DataSourceDescriptor.named(DATA_SOURCE), writer);
            writer.done.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            session.stop();
            result = new Result(port.chunksMoved(), session.stats().getFirst().patchesSucceeded(),
                    port.violations() + port.abiViolations(), writer.discarded.get());
        }
        // Closing the connection closed a writer still waiting for a chunk: its thread ends.
        writer.join();
        return result;
    }

    private static SessionConfig sessionConfig() {
        try {
            // Small enough to wrap many times: overwriting is on the path too.
            return SessionConfig.builder().buffer(1024, OverwritePolicy.RING_BUFFER).dataSource(DATA_SOURCE).build();
        } catch (InvalidConfigException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Writes the trace on threads of its own once the service starts the data source. */
    private static final class Writer implements DataSourceHandler {
        final CountDownLatch done = new CountDownLatch(THREADS);
        final AtomicLong discarded = new AtomicLong();
        private final int iterations;

        Writer(int iterations) {
            this.iterations = iterations;
        }

        /** The threads writing, once started; guarded by this. */
        private final List<Thread> threads = new ArrayList<>();

        @Override
        public synchronized void onStart(DataSourceInstance instance) {
            if (threads.isEmpty()) {
                for (int t = 0; t < THREADS; t++) {
                    int share = iterations / THREADS + (t < iterations % THREADS ? 1 : 0);
                    threads.add(Thread.ofPlatform().daemon().name("ffmtrace-warm-up")
                            .start(() -> write(instance, share)));
                }
            }
        }

        void join() throws InterruptedException {
            List<Thread> started;
            synchronized (this) {
                started = List.copyOf(threads);
            }
            for (Thread thread : started) {
                thread.join();
            }
        }

        private void write(DataSourceInstance instance, int iterations) {
            Track thread = Track.thread((int) ProcessHandle.current().pid(), Thread.currentThread().threadId(),
                    "ffmtrace-warm-up");
            Track counter = Track.counter(thread, "warm-up counter");
            // STALL: the writer waits for the service instead of dropping, so every
            // iteration goes through the commit path. A new writer (a new sequence in the
            // buffer) every WRITER_EVERY iterations: the JIT sees that branch taken too, and
            // an SDK app's writers do not make it recompile the path.
            try {
                long discardedEvents = 0;
                for (int i = 0; i < iterations && instance.isRunning(); ) {
                    TraceWriterSink sink = new TraceWriterSink(
                            instance.newTraceWriter(BufferExhaustedPolicy.STALL), instance::incrementalStateClears);
                    try (TrackEventWriter events = new TrackEventWriter(sink, TrackEventWriter.Config.forThread(thread))) {
                        for (int end = Math.min(iterations, i + WRITER_EVERY); i < end && instance.isRunning(); i++) {
                            boolean wholeChunks = i % WRITER_EVERY >= WRITER_EVERY / 2;
                            // With whole chunks, a long annotation makes nearly every packet that
                            // crosses a chunk's end cross it inside its TrackEvent: one patch a chunk.
                            long frame = wholeChunks ? events.beginSlice(CATEGORY, thread, FRAME, DETAIL, DETAIL_TEXT)
                                    : events.beginSlice(CATEGORY, thread, FRAME, INDEX, i);
                            long step = events.beginSlice(CATEGORY, thread, STEPS[i % STEPS.length]);
                            events.counter(counter, i);
                            events.instant(CATEGORY, thread, TICK);
                            events.endSlice(thread, step);
                            events.endSlice(thread, frame);
                            if (i % CONTROL_EVERY == 0) {
                                ControlRequestShapes.decodeEach();
                            }
                            if (!wholeChunks && i % COMMIT_EVERY == COMMIT_EVERY - 1) {
                                // A commit of a part-filled chunk: the JIT compiles a method fully
                                // after thousands of calls, and the per-commit ones get one per commit.
                                events.flush();
                            }
                        }
                        discardedEvents += events.discardedEvents();
                    }
                }
                discarded.addAndGet(discardedEvents);
            } finally {
                done.countDown();
            }
        }
    }
}
