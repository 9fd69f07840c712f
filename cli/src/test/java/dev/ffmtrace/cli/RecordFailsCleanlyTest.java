package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.tracing.trackevent.TrackEventReader;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import perfetto.protos.TraceOuterClass.Trace;
import perfetto.protos.TracePacketOuterClass.TracePacket;

/**
 * {@code record}'s failures: each one line on stderr and a non-zero exit, checked before
 * anything is recorded where it can be; an existing trace file kept until there is a new
 * trace; a signal writes the trace so far; a failing snapshot loses nothing else.
 */
class RecordFailsCleanlyTest {
    private static final Pattern WROTE = Pattern.compile("wrote ([\\d,]+) packets, ([\\d,]+) bytes to ");
    private static final Pattern SUMMARY = Pattern.compile("# summary: (\\d+) packets,");

    @TempDir
    Path dir;

    private Path config(int durationMs) throws IOException {
        Path config = dir.resolve("demo-" + durationMs + ".pbtxt");
        Files.writeString(config, Files.readString(Path.of("../configs/demo.pbtxt"))
                .replace("duration_ms: 2000", "duration_ms: " + durationMs)
                .replace("flush_period_ms: 250", "flush_period_ms: 100"));
        return config;
    }

    /** Exactly one line, naming the command, and no trace of a Java exception. */
    private static void assertOneLineError(ConvertAndDumpTest.Run run, int exit, String expected) {
        assertEquals(exit, run.exit(), run.err() + run.out());
        assertEquals(1, run.err().lines().count(), run.err());
        assertEquals("ffmtrace record: " + expected + "\n", run.err());
        assertFalse(run.out().contains("recording"), "failed before recording: " + run.out());
    }

    @Test
    void aConfigThatCannotBeReadIsOneLine() throws Exception {
        Path out = dir.resolve("x.pftrace");
        Path missing = dir.resolve("missing.pbtxt");
        assertOneLineError(ConvertAndDumpTest.run("record", "--config", missing.toString(), "--out", out.toString()),
                2, "--config " + missing + ": no such file or directory");
        assertOneLineError(ConvertAndDumpTest.run("record", "--config", dir.toString(), "--out", out.toString()),
                2, "--config " + dir + ": is a directory");
        Path broken = dir.resolve("broken.pbtxt");
        Files.writeString(broken, "buffers { size_kb: 64 }\nduration_ms: soon\n");
        assertOneLineError(ConvertAndDumpTest.run("record", "--config", broken.toString(), "--out", out.toString()),
                2, broken + ":2:14: Couldn't parse integer: For input string: \"soon\"");
        assertOneLineError(ConvertAndDumpTest.run("record", "--config", broken.toString()),
                2, "Missing required option: '--out=FILE.pftrace' (see ffmtrace record --help)");
        assertFalse(Files.exists(out));
    }

    @ParameterizedTest
    @ValueSource(strings = {"--out", "--snapshot"})
    void anOutputInAMissingDirectoryOrOnADirectoryIsRefusedBeforeRecording(String option) throws Exception {
        String config = config(200).toString();
        Path out = dir.resolve("x.pftrace");
        Path inMissing = dir.resolve("no-such-dir").resolve("x.pftrace");
        String other = option.equals("--out") ? "--snapshot" : "--out";
        assertOneLineError(ConvertAndDumpTest.run("record", "--config", config, option, inMissing.toString(),
                other, out.toString()), 2, option + " " + inMissing + ": no such directory " + inMissing.getParent());
        assertOneLineError(ConvertAndDumpTest.run("record", "--config", config, option, dir.toString(),
                other, out.toString()), 2, option + " " + dir + ": is a directory");
        assertEquals(List.of("demo-200.pbtxt"), listDir(), "nothing written, no temporary file left");
    }

    @Test
    void triggerConfigsThatRecordCannotServeAreRefusedBeforeRecording() throws Exception {
        Path out = dir.resolve("x.pftrace");
        Path stop = dir.resolve("stop.pbtxt");
        Files.writeString(stop, Files.readString(config(60_000)) + "\ntrigger_config { trigger_mode: STOP_TRACING"
                + " trigger_timeout_ms: 1000 triggers { name: \"crash\" } }\n");
        assertOneLineError(ConvertAndDumpTest.run("record", "--config", stop.toString(), "--out", out.toString()), 2,
                "--config " + stop + ": trigger_config needs producers that can activate triggers: record it on a"
                        + " tracing service (--service SOCKET)");
        Path clone = dir.resolve("clone.pbtxt");
        Files.writeString(clone, Files.readString(stop).replace("STOP_TRACING", "CLONE_SNAPSHOT"));
        assertOneLineError(ConvertAndDumpTest.run("record", "--config", clone.toString(), "--out", out.toString()), 2,
                "--config " + clone + ": trigger_config needs producers that can activate triggers: let them connect"
                        + " (--producer-socket ADDRESS)");
        assertFalse(Files.exists(out));
    }

