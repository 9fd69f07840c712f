package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * {@link CommitPathWarmUp}: its trace goes through a real producer port's commit path,
 * whole (nothing refused, nothing dropped), and it leaves nothing behind.
 */
class CommitPathWarmUpTest {
    @Test
    void commitsItsTraceThroughAProducerPortAndLosesNothing() throws Exception {
        CommitPathWarmUp.Result result = CommitPathWarmUp.run(3_000);
        // 3,000 iterations of six small packets fill tens of 4 KiB chunks.
        assertTrue(result.chunksMoved() >= 20, result.toString());
        // Half of each writer's iterations fill whole chunks: packets cross their ends with sizes open.
        assertTrue(result.patchesApplied() > 0, result.toString());
        assertEquals(0, result.violations(), result.toString());
        assertEquals(0, result.eventsDiscarded(), result.toString());
    }

    @Test
    void leavesNoThreadOfItsOwnRunning() throws Exception {
        CommitPathWarmUp.run(100);
        // Every thread it started is joined or ended by the time it returns: none is left by name.
        assertTrue(Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
                        .noneMatch(name -> name.equals("ffmtrace-warm-up")),
                "a warm-up thread outlived the warm-up");
    }

    @Test
    void refusesANegativeCount() {
        assertThrows(IllegalArgumentException.class, () -> CommitPathWarmUp.run(-1));
        assertThrows(IllegalArgumentException.class, () -> CommitPathWarmUp.runUntilSettled(-1, 100));
        assertThrows(IllegalArgumentException.class, () -> CommitPathWarmUp.runUntilSettled(0, -1));
    }

    @Test
    void roundsEachCommitTheirTraceAndSumTheirCounts() throws Exception {
        assertEquals(new CommitPathWarmUp.Rounds(new CommitPathWarmUp.Result(0, 0, 0, 0), 0, false),
                CommitPathWarmUp.runUntilSettled(0, 3_000));
        // Fewer rounds allowed than the least it runs: that many; a JIT compiling all along is not settled.
        long[] compiled = {0};
        CommitPathWarmUp.Rounds two = CommitPathWarmUp.runUntilSettled(2, 3_000, () -> compiled[0] += 1_000_000);
        assertEquals(2, two.rounds());
        assertFalse(two.jitSettled());
        // Each round commits tens of chunks of its own: two rounds, twice the floor of one.
        assertTrue(two.counts().chunksMoved() >= 40, two.toString());
        assertEquals(0, two.counts().violations(), two.toString());
        assertEquals(new CommitPathWarmUp.Result(3, 5, 7, 9),
                new CommitPathWarmUp.Result(1, 2, 3, 4).plus(new CommitPathWarmUp.Result(2, 3, 4, 5)));
    }

    @Test
    void runsUntilTheJitCompilesNoLongerThanATenthOfTwoRoundsInARow() throws Exception {
        // Compilation time after each round (the first value is read before the first round):
        // busy for five rounds, quiet in the sixth, busy in the seventh, quiet in the eighth and ninth.
        long[] clock = {0, 100_000, 200_000, 300_000, 400_000, 500_000, 500_000, 600_000, 600_000, 600_000, 700_000};
        CommitPathWarmUp.Rounds rounds = CommitPathWarmUp.runUntilSettled(20, 100, script(clock));
        assertEquals(9, rounds.rounds(), rounds.toString());
        assertTrue(rounds.jitSettled());
    }

    @Test
    void quietRoundsSettleTheJitOnlyAfterTheLeastRounds() throws Exception {
        CommitPathWarmUp.Rounds rounds = CommitPathWarmUp.runUntilSettled(20, 100, () -> 42);
        assertEquals(CommitPathWarmUp.MIN_ROUNDS, rounds.rounds());
        assertTrue(rounds.jitSettled());
    }

    @Test
    void aJitThatNeverSettlesStopsAtTheMostRounds() throws Exception {
        long[] compiled = {0};
        CommitPathWarmUp.Rounds rounds = CommitPathWarmUp.runUntilSettled(7, 100, () -> compiled[0] += 1_000_000);
        assertEquals(7, rounds.rounds());
        assertFalse(rounds.jitSettled());
    }

    @Test
    void aJvmThatDoesNotTellRunsTheLeastRoundsUnsettled() throws Exception {
        CommitPathWarmUp.Rounds rounds = CommitPathWarmUp.runUntilSettled(20, 100, () -> JitActivity.UNKNOWN);
        assertEquals(CommitPathWarmUp.MIN_ROUNDS, rounds.rounds());
        assertFalse(rounds.jitSettled());
    }

    @Test
    void thisJvmTellsItsCompilationTime() {
        // The serve daemon's warm-up depends on it: HotSpot with its JIT reports it.
        long compiled = JitActivity.compiledMillis();
        assertTrue(compiled >= 0, "compiled " + compiled);
    }

    /** A compilation clock that reads {@code values} in turn. */
    private static java.util.function.LongSupplier script(long[] values) {
        int[] next = {0};
        return () -> values[next[0]++];
    }
}
