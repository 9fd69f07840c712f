package dev.ffmtrace.cli.stress;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.producer.internal.DataSourceInstance;
import dev.ffmtrace.tracing.service.InvalidConfigException;
import dev.ffmtrace.tracing.service.ProducerPort;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

/**
 * One stress run: a service with a RING_BUFFER and a DISCARD buffer (and one for the
 * hostile producer's data source), a session that
 * writes its trace into a file while it runs, Java writers on platform and virtual
 * threads of a producer in this process (joined as the SDK's in-process backend joins),
 * and C stress producer processes connected
 * through Perfetto's producer IPC; with faults, C producers are killed with SIGKILL at
 * random moments and replaced. The run lasts its duration, then as long as its minimums
 * take: each writer's packets, with faults one kill and the hostile peer's first commits, so
 * that what a test of it checks is certain to have happened however slow the machine. At the
 * end the session stops (the C producers write their last packets), and
 * {@link StressVerifier} accounts for every packet in the file.
 *
 * <p>Writers alternate between the two buffers, and between {@code STALL} and
 * {@code DROP} when their chunks run out. With {@link HostileClients}, consumers and
 * producers that misbehave come and go all through the run beside normal consumers.
 */
public final class StressRun {
    public static final String RING_SOURCE = "ffmtrace.stress.ring";
    public static final String DISCARD_SOURCE = "ffmtrace.stress.discard";
    /** The hostile producer's data source, with a buffer of its own: what it floods is its own. */
    public static final String HOSTILE_SOURCE = "ffmtrace.stress.hostile";
    static final int RING_BUFFER = 0;
    static final int DISCARD_BUFFER = 1;
    /** The Java writers' producer number in the packets; C producers count from 1. */
    static final int JAVA_PRODUCER = 0;
    private static final long STOP_TIMEOUT_SECONDS = 20;
    private static final long SOAK_SAMPLE_MILLIS = 1000;
    /** The Java writers' SMB: room for a few dozen writers' chunks. */
    private static final int JAVA_SMB_SIZE = 4 << 20;
    /**
     * How long past its duration the run may go on to meet its minimums (each writer's
     * packets, one kill with faults, the hostile peer's commits); longer is a hang.
     */
    private static final long MINIMUMS_GRACE_SECONDS = 120;
    /** How often the run reads a C producer's ledger while it waits for its minimum. */
    private static final long LEDGER_POLL_MILLIS = 10;
    /** A JVM's resident memory settles within this of its size after warm-up. */
    private static final int SOAK_RSS_GROWTH_PERCENT = 25;
    /** Descriptors and mappings that come and go with a producer being replaced or a thread starting. */
    private static final int SOAK_SLACK = 16;

    /**
     * @param cProducers      C producer processes alive at any time
     * @param cThreads        writer threads in each C producer
     * @param javaThreads     Java writers on platform threads
     * @param virtualThreads  Java writers on virtual threads
     * @param rate            packets per second per writer (0: as fast as it can)
     * @param faults          kill C producers with SIGKILL at random moments, replacing each,
     *                        and run a hostile producer
     * @param cProgram        the C stress producer; needed when {@code cProducers > 0}
     * @param hostileCommand  the command that runs {@code ffmtrace} (the hostile peer is its
     *                        {@code stress-hostile}); with faults, null for no hostile peer
     * @param soak            sample this process's RSS, descriptors and mappings through the
     *                        run and fail if they grow
     * @param trace           where the session writes the trace
     * @param ipcTool         with it ({@code perfetto_ipc_tool}), the run has {@link HostileClients}
     *                        on a consumer port of its service; null for none
     * @param minPackets      the packets each writer writes at least, Java or C (but not of a
     *                        killed process): the run goes on past its duration until they have
     */
    public record Options(int cProducers, int cThreads, int javaThreads, int virtualThreads, Duration duration,
                          StressPacket.Mix mix, long seed, int rate, boolean faults, boolean soak, long ringKb,
                          long discardKb, Path cProgram, List<String> hostileCommand, Path trace, Path ipcTool,
                          long minPackets) {
        public Options {
            Objects.requireNonNull(duration, "duration");
            Objects.requireNonNull(mix, "mix");
            Objects.requireNonNull(trace, "trace");
            if (cProducers < 0 || cThreads < 1 || javaThreads < 0 || virtualThreads < 0 || rate < 0 || minPackets < 0) {
                throw new IllegalArgumentException("counts and rates cannot be negative, C threads at least 1");
            }
            if (cProducers + javaThreads + virtualThreads == 0) {
                throw new IllegalArgumentException("nothing would write: give C producers or Java threads");
            }
            if (cProducers > 0 && cProgram == null) {
                throw new IllegalArgumentException("C producers need the C stress producer program");
            }
        }
    }

