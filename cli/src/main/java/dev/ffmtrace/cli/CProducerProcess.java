package dev.ffmtrace.cli;

import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.tracing.service.ProducerPort;
import dev.ffmtrace.tracing.service.TracingService;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The C producer process of {@code record --c-producer} ({@code native/src/c_producer.c}):
 * a producer in another process that speaks Perfetto's producer IPC to a
 * {@link ProducerPort} of the service on a private abstract socket, as it would to
 * Perfetto's {@code traced}. It registers data source "track_event", which a session must
 * have started; its SMB comes with SetupTracing, its chunks and patches with CommitData,
 * and it acknowledges flushes and stops. Its trusted identity is what the kernel says of
 * the socket's peer. Closing it stops the process, killing it if it does not stop in time.
 */
final class CProducerProcess implements AutoCloseable {
    static final String PRODUCER_NAME = "ffmtrace-c-producer";
    /** The system property naming the program that {@code --c-producer} with no value runs. */
    static final String PROGRAM_PROPERTY = "ffmtrace.c-producer";
    static final String DATA_SOURCE = "track_event";
    private static final long SMB_SIZE = 1 << 20;
    private static final int PAGE_SIZE = 4096;
    private static final long START_TIMEOUT_SECONDS = 10;
    private static final long STOP_TIMEOUT_SECONDS = 5;
    private static final int MAX_REPLY = 64;
    private static final Pattern REPLY = Pattern.compile("D (\\d{1,18}) (\\d{1,18})\n");

    /** Why the process could not be started; the message is one line. */
    static final class StartException extends Exception {
        StartException(String message) {
            super(message);
        }
    }

    /**
     * How the process ended. {@code packets} and {@code dropped} are what it reported
     * (iterations dropped while its SMB was full), or -1 if it reported nothing readable.
     */
    record Result(int exitStatus, boolean killed, long packets, long dropped) {
    }

    private final Process process;
    private final ProducerPort port;
    /** The process's standard output, read to its end: the report it prints when the port hangs up. */
    private final CompletableFuture<String> report;
    private Result result;

    private CProducerProcess(Process process, ProducerPort port, CompletableFuture<String> report) {
        this.process = process;
        this.port = port;
        this.report = report;
    }

