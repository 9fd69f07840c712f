package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
        assertThrows(IllegalArgumentException.class, () -> CommitPathWarmUp.run(-1, 100));
        assertThrows(IllegalArgumentException.class, () -> CommitPathWarmUp.run(0, -1));
    }

    @Test
    void roundsEachCommitTheirTraceAndSumTheirCounts() throws Exception {
        assertEquals(new CommitPathWarmUp.Result(0, 0, 0, 0), CommitPathWarmUp.run(0, 3_000));
        CommitPathWarmUp.Result two = CommitPathWarmUp.run(2, 3_000);
        // Each round commits tens of chunks of its own: two rounds, twice the floor of one.
        assertTrue(two.chunksMoved() >= 40, two.toString());
        assertEquals(0, two.violations(), two.toString());
        assertEquals(new CommitPathWarmUp.Result(3, 5, 7, 9),
                new CommitPathWarmUp.Result(1, 2, 3, 4).plus(new CommitPathWarmUp.Result(2, 3, 4, 5)));
    }
}