    /**
     * What the run did, and the verifier's verdict. {@code hostile} is the hostile peer's
     * summary ({@code H <commits> <rewrites> <resize attempts> <resizes refused>}), empty
     * without one.
     */
    public record Report(StressVerifier.Result result, int javaWriters, int cProcesses, int killed,
                         long serviceViolations, String hostile, ProcessFootprint.Verdict soak, List<String> problems,
                         Duration elapsed, HostileClients.Result hostileClients) {
        /**
         * The verdict: every packet accounted for, every process ended as it should, the
         * sealed SMB never resized, with a soak nothing grew, and with hostile clients every
         * normal consumer's session ended and was read.
         */
        public boolean ok() {
            return result.ok() && problems.isEmpty() && hostileResizesAllRefused() && (soak == null || soak.flat())
                    && (hostileClients == null || hostileClients.ok());
        }

        public boolean hostileResizesAllRefused() {
            String[] fields = hostile.split(" ");
            return hostile.isEmpty() || (fields.length == 5 && fields[3].equals(fields[4]));
        }
    }

    private final Options options;
    private final PrintStream log;
    private final SplittableRandom random;
    private final AtomicBoolean stopWriters = new AtomicBoolean();

    public StressRun(Options options, PrintStream log) {
        this.options = options;
        this.log = log;
        this.random = new SplittableRandom(options.seed());
    }

