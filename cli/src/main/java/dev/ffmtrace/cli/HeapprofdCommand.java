package dev.ffmtrace.cli;

import dev.ffmtrace.heapprofd.service.HeapprofdDataSource;
import dev.ffmtrace.heapprofd.service.HeapprofdService;
import dev.ffmtrace.memory.NativeException;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.tracing.service.InvalidConfigException;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import perfetto.protos.DataSourceConfigOuterClass.DataSourceConfig;
import perfetto.protos.HeapprofdConfigOuterClass.HeapprofdConfig;
import perfetto.protos.TraceConfigOuterClass.TraceConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * Runs a native program with the C heapprofd client preloaded, against a session of an
 * in-process service with the {@code android.heapprofd} data source, and writes the trace
 * (its heap profile as ProfilePackets) when the program exits.
 */
@Command(name = "heapprofd", mixinStandardHelpOptions = true,
        description = "Run a native program under heapprofd and write its heap profile into a trace file.")
final class HeapprofdCommand implements Callable<Integer> {
    private static final String CLIENT_LIBRARY = "libffmtrace_heapprofd.so";
    /** How long the profile waits, after the program exits, for the service to read the rest of its ring. */
    private static final long DRAIN_TIMEOUT_SECONDS = 30;

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

    @Parameters(arity = "1..*", paramLabel = "PROGRAM ARGS", description = "The program and its arguments, after --.")
    List<String> program;

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
        try (TraceOutput output = TraceOutput.open(out, "--out");
             TracingService tracing = new TracingService();
             HeapprofdDataSource heapprofd = HeapprofdDataSource.register(tracing, address,
                     allowOtherUsers ? HeapprofdService.Users.ANY : HeapprofdService.Users.OWN)) {
            TracingSession session = tracing.startSession(sessionConfig());
            HeapprofdService service = heapprofd.service();
            if (service == null) {
                throw new CliFailure("cannot start the heapprofd service: " + heapprofd.startFailure().getMessage(),
                        CliFailure.FAILED);
            }
            int status = run(library, address);
            // The program has exited; its client's connection reads what is left in its ring.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DRAIN_TIMEOUT_SECONDS);
            while (!service.clientsGone() && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            session.stop();
            session.writeTrace(output.stream());
            output.commit();
            session.close();
            HeapprofdService.Stats stats = service.totals();
            System.err.println("ffmtrace heapprofd: " + stats.records() + " records from " + service.clientCount()
                    + " process(es), " + stats.unwindingErrors() + " unwinding errors, "
                    + service.otherUserClients() + " process(es) of other users refused; wrote " + out);
            return status;
        } catch (NativeException e) {
            throw new CliFailure("cannot set up the profile: " + e.getMessage(), CliFailure.FAILED);
        }
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

    /** Runs the program with the client preloaded, its input and output this process's; its exit status. */
    private int run(Path library, UnixAddress address) throws CliFailure, InterruptedException {
        ProcessBuilder builder = new ProcessBuilder(program).inheritIO();
        String preload = System.getenv("LD_PRELOAD");
        builder.environment().put("LD_PRELOAD", preload == null || preload.isEmpty() ? library.toString()
                : library + ":" + preload);
        builder.environment().put("FFMTRACE_HEAPPROFD_SOCKET", "@" + address.name());
        Process process;
        try {
            process = builder.start();
        } catch (IOException e) {
            throw new CliFailure("cannot run " + program.getFirst() + ": " + ErrorReporter.reason(e), CliFailure.USAGE);
        }
        try {
            return process.waitFor();
        } finally {
            process.destroyForcibly();
        }
    }
}