    /**
     * The program of the repository's C build ({@code native/Makefile}): the path in system
     * property {@value #PROGRAM_PROPERTY} (which {@code ./ffmtrace} sets), else
     * {@code native/target/bin/ffmtrace-c-producer} of the source tree that holds the jar
     * or classes, else {@code ffmtrace-c-producer} next to them.
     */
    static Path defaultProgram() {
        String property = System.getProperty(PROGRAM_PROPERTY, "");
        if (!property.isEmpty()) {
            return Path.of(property);
        }
        Path location;
        try {
            location = Path.of(CProducerProcess.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                    .toAbsolutePath().getParent();
        } catch (URISyntaxException e) {
            throw new IllegalStateException("cannot locate the ffmtrace classes", e);
        }
        for (Path dir = location; dir != null; dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve("native").resolve("Makefile"))) {
                return dir.resolve("native").resolve("target").resolve("bin").resolve(PRODUCER_NAME);
            }
        }
        return location.resolve(PRODUCER_NAME);
    }

    /**
     * Starts {@code program} as a producer of {@code service} and returns once it has
     * registered {@value #DATA_SOURCE}, so that a session started after this starts it
     * along with the others, however soon that session stops.
     */
    static CProducerProcess start(Path program, TracingService service) throws StartException {
        if (!Files.isRegularFile(program) || !Files.isExecutable(program)) {
            throw new StartException("no C producer program at " + program
                    + " (the C build makes it: make -C native, or ./mvnw -pl cli -am package)");
        }
        UnixAddress address = UnixAddress.abstractName(
                PRODUCER_NAME + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
        ProducerPort port;
        try {
            port = ProducerPort.listen(service, address);
        } catch (RuntimeException e) {
            throw new StartException("cannot open a producer port for the C producer: " + e.getMessage());
        }
        Process process = null;
        try {
            try {
                process = new ProcessBuilder(List.of(program.toString(), "--name", PRODUCER_NAME,
                        "--smb-size", Long.toString(SMB_SIZE), "--page-size", Integer.toString(PAGE_SIZE),
                        "@" + address.name()))
                        .redirectInput(ProcessBuilder.Redirect.INHERIT)
                        .redirectError(ProcessBuilder.Redirect.INHERIT)
                        .start();
            } catch (IOException e) {
                throw new StartException("cannot start the C producer " + program + ": " + e.getMessage());
            }
            CompletableFuture<String> report = readReport(process.getInputStream());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(START_TIMEOUT_SECONDS);
            while (!registered(service, process.pid())) {
                if (!process.isAlive()) {
                    throw new StartException("the C producer exited with status " + process.exitValue()
                            + " before registering its data source");
                }
                if (System.nanoTime() > deadline) {
                    throw new StartException("the C producer (pid " + process.pid() + ") did not register its data"
                            + " source within " + START_TIMEOUT_SECONDS + " s");
                }
                Thread.sleep(5);
            }
            return new CProducerProcess(process, port, report);
        } catch (StartException | RuntimeException | InterruptedException e) {
            port.close();
            if (process != null) {
                process.destroyForcibly();
                process.onExit().join();
            }
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            if (e instanceof StartException start) {
                throw start;
            }
            throw new StartException("the C producer could not be set up: " + e.getMessage());
        }
    }

    /** Whether the producer of process {@code pid} offers {@value #DATA_SOURCE} to {@code service}. */
    private static boolean registered(TracingService service, long pid) {
        return service.registeredDataSources().entrySet().stream()
                .anyMatch(producer -> producer.getKey().identity().pid() == pid
                        && producer.getValue().contains(DATA_SOURCE));
    }

    /** Reads at most {@value #MAX_REPLY} bytes of the process's output, then drains the rest. */
    private static CompletableFuture<String> readReport(InputStream output) {
        CompletableFuture<String> report = new CompletableFuture<>();
        Thread.ofVirtual().name("c producer output").start(() -> {
            try (output) {
                String text = new String(output.readNBytes(MAX_REPLY), StandardCharsets.US_ASCII);
                output.transferTo(OutputStream.nullOutputStream());
                report.complete(text);
            } catch (IOException e) {
                report.complete("");
            }
        });
        return report;
    }

    long pid() {
        return process.pid();
    }

    /** Chunks the service has taken whole out of the process's SMB so far. */
    long chunksMoved() {
        return port.chunksMoved();
    }

    /** Chunk headers and commits the service refused, and requests that broke the protocol. */
    long abiViolations() {
        return port.abiViolations() + port.violations();
    }

    /**
     * Hangs up on the process and waits: it reports and exits (or is killed after
     * {@value #STOP_TIMEOUT_SECONDS} s); its producer closes, which takes the chunks it
     * left. The session's stop has already committed its last chunk (StopDataSource, which
     * the service waits for). Later calls return the same result.
     */
    synchronized Result stop() throws InterruptedException {
        if (result != null) {
            return result;
        }
        port.close();
        boolean killed = !process.waitFor(STOP_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        if (killed) {
            process.destroyForcibly();
            process.waitFor();
        }
        String text;
        try {
            text = report.get(1, TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException e) {
            // Something else holds the output open: no report.
            text = "";
        }
        Matcher reply = REPLY.matcher(text);
        boolean reported = reply.matches();
        result = new Result(process.exitValue(), killed, reported ? Long.parseLong(reply.group(1)) : -1,
                reported ? Long.parseLong(reply.group(2)) : -1);
        return result;
    }

    /** Stops the process if {@link #stop()} was not called or was interrupted: killed, and waited for. */
    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroyForcibly();
            process.onExit().join();
        }
        port.close();
    }
}
