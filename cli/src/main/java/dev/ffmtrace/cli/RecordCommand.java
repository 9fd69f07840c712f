package dev.ffmtrace.cli;

import com.google.protobuf.TextFormat;
import dev.ffmtrace.tracing.buffer.ClientIdentity;
import dev.ffmtrace.tracing.buffer.TraceBufferStats;
import dev.ffmtrace.tracing.service.DataSource;
import dev.ffmtrace.tracing.service.DataSourceWarning;
import dev.ffmtrace.tracing.service.InvalidConfigException;
import dev.ffmtrace.tracing.service.Producer;
import dev.ffmtrace.tracing.service.ProducerOptions;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.trackevent.Track;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import perfetto.protos.TraceConfigOuterClass.TraceConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Runs a tracing session from a TraceConfig with the demo producer's threads writing
 * TrackEvent slices, instants, flows and counters, and, with {@code --c-producer}, a C
 * producer process writing into an SMB of its own; then writes the trace file.
 */
@Command(name = "record", mixinStandardHelpOptions = true,
        description = "Record a trace with the demo producers, as the TraceConfig says.")
final class RecordCommand implements Callable<Integer> {
    @Option(names = "--config", required = true, paramLabel = "FILE",
            description = "TraceConfig in text format (.pbtxt, .txt) or binary (anything else).")
    Path config;

    @Option(names = "--out", required = true, paramLabel = "FILE.pftrace", description = "The trace file to write.")
    Path out;

    @Option(names = "--threads", defaultValue = "4", description = "Demo producer threads (default ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--snapshot", paramLabel = "FILE.pftrace",
            description = "Halfway through, also write a snapshot of the running session here (cloned buffers).")
    Path snapshot;

    @Option(names = "--c-producer", arity = "0..1", fallbackValue = "", paramLabel = "PROGRAM",
            description = "Also run a C producer process writing TrackEvents into an SMB of its own "
                    + "(PROGRAM: the one of the native build, unless given).")
    String cProducer;

