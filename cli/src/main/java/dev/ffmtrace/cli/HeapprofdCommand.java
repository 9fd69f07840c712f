package dev.ffmtrace.cli;

import dev.ffmtrace.heapprofd.service.HeapprofdDataSource;
import dev.ffmtrace.heapprofd.service.HeapprofdService;
import dev.ffmtrace.memory.NativeException;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.sdk.Tracing;
import dev.ffmtrace.tracing.sdk.TracingOptions;
import dev.ffmtrace.tracing.service.InvalidConfigException;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import perfetto.protos.DataSourceConfigOuterClass.DataSourceConfig;
import perfetto.protos.HeapprofdConfigOuterClass.HeapprofdConfig;
import perfetto.protos.TraceConfigOuterClass.TraceConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * Runs a native program with the C heapprofd client preloaded, against a session of an
 * in-process service with the {@code android.heapprofd} data source, and writes the trace
 * (its heap profile as ProfilePackets) when the program exits; with {@code --producer-socket},
 * heapprofd is instead the data source of another service (Perfetto's {@code traced},
 * {@code ffmtrace serve}) and profiles into a session its consumer runs. A {@code java} program gets
 * the options that let its JIT-compiled frames be unwound (frame pointers kept) and named
 * (its perf map written at exit); the map is removed once the trace is written.
 */
@Command(name = "heapprofd", mixinStandardHelpOptions = true,
        description = "Run a native program under heapprofd and write its heap profile into a trace file.")
final class HeapprofdCommand implements Callable<Integer> {
    private static final String CLIENT_LIBRARY = "libffmtrace_heapprofd.so";
    /**
     * What a JVM needs for its JIT-compiled frames to be profiled: frame pointers kept, for
     * the walk through them, and its perf map at exit, to name them at the dump.
     */
    private static final List<String> JVM_OPTIONS = List.of("-XX:+PreserveFramePointer",
            "-XX:+UnlockDiagnosticVMOptions", "-XX:+DumpPerfMapAtExit");
    private static final String JVM_OPTIONS_TEXT = "-XX:+PreserveFramePointer -XX:+DumpPerfMapAtExit";
    /** How long the profile waits, after the program exits, for the service to read the rest of its ring. */
    private static final long DRAIN_TIMEOUT_SECONDS = 30;
    /** How long heapprofd may take to join the service in this process and be started by the session. */
    private static final long START_TIMEOUT_SECONDS = 30;
    /** With {@code --producer-socket}: how long to wait for a session to start heapprofd. */
    private static final long SESSION_WAIT_SECONDS = 60;
    /** With {@code --producer-socket}: how soon the command sees the session's stop of heapprofd, or Ctrl-C. */
    private static final long STOP_POLL_MS = 100;

    @Option(names = "--sampling-interval", paramLabel = "BYTES", defaultValue = "4096",
            description = "Mean bytes between samples (1: every allocation); default ${DEFAULT-VALUE}.")
    long samplingInterval;

    @Option(names = "--out", paramLabel = "FILE.pftrace", defaultValue = "heapprofd.pftrace",
            description = "The trace file to write; default ${DEFAULT-VALUE}.")
    Path out;

    @Option(names = "--allow-other-users",
            description = "Profile processes of any user that connect (default: only this user's; the socket's "
                    + "peer credentials are checked, as an abstract socket has no permissions).")
    boolean allowOtherUsers;

    @Option(names = "--no-jvm-options",
            description = "Run a java program as given, without " + JVM_OPTIONS_TEXT + " (its compiled frames are then "
                    + "neither unwound nor named).")
    boolean noJvmOptions;

    @Parameters(arity = "1..*", paramLabel = "PROGRAM ARGS", description = "The program and its arguments, after --.")
    List<String> program;

    @Option(names = "--producer-socket", paramLabel = "SOCKET",
            description = "Profile into a session of the tracing service at this producer socket (Perfetto's traced, "
                    + "or ffmtrace serve; @NAME for an abstract one, HOST:PORT for TCP) that a consumer runs with data "
                    + "source android.heapprofd (perfetto -c CONFIG), instead of a session of this process: the "
                    + "session's heapprofd_config sets the sampling and its consumer writes the trace. The program "
                    + "starts once a session starts heapprofd (waiting up to " + SESSION_WAIT_SECONDS + " s); after "
                    + "it exits, heapprofd stays until the session stops it, or Ctrl-C.")
    String producerSocket;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    /** What the profiled program did. */
    private record Ran(int status, long pid, boolean java) {
    }

