package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.cli.stress.HostilePeer;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import perfetto.protos.TraceOuterClass;
import perfetto.protos.TracePacketOuterClass;

/** {@code stress}: a short run passes, its report agrees with its trace, bad options fail in one line. */
class StressCommandTest {
    private static final Pattern TOTALS = Pattern.compile(
            "(\\d+) packets attempted, (\\d+) read intact, (\\d+) lost and accounted, (\\d+) unaccounted, (\\d+) strangers");

    @TempDir
    Path dir;

    @Test
    void javaWritersOnlyPassAndTheReportMatchesTheTrace() throws Exception {
        Path trace = dir.resolve("stress.pftrace");
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("stress", "--duration", "2s", "--c-producers", "0",
                "--ring-writers", "0",
                "--threads", "2", "--virtual-threads", "2", "--seed", "7", "--discard-kb", "16", "--min-packets", "2500",
                "--out", trace.toString());
        assertEquals(0, run.exit(), run.out() + run.err());
        assertTrue(run.out().contains("stress: PASS, every packet and record accounted for"), run.out());
        Matcher totals = TOTALS.matcher(run.out());
        assertTrue(totals.find(), run.out());
        long attempted = Long.parseLong(totals.group(1));
        long read = Long.parseLong(totals.group(2));
        long lost = Long.parseLong(totals.group(3));
        assertEquals(attempted, read + lost);
        // Every packet holds 8 bytes of strings at least: the discard buffer's writers each
        // write 20,000 bytes at least, more than its 16 KiB.
        assertTrue(lost > 0, "the 16 KiB discard buffer overflowed: " + run.out());

        // protobuf-java, not the verifier's decoder, counts the stress packets in the file.
        long stressPackets = 0;
        try (InputStream in = Files.newInputStream(trace)) {
            for (TracePacketOuterClass.TracePacket packet : TraceOuterClass.Trace.parseFrom(in).getPacketList()) {
                if (packet.hasForTesting()) {
                    stressPackets++;
                }
            }
        }
        assertEquals(read, stressPackets);
    }

    @Test
    void withFaultsAHostileProducerAttacksAndTheOthersLoseNothingUncounted() {
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("stress", "--duration", "4s", "--c-producers", "0",
                "--ring-writers", "0",
                "--threads", "1", "--virtual-threads", "1", "--seed", "5", "--faults");
        assertEquals(0, run.exit(), run.out() + run.err());
        assertTrue(run.out().contains("stress: PASS, every packet and record accounted for"), run.out());
        Matcher hostile = Pattern.compile("hostile producer: H (\\d+) (\\d+) (\\d+) (\\d+) ").matcher(run.out());
        assertTrue(hostile.find(), run.out());
        assertTrue(Long.parseLong(hostile.group(1)) >= HostilePeer.MIN_COMMITS, "garbage commits sent: " + run.out());
        assertTrue(Long.parseLong(hostile.group(3)) > 0, "resize attempts (the first commit makes one): " + run.out());
        assertEquals(hostile.group(3), hostile.group(4), "every resize of the sealed SMB refused");
        Matcher violations = Pattern.compile("(\\d+) violations counted").matcher(run.out());
        assertTrue(violations.find() && Long.parseLong(violations.group(1)) > 0, "the service counted the attack: "
                + run.out());
    }

    @Test
    void cProducersKilledMidWriteLoseAtMostTheirLastPackets() {
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("stress", "--duration", "6s", "--c-producers", "2",
                "--threads", "1", "--virtual-threads", "1", "--seed", "9", "--faults");
        assertEquals(0, run.exit(), run.out() + run.err());
        assertTrue(run.out().contains("stress: PASS, every packet and record accounted for"), run.out());
        Matcher processes = Pattern.compile("(\\d+) C processes of which (\\d+) killed").matcher(run.out());
        assertTrue(processes.find(), run.out());
        assertTrue(Integer.parseInt(processes.group(2)) > 0, "faults kill one at least: " + run.out());
        assertEquals(Integer.parseInt(processes.group(1)), 2 + Integer.parseInt(processes.group(2)),
                "each killed producer was replaced");
        assertTrue(run.out().contains(" killed\n") || run.out().contains(" killed  "), run.out());
        // The SharedRingBuffer part ran alongside, with kills inside its spinlock.
        Matcher ring = Pattern.compile("ring: (\\d+) writers in all, (\\d+) kills .* (\\d+) unaccounted, (\\d+) problems")
                .matcher(run.out());
        assertTrue(ring.find(), run.out());
        assertTrue(Long.parseLong(ring.group(2)) > 0, run.out());
        assertEquals("0", ring.group(3));
        assertEquals("0", ring.group(4));
        assertTrue(run.out().contains("ring, hostile phase: "), run.out());
    }