    @Override
    public Integer call() throws IOException, InterruptedException {
        SessionConfig session;
        try {
            session = SessionConfig.parse(MemorySegment.ofArray(readConfig()));
        } catch (TextFormat.ParseException e) {
            System.err.println(config + ":" + e.getLine() + ":" + e.getColumn() + ": " + e.getMessage());
            return 2;
        } catch (InvalidConfigException e) {
            System.err.println(config + ": invalid TraceConfig: " + e.getMessage());
            return 2;
        }
        if (threads < 1) {
            System.err.println("--threads must be at least 1");
            return 2;
        }
        if (cProducer != null && session.dataSources().stream()
                .noneMatch(source -> source.name().equals(CProducerProcess.DATA_SOURCE))) {
            System.err.println("--c-producer: the config does not start data source \"" + CProducerProcess.DATA_SOURCE
                    + "\", which the C producer writes");
            return 2;
        }
        long duration = session.durationMs() > 0 ? session.durationMs() : 2000;
        long period = session.flushPeriodMs() > 0 ? session.flushPeriodMs() : 250;
        long filePeriod = session.fileWritePeriodMs() > 0 ? session.fileWritePeriodMs() : period;
        ClientIdentity self = ClientIdentity.self();
        int status;
        try (TracingService service = new TracingService();
             OutputStream file = new BufferedOutputStream(Files.newOutputStream(out))) {
            Producer producer = service.connectProducer(ProducerOptions.of("ffmtrace-demo").withSmbSize(4 << 20));
            DataSource events = producer.registerDataSource("track_event");
            DataSource counters = producer.registerDataSource("counters");
            TracingSession tracing = service.startSession(session);
            CProducerProcess cProcess;
            try {
                cProcess = cProducer == null ? null : CProducerProcess.start(
                        cProducer.isEmpty() ? CProducerProcess.defaultProgram() : Path.of(cProducer), service);
            } catch (CProducerProcess.StartException e) {
                System.err.println("ffmtrace record: " + e.getMessage());
                return 2;
            }
            try (cProcess) {
                for (DataSourceWarning warning : tracing.warnings()) {
                    System.err.println("ffmtrace record: warning: " + warning.message());
                }
                if (!events.isStarted() || !counters.isStarted()) {
                    System.out.println("note: the config does not start " + (events.isStarted() ? "\"counters\"" : "\"track_event\"")
                            + ", so the demo writes less");
                }
                System.out.printf("recording %d ms with %d threads into %s%n", duration, threads, out);
                if (cProcess != null) {
                    System.out.printf("  c producer pid %d writes into its own SMB%n", cProcess.pid());
                }
                AtomicBoolean stop = new AtomicBoolean();
                ConcurrentLinkedQueue<Long> handoffs = new ConcurrentLinkedQueue<>();
                List<Thread> workers = new ArrayList<>();
                Track process = Track.process(self.pid(), "ffmtrace record");
                for (int i = 0; i < threads; i++) {
                    if (events.isStarted() && counters.isStarted()) {
                        workers.add(Thread.ofPlatform().name("demo worker " + i)
                                .start(new DemoWorkload(i, process, events, counters, stop, handoffs)));
                    }
                }
                // When the service stops the session (its duration), the workers end their slices first.
                DataSource.StopHandler stopWorkers = done -> Thread.ofPlatform().name("demo stop").start(() -> {
                    stop.set(true);
                    for (Thread worker : workers) {
                        try {
                            worker.join();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                    done.run();
                });
                events.onStop(stopWorkers);
                counters.onStop(stopWorkers);
                long packets = 0;
                long start = System.nanoTime();
                long lastFileWrite = 0;
                long lastClear = 0;
                boolean snapshotTaken = snapshot == null;
                while ((System.nanoTime() - start) / 1_000_000 < duration) {
                    Thread.sleep(period);
                    tracing.flush();
                    long elapsedMs = (System.nanoTime() - start) / 1_000_000;
                    if (session.incrementalStateClearPeriodMs() > 0
                            && elapsedMs - lastClear >= session.incrementalStateClearPeriodMs()) {
                        tracing.clearIncrementalState();
                        lastClear = elapsedMs;
                    }
                    if (session.writeIntoFile() && elapsedMs - lastFileWrite >= filePeriod) {
                        packets += tracing.writeTrace(file);
                        lastFileWrite = elapsedMs;
                    }
                    if (!snapshotTaken && elapsedMs >= duration / 2) {
                        try (OutputStream copy = new BufferedOutputStream(Files.newOutputStream(snapshot))) {
                            System.out.printf("  snapshot of %,d packets written to %s%n", tracing.writeSnapshot(copy), snapshot);
                        }
                        snapshotTaken = true;
                    }
                    System.out.printf("  %5.1f s: %,d bytes written to the buffers%s%n", (System.nanoTime() - start) / 1e9,
                            tracing.stats().stream().mapToLong(TraceBufferStats::bytesWritten).sum(),
                            cProcess == null ? "" : String.format("; c producer: %,d chunks", cProcess.chunksMoved()));
                }
                stop.set(true);
                for (Thread worker : workers) {
                    worker.join();
                }
                // Stopped first, so the flush takes the C producer's last chunk too.
                CProducerProcess.Result cResult = cProcess == null ? null : cProcess.stop();
                tracing.flush();
                packets += tracing.writeTrace(file);
                file.flush();
                printSummary(session, tracing.stats(), packets, producer.abiViolations());
                status = cProcess == null ? 0 : printCProducerSummary(cProcess, cResult);
                tracing.close();
            }
        }
        System.out.println("open " + out.toAbsolutePath() + " at https://ui.perfetto.dev (Open trace file)");
        return status;
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

    private void printSummary(SessionConfig session, List<TraceBufferStats> stats, long packets, long abiViolations)
            throws IOException {
        System.out.printf("wrote %,d packets, %,d bytes to %s%n", packets, Files.size(out), out);
        for (int i = 0; i < stats.size(); i++) {
            TraceBufferStats s = stats.get(i);
            System.out.printf("  buffer %s (%s, %,d KiB): %,d bytes / %,d chunks written, %,d chunks overwritten, "
                            + "%,d discarded, %,d bytes read, %,d packet losses by writers%n",
                    session.buffers().get(i).describe(), session.buffers().get(i).overwritePolicy(), s.bufferSize() / 1024,
                    s.bytesWritten(), s.chunksWritten(), s.chunksOverwritten(), s.chunksDiscarded(), s.bytesRead(),
                    s.traceWriterPacketLoss());
        }
        if (abiViolations > 0) {
            System.out.println("  producer ABI violations: " + abiViolations);
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
