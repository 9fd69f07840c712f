package dev.ffmtrace.cli;

import com.google.protobuf.TextFormat;
import dev.ffmtrace.heapprofd.service.HeapprofdDataSource;
import dev.ffmtrace.jvm.JvmDataSource;
import dev.ffmtrace.memory.NativeException;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.tracing.buffer.TraceBufferStats;
import dev.ffmtrace.tracing.sdk.InstanceSetup;
import dev.ffmtrace.tracing.sdk.TrackEvent;
import dev.ffmtrace.tracing.sdk.Tracing;
import dev.ffmtrace.tracing.sdk.TracingOptions;
import dev.ffmtrace.tracing.service.DataSourceWarning;
import dev.ffmtrace.tracing.service.InvalidConfigException;
import dev.ffmtrace.tracing.service.ProducerPort;
import dev.ffmtrace.tracing.service.SessionClone;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.service.TriggerConfig;
import dev.ffmtrace.tracing.service.TriggerHit;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import perfetto.protos.TraceConfigOuterClass.TraceConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Runs a tracing session from a TraceConfig with the demo producer's threads writing
 * TrackEvent slices, instants, flows and counters, and, with {@code --c-producer}, a C
 * producer process writing into an SMB of its own, and, with {@code --producer-socket},
 * producers of other processes, whose triggers a CLONE_SNAPSHOT session is cloned on into
 * {@code OUT.0}, {@code OUT.1}, ... as Perfetto's command line does; then writes the trace
 * file. With {@code --service}, the session runs on another tracing service instead
 * ({@link ServiceRecording}).
 */
@Command(name = "record", mixinStandardHelpOptions = true,
        description = "Record a trace as the TraceConfig says: with the demo producers in this process, or on a "
                + "tracing service (--service).")
final class RecordCommand implements Callable<Integer> {
    /** How long a session records when its config sets no duration_ms. */
    static final long DEFAULT_DURATION_MS = 2000;
    /** How often progress is printed when the config sets no flush_period_ms. */
    private static final long DEFAULT_PROGRESS_PERIOD_MS = 250;
    /** The demo producer's name, and the shared memory it asks for. */
    private static final String DEMO_PRODUCER = "ffmtrace-demo";
    private static final int DEMO_SMB_SIZE = 4 << 20;
    /** How long the demo producer may take to join the service in this process (milliseconds when all is well). */
    private static final long REGISTRATION_TIMEOUT_SECONDS = 10;
    /** How soon the command sees that the service stopped the session, or a signal. */
    private static final long STOP_POLL_MS = 50;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Option(names = "--config", required = true, paramLabel = "FILE",
            description = "TraceConfig in text format (.pbtxt, .txt) or binary (anything else).")
    Path config;

    @Option(names = "--out", required = true, paramLabel = "FILE.pftrace", description = "The trace file to write.")
    Path out;

    @Option(names = "--threads", defaultValue = "4", description = "Demo producer threads (default ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--snapshot", paramLabel = "FILE.pftrace",
            description = "Halfway through (or at the stop, if it comes first), also write a snapshot of the running "
                    + "session here (cloned buffers).")
    Path snapshot;

    @Option(names = "--c-producer", arity = "0..1", fallbackValue = "", paramLabel = "PROGRAM",
            description = "Also run a C producer process writing TrackEvents into an SMB of its own "
                    + "(PROGRAM: the one of the native build, unless given).")
    String cProducer;

    @Option(names = "--service", paramLabel = "SOCKET",
            description = "Run the session on the tracing service at this consumer socket (ffmtrace serve, or "
                    + "Perfetto's traced; @NAME for the abstract namespace) instead of in this process with the demo "
                    + "producers.")
    String service;

    @Option(names = "--producer-socket", paramLabel = "ADDRESS",
            description = "Also serve producers of other processes at this socket (a path, or @NAME for the abstract "
                    + "namespace): they write into the session and send its triggers. A CLONE_SNAPSHOT config is "
                    + "cloned on each trigger into OUT.0, OUT.1, ...")
    String producerSocket;

