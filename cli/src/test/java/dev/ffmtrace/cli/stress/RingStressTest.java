package dev.ffmtrace.cli.stress;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.testing.CPrograms;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** RingStress: the clean books balance, with and without kills; hostile rewrites crash nothing. */
class RingStressTest {
    /** The native module builds every program before this module's tests; Maven runs them in cli/. */
    private static final Path WRITER = Path.of("").toAbsolutePath().getParent()
            .resolve("native/target/bin/ring_stress_writer");

    private static RingStress.Options options(Path program, int writers, Duration duration, int rate, boolean faults,
                                              int holdMicros, Duration hostile, int minKills, long minRecords) {
        return new RingStress.Options(program, writers, duration, rate, 42, 64 * 1024, 2048, faults, holdMicros, hostile,
                minKills, minRecords);
    }

    private static RingStress.Result run(RingStress.Options options) throws Exception {
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        RingStress.Result result = RingStress.run(options, new PrintStream(log, true, StandardCharsets.UTF_8));
        System.out.print(log.toString(StandardCharsets.UTF_8));
        return result;
    }

    /** Also with the writers built with ASan and UBSan: a finding's exit status is a problem of the run. */
    @ParameterizedTest(name = "sanitized: {0}")
    @ValueSource(booleans = {false, true})
    void aCleanRunAccountsForEveryRecord(boolean sanitized) throws Exception {
        Path program = sanitized ? CPrograms.sanitized("ring_stress_writer") : WRITER;
        // A thousand records read at least, however slowly: the phase goes on until the reader has read them.
        RingStress.Result result = run(options(program, 2, Duration.ofSeconds(2), 0, false, 0, Duration.ZERO, 0, 1000));
        assertTrue(result.ok(), result.toString());
        assertEquals(0, result.kills());
        assertTrue(result.read() >= 1000, "records read: " + result.read());
        assertEquals(result.attempted(), result.read() + result.dropped(), result.toString());
        assertNull(result.hostile());
    }

    @Test
    void killedWritersLoseAtMostTheirRecordInFlightAndTheOthersGoOn() throws Exception {
        // Five kills at least, however long they take on a loaded machine: the phase waits for them. The first is
        // inside the lock, and after each the phase waits for the reader to read on (a stall is a problem).
        RingStress.Result result = run(options(WRITER, 3, Duration.ofSeconds(6), 0, true, 2000, Duration.ZERO, 5, 0));
        assertTrue(result.ok(), result.toString());
        assertTrue(result.kills() >= 5, "kills: " + result.kills());
        assertTrue(result.killsHoldingLock() >= 1, "no kill landed inside the lock: " + result);
        assertTrue(result.lostWithKills() <= result.kills());
        assertTrue(result.minReadsAfterKill() > 0, "the reader stalled after a kill: " + result);
        assertFalse(result.poisoned());
        assertEquals(result.attempted(), result.read() + result.dropped() + result.lostWithKills(), result.toString());
    }

    @Test
    void hostileRewritesOfTheMetadataAreCountedAndCrashNothing() throws Exception {
        RingStress.Result result = run(options(WRITER, 2, Duration.ofSeconds(1), 0, false, 0, Duration.ofSeconds(3), 0, 0));
        assertTrue(result.ok(), result.toString());
        RingStress.Hostile hostile = result.hostile();
        assertNull(hostile.failure());
        assertTrue(hostile.rewrites() >= RingStress.MIN_HOSTILE_REWRITES, hostile.toString());
        assertTrue(hostile.corruptReads() > 0, "the reader found nothing corrupt: " + hostile);
    }
}
