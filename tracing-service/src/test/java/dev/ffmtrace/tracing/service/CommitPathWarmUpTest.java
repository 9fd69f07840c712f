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
    }
}