    /** The config as read, for a service that gets it whole. */
    private byte[] configBytes;

    @Option(names = "--heapprofd-socket", paramLabel = "NAME",
            description = "With an android.heapprofd data source in the config: the abstract socket its clients "
                    + "connect to (default ffmtrace-heapprofd-PID).")
    String heapprofdSocket;

    @Override
    public Integer call() throws IOException, InterruptedException, CliFailure {
        SessionConfig session = readSession();
        if (service != null) {
            if (snapshot != null || cProducer != null || threadsGiven() || producerSocket != null) {
                throw new CliFailure("--service runs the session on another service: --snapshot, --c-producer, "
                        + "--threads and --producer-socket do not apply", CliFailure.USAGE);
            }
            return ServiceRecording.record(service, session, configBytes, out);
        }
        if (session.triggerConfig().mode() == TriggerConfig.Mode.CLONE_SNAPSHOT && producerSocket == null) {
            throw new CliFailure("--config " + config + ": trigger_config needs producers that can activate triggers:"
                    + " let them connect (--producer-socket ADDRESS)", CliFailure.USAGE);
        }
        if (session.triggerConfig() != TriggerConfig.NONE
                && session.triggerConfig().mode() != TriggerConfig.Mode.CLONE_SNAPSHOT) {
            throw new CliFailure("--config " + config + ": trigger_config needs producers that can activate triggers:"
                    + " record it on a tracing service (--service SOCKET)", CliFailure.USAGE);
        }
        if (threads < 1) {
            throw new CliFailure("--threads must be at least 1", CliFailure.USAGE);
        }
        if (cProducer != null && !names(session, CProducerProcess.DATA_SOURCE)) {
            throw new CliFailure("--c-producer: the config does not start data source \"" + CProducerProcess.DATA_SOURCE
                    + "\", which the C producer writes", CliFailure.USAGE);
        }
        // The signal hook comes after the outputs: a FIFO's open waits for a reader, and a signal then just exits.
        try (TraceOutput output = TraceOutput.open(out, "--out");
             TraceOutput snapshotOutput = snapshot == null ? null : TraceOutput.open(snapshot, "--snapshot");
             StopOnSignal signal = new StopOnSignal();
             TracingService service = new TracingService();
             ProducerPort port = producerPort(service);
             HeapprofdDataSource heapprofd = heapprofd(session)) {
            if (port != null) {
                System.out.println("producers connect at " + port.address());
            }
            if (heapprofd != null) {
                String name = heapprofd.address().name();
                System.out.println("heapprofd: clients connect at @" + name + " (LD_PRELOAD="
                        + CProducerProcess.defaultProgram().resolveSibling("libffmtrace_heapprofd.so")
                        + " FFMTRACE_HEAPPROFD_SOCKET=@" + name + ")");
            }
            int status = record(session, service, heapprofd, signal, output, snapshotOutput);
            System.out.println("open " + out.toAbsolutePath() + " at https://ui.perfetto.dev (Open trace file)");
            return status;
        }
    }

    /** The producer socket of {@code --producer-socket}; null without it. */
    private ProducerPort producerPort(TracingService service) throws CliFailure {
        if (producerSocket == null) {
            return null;
        }
        try {
            return ProducerPort.listen(service, UnixAddress.parse(producerSocket));
        } catch (NativeException | IllegalArgumentException | UncheckedIOException e) {
            throw new CliFailure("--producer-socket " + producerSocket + ": cannot listen: " + e.getMessage(),
                    CliFailure.FAILED);
        }
    }

    /**
     * heapprofd's data source, registered before the session starts, when the config names
     * it; null otherwise. Its clients are programs run with the C client preloaded and the
     * socket in {@code FFMTRACE_HEAPPROFD_SOCKET}, or Java clients of that address.
     */
    private HeapprofdDataSource heapprofd(SessionConfig session) {
        if (!names(session, HeapprofdDataSource.NAME)) {
            return null;
        }
        String name = heapprofdSocket != null ? heapprofdSocket : "ffmtrace-heapprofd-" + Os.pid();
        return HeapprofdDataSource.register(UnixAddress.abstractName(name));
    }