    @Override
    public Integer call() throws Exception {
        if (samplingInterval < 1) {
            throw new CliFailure("--sampling-interval: " + samplingInterval + " is not a positive number of bytes",
                    CliFailure.USAGE);
        }
        Path library = CProducerProcess.defaultProgram().resolveSibling(CLIENT_LIBRARY);
        if (!Files.isRegularFile(library)) {
            throw new CliFailure("no " + library + " (the C build makes it: make -C native)", CliFailure.FAILED);
        }
        UnixAddress address = UnixAddress.abstractName("ffmtrace-heapprofd-" + Os.pid() + "-" + System.nanoTime());
        HeapprofdService.Users users = allowOtherUsers ? HeapprofdService.Users.ANY : HeapprofdService.Users.OWN;
        if (producerSocket != null) {
            return profileForService(address, users, library);
        }
        try (TraceOutput output = TraceOutput.open(out, "--out");
             TracingService tracing = new TracingService();
             HeapprofdDataSource heapprofd = HeapprofdDataSource.register(address, users)) {
            if (!Tracing.initialize(TracingOptions.named("heapprofd").withInProcessBackend(tracing))) {
                throw new CliFailure("tracing is initialized already in this process", CliFailure.FAILED);
            }
            try {
                return profile(tracing, heapprofd, output, address, library);
            } finally {
                Tracing.shutdown();
            }
        } catch (NativeException e) {
            throw new CliFailure("cannot set up the profile: " + e.getMessage(), CliFailure.FAILED);
        }
    }

    /** Runs the program under a session of {@code tracing} that starts heapprofd; returns the program's status. */
    private int profile(TracingService tracing, HeapprofdDataSource heapprofd, TraceOutput output, UnixAddress address,
                        Path library) throws IOException, InterruptedException, CliFailure {
        if (!Tracing.awaitRegistrations(Duration.ofSeconds(START_TIMEOUT_SECONDS))) {
            throw new CliFailure("heapprofd did not join the service in this process", CliFailure.FAILED);
        }
        TracingSession session = tracing.startSession(sessionConfig());
        HeapprofdService service = started(heapprofd, START_TIMEOUT_SECONDS);
        Ran ran = run(service, library, address);
        session.stop();
        session.writeTrace(output.stream());
        output.commit();
        session.close();
        cleanUp(ran);
        printTotals(service, "wrote " + out);
        return ran.status();
    }

    /**
     * {@code --producer-socket}: heapprofd as a producer of that service; the program runs
     * once a session started it, and the command ends when the session stops it.
     */
    private int profileForService(UnixAddress address, HeapprofdService.Users users, Path library)
            throws IOException, InterruptedException, CliFailure {
        for (String option : List.of("--out", "--sampling-interval")) {
            if (spec.commandLine().getParseResult().hasMatchedOption(option)) {
                throw new CliFailure(option + " does not apply with --producer-socket: the session's config and its "
                        + "consumer decide", CliFailure.USAGE);
            }
        }
        StreamAddress socket;
        try {
            socket = ProducerConnection.socketAddress(producerSocket);
        } catch (IllegalArgumentException e) {
            throw new CliFailure("--producer-socket " + producerSocket + ": " + e.getMessage(), CliFailure.USAGE);
        }
        try (StopOnSignal signal = new StopOnSignal();
             HeapprofdDataSource heapprofd = HeapprofdDataSource.register(address, users)) {
            if (!Tracing.initialize(TracingOptions.named("ffmtrace-heapprofd").withSystemBackend(socket))) {
                throw new CliFailure("tracing is initialized already in this process", CliFailure.FAILED);
            }
            try {
                System.err.println("ffmtrace heapprofd: data source " + HeapprofdDataSource.NAME + " on " + socket
                        + ": waiting for a session to start it");
                HeapprofdService service = started(heapprofd, SESSION_WAIT_SECONDS);
                Ran ran = run(service, library, address);
                System.err.println("ffmtrace heapprofd: the program exited: waiting for the session to stop "
                        + HeapprofdDataSource.NAME + " (Ctrl-C: stop now)");
                while (heapprofd.service() == service && !signal.awaitStop(STOP_POLL_MS)) {
                    // Each turn waits in awaitStop.
                }
                cleanUp(ran);
                printTotals(service, "the session's consumer writes the trace");
                return ran.status();
            } finally {
                // After Ctrl-C: stops the instance, which writes its last dump, and commits it.
                Tracing.shutdown();
            }
        }
    }

