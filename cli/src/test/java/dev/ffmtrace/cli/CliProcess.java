package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;

/**
 * The command line run in a process of its own, as a user runs it: for signals, limits
 * and files only a real process shows. Its output is drained while it runs; a line of
 * standard output can be waited for.
 */
final class CliProcess {
    /** Generous: a loaded two-core machine starts JVMs slowly. */
    static final long TIMEOUT_SECONDS = 120;

    private final Process process;
    private final CompletableFuture<String> out;
    private final CompletableFuture<String> err;
    private final List<String> lines = new ArrayList<>();
    /** Guarded by {@link #lines}. */
    private boolean outputEnded;

    private CliProcess(Process process) {
        this.process = process;
        this.out = CompletableFuture.supplyAsync(this::readLines, Thread::startVirtualThread);
        this.err = drain(process.getErrorStream());
    }

    /**
     * Runs {@code ./ffmtrace ARGS} in a second JVM with {@code jvmOptions}, after
     * {@code shellPrefix} (shell commands, such as a {@code ulimit}, run before the JVM
     * starts; empty for none).
     * SIGINT and SIGTERM get their default handling back, which a process started in the
     * background by a shell without job control would otherwise inherit as ignored.
     */
    static CliProcess start(String shellPrefix, List<String> jvmOptions, String... args) {
        List<String> command = new ArrayList<>(List.of("env", "--default-signal=INT,TERM", "bash", "-c",
                shellPrefix + "\nexec \"$@\"", "bash"));
        List<String> java = FfmtraceCommand.javaCommand();
        command.add(java.getFirst());
        command.addAll(jvmOptions);
        command.addAll(java.subList(1, java.size()));
        command.addAll(List.of(args));
        try {
            return new CliProcess(new ProcessBuilder(command).redirectInput(ProcessBuilder.Redirect.PIPE).start());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static CliProcess start(String... args) {
        return start("", List.of(), args);
    }

    long pid() {
        return process.pid();
    }

    Process process() {
        return process;
    }

    /**
     * Waits until a line of standard output matches (one printed before this call counts);
     * fails at once if the output ends first. May be called any number of times.
     */
    void awaitLine(Predicate<String> line) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_SECONDS);
        boolean ended;
        synchronized (lines) {
            long left;
            while (lines.stream().noneMatch(line) && !outputEnded && (left = deadline - System.nanoTime()) > 0) {
                TimeUnit.NANOSECONDS.timedWait(lines, left);
            }
            if (lines.stream().anyMatch(line)) {
                return;
            }
            ended = outputEnded;
        }
        // The failure's message waits for the process: outside the lock the reader takes.
        if (ended) {
            fail("the output ended without such a line: " + lines + "; errors: " + errors());
        }
        process.destroyForcibly();
        fail("no such line within " + TIMEOUT_SECONDS + " s; output: " + lines + "; errors: " + errors());
    }

    /** Sends {@code signal} (a name, as kill takes it). */
    void kill(String signal) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start();
        if (kill.waitFor() != 0) {
            fail("kill -" + signal + " " + process.pid() + " failed");
        }
    }

    /** Waits for the process to end. */
    ConvertAndDumpTest.Run await() throws InterruptedException {
        if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            fail("the process did not end within " + TIMEOUT_SECONDS + " s; output: " + lines);
        }
        try {
            return new ConvertAndDumpTest.Run(process.exitValue(), out.get(TIMEOUT_SECONDS, TimeUnit.SECONDS),
                    err.get(TIMEOUT_SECONDS, TimeUnit.SECONDS));
        } catch (ExecutionException | TimeoutException e) {
            throw new AssertionError("cannot read the output", e);
        }
    }

    /** Standard error, once the process has ended (for a failure's message). */
    private String errors() {
        try {
            return process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS) ? err.get(TIMEOUT_SECONDS, TimeUnit.SECONDS)
                    : "(still running)";
        } catch (InterruptedException | ExecutionException | TimeoutException e) {
            return "(unreadable: " + e + ")";
        }
    }

    private String readLines() {
        StringBuilder all = new StringBuilder();
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(process.getInputStream(),
                StandardCharsets.UTF_8))) {
            for (String line; (line = reader.readLine()) != null; ) {
                all.append(line).append('\n');
                synchronized (lines) {
                    lines.add(line);
                    lines.notifyAll();
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            // The output ended: a line still awaited will not come.
            synchronized (lines) {
                outputEnded = true;
                lines.notifyAll();
            }
        }
        return all.toString();
    }

    private static CompletableFuture<String> drain(InputStream stream) {
        return CompletableFuture.supplyAsync(() -> {
            try (stream) {
                return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }, Thread::startVirtualThread);
    }
}