    private SessionConfig readSession() throws CliFailure {
        if (Files.isDirectory(config)) {
            throw new CliFailure("--config " + config + ": is a directory", CliFailure.USAGE);
        }
        try {
            configBytes = readConfig();
            return SessionConfig.parse(MemorySegment.ofArray(configBytes));
        } catch (TextFormat.ParseException e) {
            // The message starts with the line and column when the parser knows them.
            throw new CliFailure(config + (e.getLine() >= 0 ? ":" : ": ") + e.getMessage(), CliFailure.USAGE);
        } catch (InvalidConfigException e) {
            throw new CliFailure(config + ": invalid TraceConfig: " + e.getMessage(), CliFailure.USAGE);
        } catch (IOException e) {
            throw new CliFailure("--config " + config + ": " + ErrorReporter.reason(e), CliFailure.USAGE);
        }
    }

    /**
     * Joins the demo producer to {@code service}, through the SDK's in-process backend, and
     * runs the session ({@link #runSession}); its threads, its observer of the session's
     * stop and the SDK are gone when this returns.
     */
    private int record(SessionConfig session, TracingService service, HeapprofdDataSource heapprofd,
                       StopOnSignal signal, TraceOutput output, TraceOutput snapshotOutput)
            throws IOException, InterruptedException, CliFailure {
        Snapshot halfway = new Snapshot(snapshotOutput);
        DemoThreads demo = new DemoThreads();
        DemoSessions observer = new DemoSessions(demo, halfway);
        DemoWorkload.registerCategories();
        DemoCounters.register();
        TrackEvent.addSessionObserver(observer);
        try {
            if (!Tracing.initialize(TracingOptions.named(DEMO_PRODUCER).withInProcessBackend(service)
                    .withSmbSize(DEMO_SMB_SIZE))) {
                throw new CliFailure("tracing is initialized already in this process", CliFailure.FAILED);
            }
            // This JVM's own timeline (JFR's events) when the config asks for it, beside the demo's slices.
            if (names(session, JvmDataSource.NAME)) {
                JvmDataSource.register();
            }
            if (!Tracing.awaitRegistrations(Duration.ofSeconds(REGISTRATION_TIMEOUT_SECONDS))) {
                String refusal = Tracing.inProcessRefusal();
                throw new CliFailure(refusal != null
                        ? "cannot set up the shared memory of the demo producer: " + refusal
                        : "the demo producer did not join the service in this process in "
                        + REGISTRATION_TIMEOUT_SECONDS + " s", CliFailure.FAILED);
            }
            // The workers (waiting for a session to start them) and the stop's observer are in place before the
            // session starts: the service may stop it at any moment after, and its stop must find them.
            if (names(session, TrackEvent.DATA_SOURCE_NAME)) {
                demo.start(threads);
            }
            return runSession(session, service, heapprofd, signal, output, halfway);
        } finally {
            Tracing.shutdown();
            TrackEvent.removeSessionObserver(observer);
            halfway.cancel();
            demo.stop();
        }
    }