    @Test
    void aNegativeSeedReachesTheCProducersAndAFailingProducerFailsTheRun() {
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("stress", "--duration", "2s", "--c-producers", "1",
                "--c-threads", "1", "--threads", "0", "--virtual-threads", "0", "--ring-writers", "0", "--seed", "-3",
                "--min-packets", "101");
        assertEquals(0, run.exit(), run.out() + run.err());
        Matcher writer = Pattern.compile("\\n1/0 +ring +(\\d+) +(\\d+) ").matcher(run.out());
        assertTrue(writer.find(), run.out());
        assertTrue(Long.parseLong(writer.group(1)) > 100, "the C writer wrote: " + run.out());

        // A C producer that exits at once with a failure status wrote nothing to account
        // for: the run fails on the process, not on its packets.
        ConvertAndDumpTest.Run failing = ConvertAndDumpTest.run("stress", "--duration", "1s", "--c-producers", "1",
                "--threads", "1", "--virtual-threads", "0", "--ring-writers", "0", "--c-program", "/bin/false");
        assertEquals(CliFailure.FAILED, failing.exit(), failing.out() + failing.err());
        assertTrue(failing.out().contains("exited with status 1"), failing.out());
        assertTrue(failing.out().contains("stress: FAIL"), failing.out());
    }

    @Test
    void badOptionsFailInOneLine() {
        ConvertAndDumpTest.Run duration = ConvertAndDumpTest.run("stress", "--duration", "5x");
        assertEquals(CliFailure.USAGE, duration.exit());
        assertEquals("ffmtrace stress: --duration 5x: expected a number and ms, s, m or h", duration.err().strip());

        ConvertAndDumpTest.Run nothing = ConvertAndDumpTest.run("stress", "--c-producers", "0", "--threads", "0",
                "--virtual-threads", "0");
        assertEquals(CliFailure.USAGE, nothing.exit());
        assertEquals("ffmtrace stress: nothing would write: give C producers or Java threads", nothing.err().strip());

        ConvertAndDumpTest.Run sizes = ConvertAndDumpTest.run("stress", "--sizes", "huge:3");
        assertEquals(CliFailure.USAGE, sizes.exit());
        assertEquals("ffmtrace stress: --sizes huge:3: no size class \"huge\" (small, medium, large)", sizes.err().strip());
    }

    @Test
    void hostileClientsComeAndGoWhileEveryNormalSessionEnds() {
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("stress", "--duration", "3s", "--c-producers", "0",
                "--threads", "1", "--virtual-threads", "0", "--ring-writers", "0", "--hostile-clients");
        assertEquals(0, run.exit(), run.out() + run.err());
        Matcher clients = Pattern.compile("hostile clients: (\\d+) rounds of attacks; (\\d+) normal sessions ended and"
                + " read, 0 failed").matcher(run.out());
        assertTrue(clients.find(), run.out());
        assertTrue(Integer.parseInt(clients.group(1)) > 0 && Integer.parseInt(clients.group(2)) > 0, run.out());
    }

    /**
     * Without {@code --out} the run's trace is a temporary file: deleted however the command
     * ends, a refused option included (a second JVM, so that its temporary directory is the
     * test's and nothing else writes there).
     */
    @Test
    void theTemporaryTraceIsDeletedWhetherTheRunIsRefusedOrRuns() throws Exception {
        Path tmp = Files.createDirectory(dir.resolve("tmp"));
        List<String> jvmOptions = List.of("-Djava.io.tmpdir=" + tmp);
        ConvertAndDumpTest.Run refused = CliProcess.start("", jvmOptions, "stress", "--c-producers", "0",
                "--threads", "0", "--virtual-threads", "0").await();
        assertEquals(CliFailure.USAGE, refused.exit(), refused.err());
        ConvertAndDumpTest.Run ran = CliProcess.start("", jvmOptions, "stress", "--duration", "200ms",
                "--c-producers", "0", "--threads", "1", "--virtual-threads", "0", "--ring-writers", "0").await();
        assertEquals(0, ran.exit(), ran.out() + ran.err());
        try (var left = Files.list(tmp)) {
            assertEquals(List.of(), left.toList());
        }
    }
}