    @Test
    void aDeviceThatRefusesWritesFailsBeforeRecording() throws Exception {
        assertOneLineError(ConvertAndDumpTest.run("record", "--config", config(60_000).toString(), "--out", "/dev/full"),
                1, "--out /dev/full: No space left on device");
    }

    @Test
    void anExistingTraceStaysWholeWhenRecordingFails() throws Exception {
        Path out = dir.resolve("precious.pftrace");
        byte[] precious = "an earlier trace".getBytes(StandardCharsets.UTF_8);
        Files.write(out, precious);
        // The C producer's program is looked for once the output is open.
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("record", "--config", config(200).toString(),
                "--out", out.toString(), "--c-producer=" + dir.resolve("no-such-program"));
        assertEquals(2, run.exit(), run.err());
        assertArrayEquals(precious, Files.readAllBytes(out));
        assertEquals(List.of("demo-200.pbtxt", "precious.pftrace"), listDir(), "no temporary file left");

        run = ConvertAndDumpTest.run("record", "--config", config(200).toString(), "--out", out.toString(), "--threads", "1");
        assertEquals(0, run.exit(), run.err());
        assertTrue(Trace.parseFrom(Files.readAllBytes(out)).getPacketCount() > 1, "replaced by the new trace");
        assertEquals(List.of("demo-200.pbtxt", "precious.pftrace"), listDir());
    }

    @Test
    void aFifoGetsTheTraceWhenItsReaderComes() throws Exception {
        Path fifo = dir.resolve("trace.fifo");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start().waitFor());
        CompletableFuture<byte[]> read = CompletableFuture.supplyAsync(() -> {
            try (InputStream in = Files.newInputStream(fifo)) {
                return in.readAllBytes();
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        }, Thread::startVirtualThread);
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("record", "--config", config(300).toString(),
                "--out", fifo.toString(), "--threads", "2");
        assertEquals(0, run.exit(), run.err());
        byte[] bytes = read.get();
        assertEquals(packetsWritten(run), Trace.parseFrom(bytes).getPacketCount());
        assertTrue(TrackEventReader.read(MemorySegment.ofArray(bytes)).events().size() > 10);
        assertTrue(Files.exists(fifo) && !Files.isRegularFile(fifo), "still the FIFO");
    }

    @Test
    void aFailingSnapshotKeepsTheWorkersAndTheMainTrace() throws Exception {
        Path out = dir.resolve("main.pftrace");
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("record", "--config", config(800).toString(),
                "--out", out.toString(), "--snapshot", "/dev/full", "--threads", "2");
        assertEquals(1, run.exit(), run.err() + run.out());
        assertEquals("ffmtrace record: --snapshot /dev/full: No space left on device (the recording goes on)\n", run.err());
        byte[] bytes = Files.readAllBytes(out);
        assertEquals(packetsWritten(run), Trace.parseFrom(bytes).getPacketCount());
        // The workers went on after the snapshot failed, halfway: each was stopped by the session's stop, which
        // comes once its 800 ms have passed, and wrote its "stopped" instant then.
        long started = Trace.parseFrom(bytes).getPacketList().stream()
                .filter(packet -> packet.hasServiceEvent() && packet.getServiceEvent().getTracingStarted())
                .mapToLong(TracePacket::getTimestamp).findFirst().orElseThrow();
        TrackEventReader.Decoded decoded = TrackEventReader.read(MemorySegment.ofArray(bytes));
        Map<String, Long> stoppedAfterMs = decoded.events().stream().filter(event -> "stopped".equals(event.name()))
                .collect(Collectors.toMap(event -> decoded.tracks().get(event.trackUuid()).threadName(),
                        event -> (event.timestamp() - started) / 1_000_000));
        assertEquals(Set.of("demo worker 0", "demo worker 1"), stoppedAfterMs.keySet(), stoppedAfterMs.toString());
        assertTrue(stoppedAfterMs.values().stream().allMatch(ms -> ms >= 800), "stopped at the session's stop: "
                + stoppedAfterMs);
    }

    @Test
    void recordCountsThePacketsDumpCounts() throws Exception {
        Path out = dir.resolve("counted.pftrace");
        Path snapshot = dir.resolve("snapshot.pftrace");
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("record", "--config", config(300).toString(),
                "--out", out.toString(), "--snapshot", snapshot.toString(), "--threads", "2");
        assertEquals(0, run.exit(), run.err());
        Matcher wrote = WROTE.matcher(run.out());
        assertTrue(wrote.find(), run.out());
        assertEquals(Files.size(out), Long.parseLong(wrote.group(2).replace(",", "")));
        assertEquals(packetsWritten(run), dumpedPackets(out));
        Matcher snapshotLine = Pattern.compile("snapshot of ([\\d,]+) packets written").matcher(run.out());
        assertTrue(snapshotLine.find(), run.out());
        assertEquals(Long.parseLong(snapshotLine.group(1).replace(",", "")), dumpedPackets(snapshot));
    }