    /**
     * Runs the session as its config says, the service keeping its time (duration, flush,
     * incremental state and file write periods); this only starts it, prints progress,
     * takes the snapshot halfway (or at the stop, if that comes first), writes the clones
     * a CLONE_SNAPSHOT session's triggers ask for, stops it early on a signal or after
     * {@value #DEFAULT_DURATION_MS} ms when the config sets no duration, and writes what the
     * service did not write into the file already.
     */
    private int runSession(SessionConfig session, TracingService service, HeapprofdDataSource heapprofd,
                           StopOnSignal signal, TraceOutput output, Snapshot halfway)
            throws IOException, InterruptedException, CliFailure {
        // A CLONE_SNAPSHOT session records until its trigger_timeout_ms.
        long duration = session.effectiveDurationMs() > 0 ? session.effectiveDurationMs() : DEFAULT_DURATION_MS;
        long progressPeriod = session.flushPeriodMs() > 0 ? session.flushPeriodMs() : DEFAULT_PROGRESS_PERIOD_MS;
        TraceStream file = output.stream();
        Clones clones = new Clones();
        CProducerProcess cProcess;
        try {
            cProcess = cProducer == null ? null : CProducerProcess.start(
                    cProducer.isEmpty() ? CProducerProcess.defaultProgram() : Path.of(cProducer), service);
        } catch (CProducerProcess.StartException e) {
            throw new CliFailure(e.getMessage(), CliFailure.USAGE);
        }
        int status = 0;
        try (cProcess) {
            TracingSession tracing;
            try {
                tracing = service.startSession(session, session.writeIntoFile() ? Channels.newChannel(file) : null);
            } catch (NativeException e) {
                throw new CliFailure("cannot set up the shared memory of the session: " + e.getMessage(),
                        CliFailure.FAILED);
            }
            halfway.sessionStarted(tracing);
            tracing.onCloneTrigger(clones::reported);
            if (output.isStream()) {
                // A FIFO or device gets the first readback now, so one that refuses writes fails before recording.
                tracing.writeTrace(file);
                file.flush();
            }
            for (DataSourceWarning warning : tracing.warnings()) {
                System.err.println("ffmtrace record: warning: " + warning.message());
            }
            // Its clients connect once the session started it, which its backend hears a moment later.
            if (heapprofd != null && tracing.isStarted()
                    && heapprofd.awaitService(Duration.ofSeconds(REGISTRATION_TIMEOUT_SECONDS)) == null) {
                RuntimeException failure = heapprofd.startFailure();
                System.err.println("ffmtrace record: warning: heapprofd did not start: " + (failure != null
                        ? failure.getMessage() : "not within " + REGISTRATION_TIMEOUT_SECONDS + " s"));
            }
            boolean events = names(session, TrackEvent.DATA_SOURCE_NAME);
            if (!events || !names(session, DemoCounters.NAME)) {
                System.out.println("note: the config does not start \"" + (events ? DemoCounters.NAME
                        : TrackEvent.DATA_SOURCE_NAME) + "\", so the demo writes less");
            }
            System.out.printf("recording %d ms with %d threads into %s%n", duration, threads, out);
            if (cProcess != null) {
                System.out.printf("  c producer pid %d writes into its own SMB%n", cProcess.pid());
            }
            if (session.triggerConfig().mode() == TriggerConfig.Mode.CLONE_SNAPSHOT) {
                System.out.printf("  each clone trigger writes a clone into %s.0, %s.1, ...%n", out, out);
            }
            long start = System.nanoTime();
            long lastProgressMs = 0;
            while (!tracing.isStopped()) {
                // Short waits: the service may stop the session at any moment.
                if (signal.awaitStop(Math.min(progressPeriod, STOP_POLL_MS))) {
                    System.out.println("  stopping early on a signal: writing the trace so far");
                    tracing.stop();
                    break;
                }
                clones.write(tracing);
                long elapsedMs = (System.nanoTime() - start) / 1_000_000;
                if (elapsedMs >= duration / 2) {
                    halfway.take();
                }
                if (session.effectiveDurationMs() == 0 && elapsedMs >= duration) {
                    tracing.stop();
                }
                if (elapsedMs - lastProgressMs < progressPeriod || tracing.isStopped()) {
                    continue;
                }
                lastProgressMs = elapsedMs;
                System.out.printf("  %5.1f s: %,d bytes written to the buffers%s%n", (System.nanoTime() - start) / 1e9,
                        tracing.stats().stream().mapToLong(TraceBufferStats::bytesWritten).sum(),
                        cProcess == null ? "" : String.format("; c producer: %,d chunks", cProcess.chunksMoved()));
            }
            awaitStopped(tracing);
            // The session's stop took the snapshot, stopped the workers and the C producer, and took their last
            // chunks; without track_event to stop, the snapshot is taken now.
            status = Math.max(halfway.take(), clones.write(tracing));
            CProducerProcess.Result cResult = cProcess == null ? null : cProcess.stop();
            if (!session.writeIntoFile()) {
                tracing.writeTrace(file);
            }
            output.commit();
            printSummary(session, tracing.stats(), file);
            status = Math.max(status, cProcess == null ? 0 : printCProducerSummary(cProcess, cResult));
            tracing.close();
        }
        return status;
    }