    public Report run() throws IOException, InterruptedException, InvalidConfigException {
        ProcessFootprint before = options.soak() ? ProcessFootprint.now() : null;
        List<ProcessFootprint> samples = new CopyOnWriteArrayList<>();
        AtomicBoolean sampling = new AtomicBoolean(options.soak());
        Thread sampler = Thread.ofVirtual().name("stress soak sampler").start(() -> {
            while (sampling.get()) {
                samples.add(ProcessFootprint.now());
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(SOAK_SAMPLE_MILLIS));
            }
        });
        long started = System.nanoTime();
        SessionConfig config = SessionConfig.builder()
                .buffer("ring", options.ringKb(), OverwritePolicy.RING_BUFFER)
                .buffer("discard", options.discardKb(), OverwritePolicy.DISCARD)
                .buffer("hostile", 1024, OverwritePolicy.RING_BUFFER)
                .dataSource(RING_SOURCE, "ring")
                .dataSource(DISCARD_SOURCE, "discard")
                .dataSource(HOSTILE_SOURCE, "hostile")
                .flushPeriodMs(1000)
                .writeIntoFile(SessionConfig.MIN_FILE_WRITE_PERIOD_MS * 2, 0)
                .build();
        List<StressVerifier.Writer> writers = new ArrayList<>();
        List<CStressProducer> processes = new ArrayList<>();
        int killed = 0;
        long serviceViolations;
        List<String> problems = new ArrayList<>();
        Process hostile = null;
        CompletableFuture<String> hostileOutput = null;
        CompletableFuture<Void> hostileAttacked = new CompletableFuture<>();
        int javaWriters = options.javaThreads() + options.virtualThreads();
        ProducerPort port = null;
        ProducerConnection javaProducer = null;
        HostileClients clients = null;
        HostileClients.Result clientsResult = null;
        try (TracingService service = new TracingService();
             FileChannel output = FileChannel.open(options.trace(), StandardOpenOption.CREATE,
                     StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
            port = ProducerPort.listen(service, UnixAddress.abstractName(
                    "ffmtrace-stress-" + ProcessHandle.current().pid() + "-" + System.nanoTime()));
            // The Java writers join as the SDK's in-process backend does: a producer
            // connection to the port whose writers commit into the service on their own thread.
            javaProducer = ProducerConnection.connect(ProducerConnection.Options.named("ffmtrace-stress-java")
                    .withSocket(port.address()).withSmbHints(JAVA_SMB_SIZE, 0)
                    .withLocalCommits(service::localCommitTransport));
            List<CompletableFuture<DataSourceInstance>> instances = List.of(new CompletableFuture<>(),
                    new CompletableFuture<>());
            javaProducer.registerDataSource(DataSourceDescriptor.named(RING_SOURCE), instances.get(RING_BUFFER)::complete);
            javaProducer.registerDataSource(DataSourceDescriptor.named(DISCARD_SOURCE),
                    instances.get(DISCARD_BUFFER)::complete);
            if (!javaProducer.awaitConnected(Duration.ofSeconds(STOP_TIMEOUT_SECONDS))
                    || !await(javaProducer.sync(), "the Java producer's registrations")) {
                throw new IOException("the service did not take the Java producer's registrations");
            }
            TracingSession session = service.startSession(config, output);
            DataSourceInstance[] sources = {await(instances.get(RING_BUFFER), "the ring data source's start"),
                    await(instances.get(DISCARD_BUFFER), "the discard data source's start")};
            AtomicLongArray javaLedger = new AtomicLongArray(javaWriters);
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < javaWriters; i++) {
                int index = i;
                int buffer = i % 2;
                BufferExhaustedPolicy policy = (i / 2) % 2 == 0 ? BufferExhaustedPolicy.STALL : BufferExhaustedPolicy.DROP;
                TraceWriter<TracePacket> writer = sources[buffer].newTraceWriter(policy);
                Runnable loop = () -> writeLoop(writer, index, javaLedger);
                threads.add(i < options.javaThreads()
                        ? Thread.ofPlatform().name("stress writer " + i).start(loop)
                        : Thread.ofVirtual().name("stress writer " + i).start(loop));
            }
            int nextProducer = 1;
            for (int i = 0; i < options.cProducers(); i++) {
                processes.add(startC(port, nextProducer++));
            }
            if (options.faults() && options.hostileCommand() != null) {
                List<String> command = new ArrayList<>(options.hostileCommand());
                command.addAll(List.of("stress-hostile", port.address().toString(),
                        "--seed", Long.toString(options.seed())));
                hostile = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
                hostile.getOutputStream().close();
                hostileOutput = readHostile(hostile.getInputStream(), hostileAttacked);
                log.printf("stress: hostile producer (pid %d) rewrites its SMB and commits garbage%n", hostile.pid());
            }
            if (options.ipcTool() != null) {
                clients = HostileClients.start(service, port.address(), options.ipcTool());
                log.println("stress: hostile clients on a consumer port: deaf producers and consumers, a crowd,"
                        + " and normal sessions that must all end");
            }
            long deadline = started + options.duration().toNanos();
            long graceEnd = deadline + TimeUnit.SECONDS.toNanos(MINIMUMS_GRACE_SECONDS);
            boolean killing = options.faults() && options.cProducers() > 0;
            // With faults, one C producer at least is killed, however late its fault falls.
            while (System.nanoTime() < deadline || (killing && killed == 0)) {
                long left = deadline - System.nanoTime();
                long pause = killing ? Math.min(Math.max(left, 0), nextFaultDelayNanos()) : left;
                TimeUnit.NANOSECONDS.sleep(Math.max(0, pause));
                if (killing && (System.nanoTime() < deadline || killed == 0)) {
                    CStressProducer victim = pickLive(processes);
                    if (victim == null) {
                        // Every C producer has ended on its own: its failure is reported below.
                        break;
                    }
                    victim.kill();
                    killed++;
                    processes.add(startC(port, nextProducer++));
                }
            }
            awaitMinimums(processes, hostile == null ? null : hostileAttacked, graceEnd, problems);
            if (clients != null) {
                clientsResult = clients.finish();
            }
            sampling.set(false);
            stopWriters.set(true);
            for (Thread thread : threads) {
                thread.join();
            }
            session.stop();
            if (!session.completion().isDone()) {
                session.completion().orTimeout(STOP_TIMEOUT_SECONDS, TimeUnit.SECONDS).join();
            }
            serviceViolations = port.violations() + port.abiViolations();
            javaProducer.close();
            // The C producers exit when their service hangs up.
            port.close();
            for (CStressProducer process : processes) {
                process.awaitExit();
            }
            if (hostile != null && !hostile.waitFor(STOP_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                problems.add("the hostile producer did not end when its service hung up");
                hostile.destroyForcibly();
            } else if (hostile != null && hostile.exitValue() != 0) {
                problems.add("the hostile producer exited with status " + hostile.exitValue());
            }
            for (CStressProducer process : processes) {
                String failure = process.failure();
                if (failure != null) {
                    problems.add(failure);
                }
            }
            for (int i = 0; i < javaWriters; i++) {
                writers.add(new StressVerifier.Writer(JAVA_PRODUCER, i, i % 2, javaLedger.get(i), false));
            }
            for (CStressProducer process : processes) {
                writers.addAll(process.writers());
            }
            session.close();
        } finally {
            if (clients != null) {
                clients.close();
            }
            if (javaProducer != null) {
                javaProducer.close();
            }
            if (port != null) {
                port.close();
            }
            for (CStressProducer process : processes) {
                process.close();
            }
            if (hostile != null) {
                hostile.destroyForcibly();
            }
        }
        sampling.set(false);
        sampler.join();
        ProcessFootprint.Verdict soak = options.soak()
                ? ProcessFootprint.judge(before, samples, ProcessFootprint.now(), SOAK_RSS_GROWTH_PERCENT, SOAK_SLACK)
                : null;
        StressVerifier.Result result = StressVerifier.verify(options.trace(), writers,
                hostile == null ? Set.of() : Set.of((int) hostile.pid()));
        String hostileSummary = hostileOutput == null ? "" : hostileOutput.join().strip();
        if (hostile != null && hostileSummary.isEmpty()) {
            hostileSummary = "H 0 0 0 0 (the hostile producer reported nothing, exit " + hostile.exitValue() + ")";
        }
        return new Report(result, javaWriters, processes.size(), killed, serviceViolations, hostileSummary, soak,
                List.copyOf(problems), Duration.ofNanos(System.nanoTime() - started), clientsResult);
    }