    /** The service a session started heapprofd with, within {@code seconds}; else a failure. */
    private static HeapprofdService started(HeapprofdDataSource heapprofd, long seconds)
            throws InterruptedException, CliFailure {
        HeapprofdService service = heapprofd.awaitService(Duration.ofSeconds(seconds));
        if (service == null) {
            RuntimeException failure = heapprofd.startFailure();
            throw new CliFailure("cannot start the heapprofd service: " + (failure != null ? failure.getMessage()
                    : "no session started it in " + seconds + " s"), CliFailure.FAILED);
        }
        return service;
    }

    /** Runs the program with the client preloaded, then waits until {@code service} read what it wrote. */
    private Ran run(HeapprofdService service, Path library, UnixAddress address)
            throws InterruptedException, CliFailure {
        boolean java = !noJvmOptions && Path.of(program.getFirst()).getFileName().toString().equals("java");
        List<String> command = java ? withJvmOptions(program) : program;
        if (java) {
            System.err.println("ffmtrace heapprofd: java runs with " + JVM_OPTIONS_TEXT
                    + ", so that its compiled frames have names (--no-jvm-options: as given)");
        }
        Process process = start(command, library, address);
        int status;
        try {
            status = process.waitFor();
        } finally {
            // Only if this wait was interrupted: the program is not left running unprofiled.
            process.destroyForcibly();
        }
        // The program has exited; its client's connection reads what is left in its ring.
        service.awaitClientsGone(Duration.ofSeconds(DRAIN_TIMEOUT_SECONDS));
        return new Ran(status, process.pid(), java);
    }

    /** The map the JVM options made the program write: its names are in the profile now. */
    private static void cleanUp(Ran ran) throws IOException {
        if (ran.java()) {
            Files.deleteIfExists(Path.of("/tmp", "perf-" + ran.pid() + ".map"));
        }
    }

    private static void printTotals(HeapprofdService service, String end) {
        HeapprofdService.Stats stats = service.totals();
        System.err.println("ffmtrace heapprofd: " + stats.records() + " records from " + service.clientCount()
                + " process(es), " + stats.unwindingErrors() + " unwinding errors, "
                + service.otherUserClients() + " process(es) of other users refused; " + end);
    }

    private SessionConfig sessionConfig() throws CliFailure {
        HeapprofdConfig heapprofd = HeapprofdConfig.newBuilder().setSamplingIntervalBytes(samplingInterval)
                .addHeaps("libc.malloc").setBlockClient(true).build();
        byte[] config = TraceConfig.newBuilder()
                .addBuffers(TraceConfig.BufferConfig.newBuilder().setSizeKb(65536))
                .addDataSources(TraceConfig.DataSource.newBuilder().setConfig(DataSourceConfig.newBuilder()
                        .setName(HeapprofdDataSource.NAME).setHeapprofdConfig(heapprofd)))
                .build().toByteArray();
        try {
            return SessionConfig.parse(MemorySegment.ofArray(config));
        } catch (InvalidConfigException e) {
            throw new CliFailure("the session's config: " + e.getMessage(), CliFailure.FAILED);
        }
    }

    /** {@code java}'s command line with {@link #JVM_OPTIONS} first: options the user gives later win. */
    private static List<String> withJvmOptions(List<String> command) {
        List<String> withOptions = new ArrayList<>(command.size() + JVM_OPTIONS.size());
        withOptions.add(command.getFirst());
        withOptions.addAll(JVM_OPTIONS);
        withOptions.addAll(command.subList(1, command.size()));
        return withOptions;
    }

    /** Starts the program with the client preloaded, its input and output this process's. */
    private static Process start(List<String> command, Path library, UnixAddress address) throws CliFailure {
        ProcessBuilder builder = new ProcessBuilder(command).inheritIO();
        String preload = System.getenv("LD_PRELOAD");
        builder.environment().put("LD_PRELOAD", preload == null || preload.isEmpty() ? library.toString()
                : library + ":" + preload);
        builder.environment().put("FFMTRACE_HEAPPROFD_SOCKET", "@" + address.name());
        try {
            return builder.start();
        } catch (IOException e) {
            throw new CliFailure("cannot run " + command.getFirst() + ": " + ErrorReporter.reason(e), CliFailure.USAGE);
        }
    }
}
