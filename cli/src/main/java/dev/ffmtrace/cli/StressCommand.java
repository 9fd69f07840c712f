package dev.ffmtrace.cli;

import dev.ffmtrace.cli.stress.HostileClients;
import dev.ffmtrace.cli.stress.ProcessFootprint;
import dev.ffmtrace.cli.stress.RingStress;
import dev.ffmtrace.cli.stress.StressPacket;
import dev.ffmtrace.cli.stress.StressRun;
import dev.ffmtrace.cli.stress.StressVerifier;
import java.io.PrintStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ffmtrace stress}: C producer processes and Java writers on platform and virtual
 * threads write checksummed, numbered packets through their SMBs into a ring and a
 * discard buffer while the session streams the trace into a file; with {@code --faults}
 * C producers are killed with SIGKILL and replaced. Then every packet is accounted for,
 * per writer ({@link StressVerifier}); the exit status is 0 only if none is unaccounted,
 * corrupt, duplicated or out of order.
 */
@Command(name = "stress", mixinStandardHelpOptions = true,
        description = "Stress the tracing machinery across processes and account for every packet.")
final class StressCommand implements Callable<Integer> {
    private static final Pattern DURATION = Pattern.compile("(\\d{1,9})(ms|s|m|h)");
    private static final long RING_SIZE = 64 * 1024;
    private static final int RING_MAX_RECORD = 4096;
    /** Writers sleep this long inside the spinlock on every 8th record under faults, so kills land there. */
    private static final int RING_HOLD_LOCK_MICROS = 2000;
    private static final Duration RING_HOSTILE_PHASE = Duration.ofSeconds(5);

    @Option(names = "--duration", defaultValue = "60s", paramLabel = "TIME",
            description = "How long the writers write: e.g. 500ms, 60s, 10m (default ${DEFAULT-VALUE}).")
    String duration;

    @Option(names = "--c-producers", defaultValue = "2", paramLabel = "N",
            description = "C producer processes alive at a time (default ${DEFAULT-VALUE}).")
    int cProducers;

    @Option(names = "--c-threads", defaultValue = "2", paramLabel = "N",
            description = "Writer threads per C producer (default ${DEFAULT-VALUE}).")
    int cThreads;

    @Option(names = "--threads", defaultValue = "2", paramLabel = "N",
            description = "Java writers on platform threads (default ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--virtual-threads", defaultValue = "2", paramLabel = "N",
            description = "Java writers on virtual threads (default ${DEFAULT-VALUE}).")
    int virtualThreads;

    @Option(names = "--rate", defaultValue = "1000", paramLabel = "N",
            description = "Packets per second per writer; 0 for as fast as it can (default ${DEFAULT-VALUE}).")
    int rate;

    @Option(names = "--min-packets", defaultValue = "0", paramLabel = "N",
            description = "Packets each writer writes at least, Java or C (not a killed one): the run goes on past"
                    + " its duration until they have (default ${DEFAULT-VALUE}).")
    long minPackets;

    @Option(names = "--sizes", defaultValue = "small:70,medium:25,large:5", paramLabel = "MIX",
            description = "Packet size weights: small (8-48 B), medium (100-900 B), large (2-16 KiB, spanning"
                    + " chunks with patched sizes) (default ${DEFAULT-VALUE}).")
    String sizes;

    @Option(names = "--seed", paramLabel = "N", description = "The random seed (default: a new one, printed).")
    Long seed;

    @Option(names = "--faults", description = "Kill C producers and ring writers with SIGKILL at random moments (one"
            + " of each at least, the run going on until then), replacing each, and run a hostile producer that"
            + " rewrites its SMB, commits garbage and tries to resize the sealed memfd.")
    boolean faults;

    @Option(names = "--hostile-clients", description = "Beside the writers, attack the service through a consumer port"
            + " and the producer port all run long (a producer that never takes a command, a consumer that never"
            + " reads, a crowd that connects and leaves) while normal consumers run sessions that must all end.")
    boolean hostileClients;

    @Option(names = "--ring-writers", defaultValue = "2", paramLabel = "N",
            description = "Writer processes of the SharedRingBuffer part, which runs alongside; 0 for none"
                    + " (default ${DEFAULT-VALUE}).")
    int ringWriters;

    @Option(names = "--soak", description = "Also sample this process's RSS, open descriptors and mappings every"
            + " second and fail if they grow (run for minutes: the first quarter is warm-up).")
    boolean soak;

    @Option(names = "--ring-kb", defaultValue = "8192", paramLabel = "KB",
            description = "The RING_BUFFER buffer's size (default ${DEFAULT-VALUE}).")
    long ringKb;

    @Option(names = "--discard-kb", defaultValue = "4096", paramLabel = "KB",
            description = "The DISCARD buffer's size (default ${DEFAULT-VALUE}).")
    long discardKb;

    @Option(names = "--out", paramLabel = "FILE", description = "Keep the trace in FILE (default: a temporary file,"
            + " deleted after the run).")
    Path out;