    /** Whether the config starts data source {@code name}. */
    private static boolean names(SessionConfig session, String name) {
        return session.dataSources().stream().anyMatch(source -> source.name().equals(name));
    }

    /**
     * Hears the demo's track_event instances: the first start lets the threads go; each stop
     * is held, on a thread of its own, until the snapshot is taken (if the stop comes before
     * halfway) and the threads have ended, each after one request at least.
     */
    private static final class DemoSessions implements TrackEvent.SessionObserver {
        private final DemoThreads demo;
        private final Snapshot halfway;

        DemoSessions(DemoThreads demo, Snapshot halfway) {
            this.demo = demo;
            this.halfway = halfway;
        }

        @Override
        public void onStart(InstanceSetup instance) {
            demo.go();
        }

        @Override
        public void onStop(TrackEvent.SessionStop stop) {
            Runnable done = stop.handleStopAsynchronously();
            Thread.ofPlatform().name("demo stop").start(() -> {
                try {
                    halfway.takeAtStop();
                    demo.stop();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    done.run();
                }
            });
        }
    }

    /** Waits for the stop to complete; the service's failure to write into the file is the command's. */
    private static void awaitStopped(TracingSession tracing) throws IOException, InterruptedException {
        try {
            tracing.completion().get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            throw new IOException(e.getCause());
        }
    }

    /** The {@code --snapshot}, written once: halfway, or at the stop if it comes first; not after a failure. */
    private final class Snapshot {
        private final TraceOutput output;
        private TracingSession tracing;
        private boolean done;
        private int status;

        Snapshot(TraceOutput output) {
            this.output = output;
            this.done = output == null;
        }

        synchronized void sessionStarted(TracingSession tracing) {
            this.tracing = tracing;
            notifyAll();
        }

        /** Writes the snapshot if the session started and it is not written yet; returns the status it left. */
        synchronized int take() {
            if (!done && tracing != null) {
                done = true;
                status = writeSnapshot(tracing, output);
            }
            return status;
        }

        /** {@link #take}, from the session's stop, which may come before {@code startSession} has returned it. */
        synchronized void takeAtStop() throws InterruptedException {
            while (!done && tracing == null) {
                wait();
            }
            take();
        }

        /** No snapshot from now on: the recording failed, or is over. */
        synchronized void cancel() {
            done = true;
            notifyAll();
        }
    }

    /**
     * A CLONE_SNAPSHOT session's clones: each trigger the service reports (on its timer) is
     * queued, and the command's thread writes its clone into the next of {@code OUT.0},
     * {@code OUT.1}, ..., Perfetto's command line's names. A clone that cannot be written
     * is a line on stderr and status 1 for the command, while the recording goes on.
     */
    private final class Clones {
        private final BlockingQueue<TriggerHit> reported = new LinkedBlockingQueue<>();
        private int written;
        private int status;

        void reported(TriggerHit hit) {
            reported.add(hit);
        }

        /** Writes a clone for each trigger reported since the last call; returns the status they all left. */
        int write(TracingSession tracing) {
            for (TriggerHit hit; (hit = reported.poll()) != null; ) {
                status = Math.max(status, writeClone(tracing, hit, Path.of(out + "." + written++)));
            }
            return status;
        }
    }