    @Test
    void aConfigWithTrackEventOnlyRecordsEvents() throws Exception {
        Path config = dir.resolve("events-only.pbtxt");
        Files.writeString(config, "buffers { size_kb: 1024 }\ndata_sources { config { name: \"track_event\" } }\n"
                + "duration_ms: 300\nflush_period_ms: 100\n");
        Path out = dir.resolve("events.pftrace");
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("record", "--config", config.toString(),
                "--out", out.toString(), "--threads", "2");
        assertEquals(0, run.exit(), run.err());
        assertTrue(run.out().contains("note: the config does not start \"counters\""), run.out());
        TrackEventReader.Decoded decoded = TrackEventReader.read(MemorySegment.ofArray(Files.readAllBytes(out)));
        // Each demo thread writes one request at least.
        Set<String> requesting = decoded.events().stream().filter(event -> "request".equals(event.name()))
                .map(event -> decoded.tracks().get(event.trackUuid()).threadName()).collect(Collectors.toSet());
        assertEquals(Set.of("demo worker 0", "demo worker 1"), requesting, "slices of the demo threads");
        assertTrue(decoded.events().stream().noneMatch(event -> event.counterValue() != null
                && decoded.tracks().get(event.trackUuid()).name().startsWith("JVM heap")), "no counters: not started");
    }

    @ParameterizedTest
    @ValueSource(strings = {"INT", "TERM"})
    void aSignalStopsTheRecordingAndWritesTheTraceSoFar(String signal) throws Exception {
        Path out = dir.resolve("signalled.pftrace");
        CliProcess record = CliProcess.start("record", "--config", config(600_000).toString(), "--out", out.toString(),
                "--threads", "2");
        record.awaitLine(line -> line.contains("bytes written to the buffers"));
        record.kill(signal);
        ConvertAndDumpTest.Run run = record.await();
        byte[] bytes = Files.readAllBytes(out);
        assertTrue(TrackEventReader.read(MemorySegment.ofArray(bytes)).events().size() > 10,
                "the demo's events so far: " + bytes.length + " bytes");
        Trace trace = Trace.parseFrom(bytes);
        assertTrue(trace.getPacketList().stream().anyMatch(TracePacket::hasTraceStats));
        assertEquals(packetsWritten(run), trace.getPacketCount());
        assertEquals(128 + (signal.equals("INT") ? 2 : 15), run.exit(), "the JVM's status for the signal: " + run.err());
        assertEquals("", run.err());
        assertTrue(run.out().contains("stopping early on a signal"), run.out());
    }

    @Test
    void aThreadLimitIsOneLine() throws Exception {
        // Address space for a small JVM (about 1.2 GB here) and a few dozen 8 MB thread stacks, not for a
        // thousand; a limit on processes would not do, as root ignores it.
        CliProcess record = CliProcess.start("ulimit -v 1700000", List.of("-Xss8m", "-Xmx64m",
                "-XX:+UseSerialGC", "-XX:CompressedClassSpaceSize=64m", "-XX:ReservedCodeCacheSize=32m"), "record", "--config", config(600_000).toString(),
                "--out", dir.resolve("x.pftrace").toString(), "--threads", "1000");
        ConvertAndDumpTest.Run run = record.await();
        assertEquals(1, run.exit(), run.err() + run.out());
        assertTrue(run.err().matches("ffmtrace record: cannot start demo thread \\d+ of 1000: unable to create native thread"
                + "[^\n]*\n"), run.err());
        assertEquals(List.of("demo-600000.pbtxt"), listDir(), "no trace, no temporary file");
    }

    @Test
    void aMemfdLimitIsOneLine() throws Exception {
        // Files of at most 1 MB: the SMB's memfd cannot take its 4 MB.
        CliProcess record = CliProcess.start("ulimit -f 1024", List.of(), "record", "--config", config(600_000).toString(),
                "--out", dir.resolve("x.pftrace").toString());
        ConvertAndDumpTest.Run run = record.await();
        assertEquals(1, run.exit(), run.err() + run.out());
        assertTrue(run.err().matches("ffmtrace record: cannot set up the shared memory of the demo producer: "
                + "ftruncate\\(\\d+, \\d+\\) failed: EFBIG \\(File too large\\)\n"), run.err());
    }

    private static long packetsWritten(ConvertAndDumpTest.Run run) {
        Matcher wrote = WROTE.matcher(run.out());
        assertTrue(wrote.find(), run.out());
        return Long.parseLong(wrote.group(1).replace(",", ""));
    }

    private static long dumpedPackets(Path trace) {
        ConvertAndDumpTest.Run dump = ConvertAndDumpTest.run("dump", trace.toString());
        assertEquals(0, dump.exit(), dump.err());
        Matcher summary = SUMMARY.matcher(dump.out());
        assertTrue(summary.find(), dump.out());
        return Long.parseLong(summary.group(1));
    }

    private List<String> listDir() throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(file -> file.getFileName().toString()).sorted().toList();
        }
    }
}
