package dev.ffmtrace.bench;

import dev.ffmtrace.jvm.JfrConverter;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Converting a large JFR recording (a whole file per operation) against the JDK's own
 * floor: reading every event of the same file with {@code RecordingFile} and doing
 * nothing with it. Events per second are the file's events (printed at set-up) over the
 * time per operation. The recording is {@code -Djfr.recording=PATH} if given, else made
 * at set-up by running {@link JfrWorkload} for {@code -Djfr.seconds} (20) seconds with
 * JFR's "profile" settings, every park recorded: about 100 MB and a few million events.
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2)
@Measurement(iterations = 5)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Xmx2g"})
@State(Scope.Benchmark)
public class JfrConversionBenchmark {
    private Path recording;
    private Path made;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        String given = System.getProperty("jfr.recording");
        if (given != null) {
            recording = Path.of(given);
        } else {
            made = Files.createTempFile("ffmtrace-bench", ".jfr");
            recording = made;
            record(made, Long.getLong("jfr.seconds", 20));
        }
        long events = 0;
        try (RecordingFile file = new RecordingFile(recording)) {
            while (file.hasMoreEvents()) {
                file.readEvent();
                events++;
            }
        }
        System.out.println("\nrecording: " + recording + ", " + Files.size(recording) + " bytes, " + events + " events");
    }

    private static void record(Path jfr, long seconds) throws IOException, InterruptedException {
        String classPath = System.getProperty("java.class.path");
        Process process = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-XX:StartFlightRecording=filename=" + jfr + ",settings=profile,jdk.ThreadPark#threshold=0ms",
                "-cp", classPath, JfrWorkload.class.getName(), Long.toString(seconds))
                .inheritIO().start();
        if (process.waitFor() != 0) {
            throw new IllegalStateException("the workload failed: exit " + process.exitValue());
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        if (made != null) {
            Files.deleteIfExists(made);
        }
    }

    /** The floor: every event read, nothing done with it. */
    @Benchmark
    public long readEveryEvent(Blackhole blackhole) throws IOException {
        long events = 0;
        try (RecordingFile file = new RecordingFile(recording)) {
            while (file.hasMoreEvents()) {
                RecordedEvent event = file.readEvent();
                blackhole.consume(event);
                events++;
            }
        }
        return events;
    }

    /** The whole conversion, the trace written to a stream that keeps nothing. */
    @Benchmark
    public JfrConverter.Result convert() throws IOException {
        return JfrConverter.convert(recording, OutputStream.nullOutputStream(), events -> { });
    }
}
