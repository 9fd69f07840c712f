package dev.ffmtrace.cli;

import dev.ffmtrace.memory.PeerCredentials;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.UnixServerSocket;
import dev.ffmtrace.memory.UnixSocket;
import dev.ffmtrace.tracing.buffer.ClientIdentity;
import dev.ffmtrace.tracing.service.DataSource;
import dev.ffmtrace.tracing.service.Producer;
import dev.ffmtrace.tracing.service.ProducerOptions;
import dev.ffmtrace.tracing.service.TracingService;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The C producer process of {@code record --c-producer} ({@code native/src/c_producer.c}):
 * a producer of its own in the service, whose SMB memfd it receives over a Unix socket
 * and writes TrackEvent packets into without commits, as writer {@link #WRITER_ID} of
 * data source "track_event". Its trusted identity is what the kernel says of the
 * socket's peer. Closing it stops the process, killing it if it does not stop in time.
 */
final class CProducerProcess implements AutoCloseable {
    static final String PRODUCER_NAME = "ffmtrace-c-producer";
    /** The system property naming the program that {@code --c-producer} with no value runs. */
    static final String PROGRAM_PROPERTY = "ffmtrace.c-producer";
    static final String DATA_SOURCE = "track_event";
    /** The C writer's id in its SMB: the producer's arbiter passes over it. */
    static final int WRITER_ID = 1;
    private static final long SMB_SIZE = 1 << 20;
    private static final int PAGE_SIZE = 4096;
    private static final long CONNECT_TIMEOUT_SECONDS = 10;
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
    private final UnixSocket connection;
    private final Producer producer;
    private Result result;

    private CProducerProcess(Process process, UnixSocket connection, Producer producer) {
        this.process = process;
        this.connection = connection;
        this.producer = producer;
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
     * Starts {@code program}, connects its producer to {@code service} with data source
     * "track_event" (which a session must have started) and hands it the SMB.
     */
    static CProducerProcess start(Path program, TracingService service) throws StartException {
        if (!Files.isRegularFile(program) || !Files.isExecutable(program)) {
            throw new StartException("no C producer program at " + program
                    + " (the C build makes it: make -C native, or ./mvnw -pl cli -am package)");
        }
        UnixAddress address = UnixAddress.abstractName(
                PRODUCER_NAME + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
        Process process = null;
        UnixSocket connection = null;
        Producer producer = null;
        try (UnixServerSocket server = UnixServerSocket.listen(address, 1)) {
            try {
                process = new ProcessBuilder(List.of(program.toString(), "@" + address.name(),
                        Integer.toString(PAGE_SIZE), Long.toString(SMB_SIZE), Integer.toString(WRITER_ID)))
                        .redirectInput(ProcessBuilder.Redirect.INHERIT)
                        .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                        .redirectError(ProcessBuilder.Redirect.INHERIT)
                        .start();
            } catch (IOException e) {
                throw new StartException("cannot start the C producer " + program + ": " + e.getMessage());
            }
            // Closing the server wakes the accept below if the process dies or never connects.
            process.onExit().copy().completeOnTimeout(null, CONNECT_TIMEOUT_SECONDS, TimeUnit.SECONDS)
                    .thenRun(server::close);
            try {
                connection = server.accept();
            } catch (RuntimeException e) {
                throw new StartException(process.isAlive()
                        ? "the C producer (pid " + process.pid() + ") did not connect within " + CONNECT_TIMEOUT_SECONDS + " s"
                        : "the C producer exited with status " + process.onExit().join().exitValue() + " before connecting");
            }
            PeerCredentials peer = connection.peerCredentials();
            if (peer.pid() != process.pid()) {
                throw new StartException("pid " + peer.pid() + ", not the C producer (pid " + process.pid()
                        + "), connected to its socket");
            }
            producer = service.connectProducer(ProducerOptions.of(PRODUCER_NAME)
                    .withIdentity(new ClientIdentity(peer.uid(), peer.pid())).withSmbSize(SMB_SIZE).withPageSize(PAGE_SIZE));
            DataSource events = producer.registerDataSource(DATA_SOURCE);
            producer.adoptRemoteWriter(WRITER_ID, events);
            connection.send(new byte[] {'S'}, producer.smbFd());
            CProducerProcess started = new CProducerProcess(process, connection, producer);
            // When the session stops, the process stops first, so that its last chunk is in the trace.
            events.onStop(done -> Thread.ofPlatform().name("c producer stop").start(() -> {
                try {
                    started.stop();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    done.run();
                }
            }));
            return started;
        } catch (StartException | RuntimeException e) {
            if (connection != null) {
                connection.close();
            }
            if (process != null) {
                process.destroyForcibly();
                process.onExit().join();
            }
            if (producer != null) {
                producer.close();
            }
            if (e instanceof StartException start) {
                throw start;
            }
            throw new StartException("the C producer could not be set up: " + e.getMessage());
        }
    }

    long pid() {
        return process.pid();
    }

    /** Chunks the service has taken whole out of the process's SMB so far. */
    long chunksMoved() {
        return producer.chunksMoved();
    }

    /** Chunk headers in its SMB that the service found invalid. */
    long abiViolations() {
        return producer.abiViolations();
    }

    /**
     * Asks the process to stop and waits: it releases its last chunk as complete, reports
     * and exits (or is killed after {@value #STOP_TIMEOUT_SECONDS} s); then its producer
     * closes, which takes the chunks it left (one it was still writing, if it was killed,
     * counts as lost). Once this returns, everything it wrote is in the session's buffer.
     * The session's stop calls it; later calls return the same result.
     */
    synchronized Result stop() throws InterruptedException {
        if (result != null) {
            return result;
        }
        try {
            connection.send(new byte[] {'Q'});
        } catch (RuntimeException e) {
            // Already gone: its exit status tells.
        }
        boolean killed = !process.waitFor(STOP_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        if (killed) {
            process.destroyForcibly();
            process.waitFor();
        }
        Matcher reply = REPLY.matcher(readReply());
        boolean reported = reply.matches();
        result = new Result(process.exitValue(), killed, reported ? Long.parseLong(reply.group(1)) : -1,
                reported ? Long.parseLong(reply.group(2)) : -1);
        producer.close();
        return result;
    }

    /**
     * The process's report, at most {@value #MAX_REPLY} bytes. The process has exited, so
     * its end is closed; still, the read runs on its own thread and is cut short by
     * closing the connection, in case something else kept that end open.
     */
    private String readReply() throws InterruptedException {
        ByteArrayOutputStream reply = new ByteArrayOutputStream();
        Thread reader = Thread.ofVirtual().start(() -> {
            byte[] bytes = new byte[MAX_REPLY];
            try {
                for (int n; reply.size() < MAX_REPLY && (n = connection.receive(bytes, 0).bytes()) > 0; ) {
                    reply.write(bytes, 0, Math.min(n, MAX_REPLY - reply.size()));
                }
            } catch (RuntimeException e) {
                // The connection failed or was closed: the report is what arrived before.
            }
        });
        reader.join(TimeUnit.SECONDS.toMillis(1));
        connection.close();
        reader.join();
        return reply.toString(StandardCharsets.US_ASCII);
    }

    /** Stops the process if {@link #stop()} was not called or was interrupted: killed, and waited for. */
    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroyForcibly();
            process.onExit().join();
        }
        connection.close();
    }
}