    @Option(names = "--c-program", paramLabel = "PATH",
            description = "The C stress producer (default: the C build's ffmtrace-stress-producer).")
    Path cProgram;

    @Override
    public Integer call() throws Exception {
        Duration length = parseDuration(duration);
        StressPacket.Mix mix;
        try {
            mix = StressPacket.Mix.parse(sizes);
        } catch (IllegalArgumentException e) {
            throw new CliFailure("--sizes " + sizes + ": " + e.getMessage(), CliFailure.USAGE);
        }
        if (ringKb < 4 || discardKb < 4) {
            throw new CliFailure("--ring-kb and --discard-kb must be at least 4", CliFailure.USAGE);
        }
        long runSeed = seed != null ? seed : ThreadLocalRandom.current().nextLong();
        Path program = cProgram != null ? cProgram
                : CProducerProcess.defaultProgram().resolveSibling("ffmtrace-stress-producer");
        Path ipcTool = program.resolveSibling("perfetto_ipc_tool");
        Path trace = out != null ? out : Files.createTempFile("ffmtrace-stress-", ".pftrace");
        // Deleted however the command ends, a refused option included.
        try {
            StressRun.Options options;
            try {
                options = new StressRun.Options(cProducers, cThreads, threads, virtualThreads, length, mix, runSeed,
                        rate, faults, soak, ringKb, discardKb, cProducers > 0 ? program : null, FfmtraceCommand.javaCommand(),
                        trace, hostileClients ? ipcTool : null, minPackets);
            } catch (IllegalArgumentException e) {
                throw new CliFailure(e.getMessage(), CliFailure.USAGE);
            }
            if (cProducers > 0 && !Files.isExecutable(program)) {
                throw new CliFailure("no C stress producer at " + program
                        + " (make -C native ffmtrace-stress-producer, or --c-producers 0)", CliFailure.FAILED);
            }
            if (hostileClients && !Files.isExecutable(ipcTool)) {
                throw new CliFailure("no perfetto_ipc_tool at " + ipcTool
                        + " (make -C native perfetto_ipc_tool, or no --hostile-clients)", CliFailure.FAILED);
            }
            if (ringWriters < 0) {
                throw new CliFailure("--ring-writers cannot be negative", CliFailure.USAGE);
            }
            Path ringProgram = program.resolveSibling("ring_stress_writer");
            if (ringWriters > 0 && !Files.isExecutable(ringProgram)) {
                throw new CliFailure("no ring stress writer at " + ringProgram
                        + " (make -C native ring_stress_writer, or --ring-writers 0)", CliFailure.FAILED);
            }
            PrintStream stdout = System.out;
            stdout.printf("stress: %.1f s, seed %d, %d C producers x %d threads, %d platform and %d virtual Java writers,"
                            + " %s packets/s per writer, sizes %s%s%n", length.toMillis() / 1000.0, runSeed, cProducers, cThreads, threads,
                    virtualThreads, rate == 0 ? "unpaced" : Integer.toString(rate), mix, faults ? ", faults on" : "");
            CompletableFuture<RingStress.Result> ring = ringWriters == 0 ? CompletableFuture.completedFuture(null)
                    : CompletableFuture.supplyAsync(() -> runRing(ringProgram, length, runSeed, stdout),
                            task -> Thread.ofPlatform().name("stress ring").start(task));
            StressRun.Report report = new StressRun(options, stdout).run();
            RingStress.Result ringResult = ring.join();
            print(report, stdout);
            if (ringResult != null) {
                print(ringResult, stdout);
            }
            boolean passed = report.ok() && (ringResult == null || ringResult.ok());
            stdout.println(passed ? "stress: PASS, every packet and record accounted for" : "stress: FAIL");
            return passed ? 0 : CliFailure.FAILED;
        } finally {
            if (out == null) {
                Files.deleteIfExists(trace);
            }
        }
    }