    /** What {@code future} completes with, waited for at most the stop timeout. */
    private static <T> T await(CompletableFuture<T> future, String what) throws IOException, InterruptedException {
        try {
            return future.get(STOP_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException e) {
            throw new IOException(what + " did not come within " + STOP_TIMEOUT_SECONDS + " s", e);
        }
    }

    /**
     * Waits, at most until {@code graceEnd}, for the hostile peer to report its commits handled
     * and for every C writer of a live process to reach the minimum packets; what does not
     * come goes into {@code problems}.
     */
    private void awaitMinimums(List<CStressProducer> processes, CompletableFuture<Void> hostileAttacked,
                               long graceEnd, List<String> problems) throws IOException, InterruptedException {
        if (hostileAttacked != null) {
            try {
                hostileAttacked.get(Math.max(0, graceEnd - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (TimeoutException | ExecutionException e) {
                problems.add("the hostile producer did not have " + HostilePeer.MIN_COMMITS
                        + " commits handled within " + MINIMUMS_GRACE_SECONDS + " s of the run's end");
            }
        }
        for (CStressProducer process : processes) {
            if (!process.awaitPackets(options.minPackets(), graceEnd, LEDGER_POLL_MILLIS)) {
                problems.add(process + " did not write " + options.minPackets() + " packets per writer within "
                        + MINIMUMS_GRACE_SECONDS + " s of the run's end");
            }
        }
    }

    /**
     * Drains the hostile peer's output: completes {@code attacked} at its
     * {@link HostilePeer#ATTACKED} line, and returns the other lines.
     */
    private static CompletableFuture<String> readHostile(InputStream stream, CompletableFuture<Void> attacked) {
        CompletableFuture<String> text = new CompletableFuture<>();
        Thread.ofVirtual().name("stress hostile output").start(() -> {
            StringBuilder rest = new StringBuilder();
            try (BufferedReader lines = new BufferedReader(new InputStreamReader(stream, StandardCharsets.US_ASCII))) {
                for (String line = lines.readLine(); line != null; line = lines.readLine()) {
                    if (line.equals(HostilePeer.ATTACKED)) {
                        attacked.complete(null);
                    } else {
                        rest.append(line).append('\n');
                    }
                }
            } catch (IOException e) {
                // A pipe closed under a killed peer: what was read is what it said.
            }
            text.complete(rest.toString());
        });
        return text;
    }

    private void writeLoop(TraceWriter<TracePacket> writer, int index, AtomicLongArray ledger) {
        StressPacket.Generator generator = new StressPacket.Generator(JAVA_PRODUCER, index, options.mix(),
                options.seed());
        long start = System.nanoTime();
        long counter = 0;
        try (writer) {
            while (!stopWriters.get() || counter < options.minPackets()) {
                pace(start, counter);
                generator.write(writer.newTracePacket(), counter, Os.clockNanos(Os.CLOCK_BOOTTIME), false);
                writer.finishTracePacket();
                ledger.lazySet(index, ++counter);
            }
            generator.write(writer.newTracePacket(), counter, Os.clockNanos(Os.CLOCK_BOOTTIME), true);
            writer.finishTracePacket();
            ledger.set(index, ++counter);
        }
    }

    /** Sleeps until packet {@code counter} is due at the run's rate. */
    private void pace(long start, long counter) {
        if (options.rate() == 0) {
            return;
        }
        long due = start + counter * 1_000_000_000L / options.rate();
        long early = due - System.nanoTime();
        if (early > 0) {
            LockSupport.parkNanos(early);
        }
    }

    /** Faults come on average twice per C producer over the run. */
    private long nextFaultDelayNanos() {
        long mean = Math.max(TimeUnit.MILLISECONDS.toNanos(200), options.duration().toNanos() / (2L * options.cProducers() + 1));
        return (long) (-Math.log(1 - random.nextDouble()) * mean);
    }

    private CStressProducer pickLive(List<CStressProducer> processes) {
        List<CStressProducer> live = processes.stream().filter(CStressProducer::isAlive).toList();
        return live.isEmpty() ? null : live.get(random.nextInt(live.size()));
    }

    private CStressProducer startC(ProducerPort port, int producer) throws IOException {
        int buffer = producer % 2 == 1 ? RING_BUFFER : DISCARD_BUFFER;
        String policy = (producer / 2) % 2 == 0 ? "stall" : "drop";
        return CStressProducer.start(options.cProgram(), port.address(), producer, buffer,
                buffer == RING_BUFFER ? RING_SOURCE : DISCARD_SOURCE, options.cThreads(), options.rate(),
                options.mix(), options.seed(), policy, log);
    }
}
