package dev.ffmtrace.cli;

import dev.ffmtrace.jvm.JfrConverter;
import dev.ffmtrace.jvm.JfrMappingStats;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * A JFR recording to a Perfetto trace. Exit status 0 when the whole recording was
 * converted, 2 when it could not be opened or stopped being readable part way (what was
 * read is still written), 1 when the trace could not be written.
 */
@Command(name = "jfr", mixinStandardHelpOptions = true,
        description = "Convert a Java Flight Recorder recording (.jfr) into a Perfetto trace: GC, safepoints, "
                + "locks, parks and sleeps as slices, heap, metaspace and CPU as counters, execution samples "
                + "as CPU samples, allocation samples as a heap profile.")
final class JfrCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "IN.jfr",
            description = "A recording from -XX:StartFlightRecording or jcmd PID JFR.dump.")
    Path input;

    @Option(names = {"-o", "--out"}, required = true, paramLabel = "OUT.pftrace", description = "The trace to write.")
    Path output;

    @Option(names = "--quiet", description = "No progress on stderr.")
    boolean quiet;

    @Override
    public Integer call() throws CliFailure {
        JfrConverter.Result result;
        try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(output))) {
            result = JfrConverter.convert(input, out, events -> {
                if (!quiet) {
                    System.err.print("\rread " + events + " events");
                }
            });
        } catch (JfrConverter.UnreadableRecordingException e) {
            deleteQuietly(output);
            throw new CliFailure(e.getMessage(), CliFailure.USAGE);
        } catch (IOException e) {
            throw new CliFailure("writing " + output + ": " + e.getMessage(), CliFailure.FAILED);
        }
        if (!quiet && result.events() >= JfrConverter.PROGRESS_EVERY) {
            System.err.println();
        }
        JfrMappingStats mapping = result.mapping();
        System.out.println("wrote " + output + ": " + result.events() + " events read, " + mapping.mapped()
                + " mapped, " + mapping.ignored() + " (of " + mapping.ignoredTypes().size()
                + " types) not mapped" + (result.pid() < 0 ? "; the recording names no pid (0 written)" : ""));
        String problems = problems(result);
        if (!problems.isEmpty()) {
            System.err.println("ffmtrace jfr: " + input + ": " + problems);
        }
        return result.unreadable() != null ? CliFailure.USAGE : 0;
    }

    /** Where reading stopped and what the mapping skipped, in one line; empty when neither. */
    private static String problems(JfrConverter.Result result) {
        JfrMappingStats mapping = result.mapping();
        StringBuilder line = new StringBuilder();
        if (result.unreadable() != null) {
            line.append("unreadable after event ").append(result.events()).append(" (").append(result.unreadable())
                    .append(")");
        }
        if (mapping.malformed() > 0) {
            line.append(line.isEmpty() ? "" : "; ").append("skipped ").append(mapping.malformed())
                    .append(" malformed events (")
                    .append(mapping.malformedTypes().entrySet().stream().map(JfrCommand::typeCount)
                            .collect(Collectors.joining(", ")))
                    .append(")");
        }
        append(line, mapping.withoutThread(), "events without a thread or stack");
        append(line, mapping.droppedPhases(), "GC phases outside their collection");
        append(line, mapping.lateAllocationSamples(), "allocation samples after their second's rate");
        return line.toString();
    }

    private static void append(StringBuilder line, long count, String what) {
        if (count > 0) {
            line.append(line.isEmpty() ? "" : "; ").append("skipped ").append(count).append(' ').append(what);
        }
    }

    private static String typeCount(Map.Entry<String, Long> entry) {
        return entry.getKey() + " " + entry.getValue();
    }

    private static void deleteQuietly(Path path) {
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            // The refusal already says what went wrong; an empty file left behind is harmless.
        }
    }
}