    /** The SharedRingBuffer part: its writers at the same rate, with kills inside the lock and a hostile phase under faults. */
    private RingStress.Result runRing(Path program, Duration length, long runSeed, PrintStream stdout) {
        try {
            return RingStress.run(new RingStress.Options(program, ringWriters, length, rate, runSeed, RING_SIZE,
                    RING_MAX_RECORD, faults, faults ? RING_HOLD_LOCK_MICROS : 0,
                    faults ? RING_HOSTILE_PHASE : Duration.ZERO, faults ? 1 : 0, 0), stdout);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    static Duration parseDuration(String text) throws CliFailure {
        Matcher matcher = DURATION.matcher(text.trim());
        if (!matcher.matches()) {
            throw new CliFailure("--duration " + text + ": expected a number and ms, s, m or h", CliFailure.USAGE);
        }
        long value = Long.parseLong(matcher.group(1));
        Duration length = switch (matcher.group(2)) {
            case "ms" -> Duration.ofMillis(value);
            case "s" -> Duration.ofSeconds(value);
            case "m" -> Duration.ofMinutes(value);
            default -> Duration.ofHours(value);
        };
        if (length.isZero()) {
            throw new CliFailure("--duration must be positive", CliFailure.USAGE);
        }
        return length;
    }

    private static void print(StressRun.Report report, PrintStream out) {
        StressVerifier.Result result = report.result();
        out.printf("%-8s %-7s %10s %10s %9s %9s %9s %11s %7s %5s %s%n", "writer", "buffer", "attempted", "read",
                "lost:flag", "lost:kill", "lost:disc", "unaccounted", "corrupt", "order", "last");
        for (StressVerifier.Account account : result.accounts()) {
            StressVerifier.Writer writer = account.writer();
            out.printf("%-8s %-7s %10d %10d %9d %9d %9d %11d %7d %5d %s%s%n", writer.name(),
                    writer.buffer() == 0 ? "ring" : "discard", writer.attempted(), account.read(),
                    account.lostFlagged(), account.lostAtKill(), account.lostDiscarded(), account.unaccounted(),
                    account.corrupt(), account.outOfOrder() + account.crossedSequences(),
                    account.sawLast() ? "yes" : writer.killed() ? "killed" : "no",
                    account.examples().isEmpty() ? "" : "  " + String.join("; ", account.examples()));
        }
        for (String example : result.strangerExamples()) {
            out.println("stress: " + example);
        }
        for (int i = 0; i < result.buffers().size(); i++) {
            StressVerifier.BufferCounters buffer = result.buffers().get(i);
            out.printf("buffer %d: %d chunks written, %d overwritten, %d discarded, %d ABI violations,"
                            + " %d patches failed, %d writer packet losses%n", i, buffer.chunksWritten(),
                    buffer.chunksOverwritten(), buffer.chunksDiscarded(), buffer.abiViolations(),
                    buffer.patchesFailed(), buffer.traceWriterPacketLoss());
        }
        out.printf("service: %d invalid packets, %d chunks discarded (producers gone), %d violations counted%n",
                result.invalidPackets(), result.serviceChunksDiscarded(), report.serviceViolations());
        if (!report.hostile().isEmpty()) {
            out.printf("hostile producer: %s (commits, SMB rewrites, resize attempts, resizes refused); %d of its"
                    + " packets in the trace, not verified%s%n", report.hostile(), result.hostilePackets(),
                    report.hostileResizesAllRefused() ? "" : "; A RESIZE OF THE SEALED SMB SUCCEEDED");
        }
        out.printf("stress: %d writers (%d Java, %d C processes of which %d killed) in %.1f s: %d packets attempted,"
                        + " %d read intact, %d lost and accounted, %d unaccounted, %d strangers%n",
                result.accounts().size(), report.javaWriters(), report.cProcesses(), report.killed(),
                report.elapsed().toMillis() / 1000.0, result.attempted(), result.read(), result.lost(),
                result.unaccounted(), result.strangers());
        for (String problem : report.problems()) {
            out.println("stress: " + problem);
        }
        HostileClients.Result clients = report.hostileClients();
        if (clients != null) {
            out.printf("hostile clients: %d rounds of attacks; %d normal sessions ended and read, %d failed;"
                            + " %d clients disconnected for not reading%n", clients.rounds(), clients.sessions(),
                    clients.failures().size(), clients.sendTimeouts());
            for (String failure : clients.failures()) {
                out.println("hostile clients: " + failure);
            }
        }
        ProcessFootprint.Verdict soak = report.soak();
        if (soak != null) {
            out.printf("soak: %d samples; RSS %d MiB before, %d MiB at peak, %d MiB after; descriptors %d, %d, %d;"
                            + " mappings %d, %d, %d%s%n", soak.samples(), soak.before().rssKb() / 1024,
                    soak.peak().rssKb() / 1024, soak.after().rssKb() / 1024, soak.before().fds(), soak.peak().fds(),
                    soak.after().fds(), soak.before().mappings(), soak.peak().mappings(), soak.after().mappings(),
                    soak.flat() ? ": flat" : ": " + String.join("; ", soak.problems()));
        }
    }

    private static void print(RingStress.Result ring, PrintStream out) {
        out.printf("ring: %d writers in all, %d kills (%d holding the lock, %d lock takeovers); %d records attempted,"
                        + " %d read intact, %d dropped and announced, %d lost with killed writers, %d unaccounted,"
                        + " %d problems%s%n", ring.writersStarted(), ring.kills(), ring.killsHoldingLock(),
                ring.takeovers(), ring.attempted(), ring.read(), ring.dropped(), ring.lostWithKills(),
                ring.unaccounted(), ring.problemCount(), ring.poisoned() ? "; THE LOCK WAS POISONED" : "");
        for (String problem : ring.problems()) {
            out.println("ring: " + problem);
        }
        RingStress.Hostile hostile = ring.hostile();
        if (hostile != null) {
            out.printf("ring, hostile phase: %d metadata rewrites, %d records read, %d corrupt reads, %d bad records"
                            + " (all excused)%s%n", hostile.rewrites(), hostile.recordsRead(), hostile.corruptReads(),
                    hostile.badRecords(), hostile.failure() == null ? "" : "; THE READER FAILED: " + hostile.failure());
        }
    }
}