    /**
     * Writes the clone for {@code hit} into {@code path}, opened before the session is
     * cloned as Perfetto's command line opens it; the producers flush first, as Perfetto's
     * CloneSession has them, unless the stop took their last chunks already.
     */
    private static int writeClone(TracingSession tracing, TriggerHit hit, Path path) {
        try (TraceOutput output = TraceOutput.open(path, "--out")) {
            if (!tracing.isStopped()) {
                tracing.flush();
            }
            try (SessionClone clone = tracing.cloneSession(hit)) {
                clone.write(Channels.newChannel(output.stream()));
            }
            output.commit();
            System.out.printf("  clone for trigger \"%s\" of %s: %,d packets written to %s%n", hit.name(),
                    hit.producerName(), output.stream().packets(), path);
            return 0;
        } catch (CliFailure e) {
            System.err.println("ffmtrace record: " + e.getMessage() + " (the recording goes on)");
        } catch (IOException e) {
            System.err.println("ffmtrace record: " + ErrorReporter.describe(e) + " (the recording goes on)");
        }
        return CliFailure.FAILED;
    }

    /**
     * Writes the snapshot; a failure is a line on stderr and status 1 for the command, while
     * the recording goes on and still writes its trace.
     */
    private int writeSnapshot(TracingSession tracing, TraceOutput snapshotOutput) {
        try (snapshotOutput) {
            tracing.writeSnapshot(snapshotOutput.stream());
            snapshotOutput.commit();
            System.out.printf("  snapshot of %,d packets written to %s%n", snapshotOutput.stream().packets(), snapshot);
            return 0;
        } catch (IOException e) {
            System.err.println("ffmtrace record: " + ErrorReporter.describe(e) + " (the recording goes on)");
            return CliFailure.FAILED;
        }
    }

    private boolean threadsGiven() {
        return spec.commandLine().getParseResult().hasMatchedOption("--threads");
    }

    private byte[] readConfig() throws IOException {
        String fileName = config.getFileName().toString();
        if (fileName.endsWith(".pbtxt") || fileName.endsWith(".txt")) {
            TraceConfig.Builder builder = TraceConfig.newBuilder();
            TextFormat.merge(Files.readString(config, StandardCharsets.UTF_8), builder);
            return builder.build().toByteArray();
        }
        return Files.readAllBytes(config);
    }

    private void printSummary(SessionConfig session, List<TraceBufferStats> stats, TraceStream file) {
        System.out.printf("wrote %,d packets, %,d bytes to %s%n", file.packets(), file.bytes(), out);
        for (int i = 0; i < stats.size(); i++) {
            TraceBufferStats s = stats.get(i);
            System.out.printf("  buffer %s (%s, %,d KiB): %,d bytes / %,d chunks written, %,d chunks overwritten, "
                            + "%,d discarded, %,d bytes read, %,d packet losses by writers%n",
                    session.buffers().get(i).describe(), session.buffers().get(i).overwritePolicy(), s.bufferSize() / 1024,
                    s.bytesWritten(), s.chunksWritten(), s.chunksOverwritten(), s.chunksDiscarded(), s.bytesRead(),
                    s.traceWriterPacketLoss());
        }
    }

    /** Prints how the C producer did; returns the command's status: 1 if it failed. */
    private static int printCProducerSummary(CProducerProcess cProcess, CProducerProcess.Result result) {
        String written = result.packets() < 0 ? "reported no counts"
                : String.format("%,d packets written, %,d iterations dropped (SMB full)", result.packets(), result.dropped());
        System.out.printf("  c producer pid %d: %s, %,d chunks moved%s%n", cProcess.pid(), written, cProcess.chunksMoved(),
                cProcess.abiViolations() == 0 ? "" : String.format(", %,d ABI violations", cProcess.abiViolations()));
        if (result.killed()) {
            System.err.println("ffmtrace record: the C producer (pid " + cProcess.pid() + ") did not stop in time and was killed");
            return 1;
        }
        if (result.exitStatus() != 0) {
            System.err.println("ffmtrace record: the C producer (pid " + cProcess.pid() + ") exited with status "
                    + result.exitStatus());
            return 1;
        }
        return 0;
    }
}
