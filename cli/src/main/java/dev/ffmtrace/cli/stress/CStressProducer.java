package dev.ffmtrace.cli.stress;

import dev.ffmtrace.memory.StreamAddress;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A C stress producer process ({@code native/src/stress_producer.c}) and its ledger: a
 * file in {@code /dev/shm} with one 8-byte little-endian slot per writer thread, where
 * the process stores how many packets each writer has attempted after every packet. The
 * ledger outlives a SIGKILL, so the packets of a killed process are accounted for too.
 */
final class CStressProducer implements AutoCloseable {
    private static final long EXIT_TIMEOUT_SECONDS = 10;
    private static final Path SHM = Path.of("/dev/shm");

    private final Process process;
    private final int producer;
    private final int buffer;
    private final int threads;
    private final Path ledger;
    private volatile boolean killed;
    /** It did not exit when its service hung up, and was killed then: a failure, not a fault. */
    private volatile boolean hung;

    private CStressProducer(Process process, int producer, int buffer, int threads, Path ledger) {
        this.process = process;
        this.producer = producer;
        this.buffer = buffer;
        this.threads = threads;
        this.ledger = ledger;
    }

    static CStressProducer start(Path program, StreamAddress service, int producer, int buffer, String dataSource,
                                 int threads, int rate, StressPacket.Mix mix, long seed, String policy,
                                 PrintStream log) throws IOException {
        if (!Files.isRegularFile(program) || !Files.isExecutable(program)) {
            throw new IOException("no C stress producer at " + program + " (make -C native ffmtrace-stress-producer)");
        }
        Path ledger = Files.createTempFile(Files.isDirectory(SHM) ? SHM : Path.of(System.getProperty("java.io.tmpdir")),
                "ffmtrace-stress-ledger-" + producer + "-", "");
        try {
            Files.write(ledger, new byte[threads * Long.BYTES]);
            List<String> command = List.of(program.toString(), "--producer-id", Integer.toString(producer),
                    "--data-source", dataSource, "--threads", Integer.toString(threads),
                    "--rate", Integer.toString(rate), "--sizes", mix.toString(), "--seed", Long.toUnsignedString(seed),
                    "--policy", policy, "--ledger", ledger.toString(), service.toString());
            Process process = new ProcessBuilder(command)
                    .redirectError(ProcessBuilder.Redirect.INHERIT)
                    .start();
            process.getOutputStream().close();
            log.printf("stress: C producer %d (pid %d): %d threads into the %s buffer, %s%n", producer, process.pid(),
                    threads, buffer == StressRun.RING_BUFFER ? "ring" : "discard", policy);
            // Its per-writer report repeats the ledger, which also covers a killed process:
            // the output is only drained, so that a full pipe never blocks it.
            readAll(process.getInputStream());
            return new CStressProducer(process, producer, buffer, threads, ledger);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(ledger);
            throw e;
        }
    }

    static CompletableFuture<String> readAll(InputStream stream) {
        CompletableFuture<String> text = new CompletableFuture<>();
        Thread.ofVirtual().name("stress producer output").start(() -> {
            try (stream) {
                text.complete(new String(stream.readAllBytes(), StandardCharsets.US_ASCII));
            } catch (IOException e) {
                text.complete("");
            }
        });
        return text;
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /** SIGKILL, wherever the process is: mid-chunk, mid-patch, mid-commit. */
    void kill() throws InterruptedException {
        killed = true;
        process.destroyForcibly();
        process.waitFor();
    }

    /** Waits for the process to exit after its service hung up; kills it if it does not, which {@link #failure} reports. */
    void awaitExit() throws InterruptedException {
        if (!process.waitFor(EXIT_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            hung = true;
            process.destroyForcibly();
            process.waitFor();
        }
    }

    /**
     * What went wrong with the process itself, once it has exited: null if it was killed
     * here or ended with status 0 (as it does when its service hangs up).
     */
    String failure() {
        if (hung) {
            return "C producer " + producer + " (pid " + process.pid() + ") did not exit within "
                    + EXIT_TIMEOUT_SECONDS + " s of its service hanging up";
        }
        if (killed || process.isAlive() || process.exitValue() == 0) {
            return null;
        }
        return "C producer " + producer + " (pid " + process.pid() + ") exited with status " + process.exitValue();
    }

    /**
     * Waits until each writer's ledger shows {@code minPackets}, or the process has ended;
     * false if {@code deadline} ({@link System#nanoTime}) passes first. The ledger is a file
     * another process writes, with nothing to wait on but its contents: it is read every
     * {@code pollMillis}.
     */
    boolean awaitPackets(long minPackets, long deadline, long pollMillis) throws IOException, InterruptedException {
        while (process.isAlive() && fewestAttempted() < minPackets) {
            if (System.nanoTime() - deadline >= 0) {
                return false;
            }
            Thread.sleep(pollMillis);
        }
        return true;
    }

    private long fewestAttempted() throws IOException {
        return writers().stream().mapToLong(StressVerifier.Writer::attempted).min().orElse(0);
    }

    @Override
    public String toString() {
        return "C producer " + producer + " (pid " + process.pid() + ")";
    }

    /** Each writer thread's identity, buffer and attempted packets, from the ledger. */
    List<StressVerifier.Writer> writers() throws IOException {
        ByteBuffer slots = ByteBuffer.wrap(Files.readAllBytes(ledger)).order(ByteOrder.LITTLE_ENDIAN);
        List<StressVerifier.Writer> writers = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            long attempted = slots.remaining() >= Long.BYTES ? slots.getLong() : 0;
            writers.add(new StressVerifier.Writer(producer, i, buffer, attempted, killed));
        }
        return writers;
    }

    @Override
    public void close() throws IOException {
        if (process.isAlive()) {
            process.destroyForcibly();
        }
        Files.deleteIfExists(ledger);
    }
}
