package dev.ffmtrace.cli.stress;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;

/** The soak's verdict: warm-up forgiven, growth after it and leftovers after the run not. */
class ProcessFootprintTest {
    private static final ProcessFootprint BEFORE = new ProcessFootprint(100_000, 40, 300);

    private static List<ProcessFootprint> samples(IntFunction<ProcessFootprint> at) {
        List<ProcessFootprint> samples = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            samples.add(at.apply(i));
        }
        return samples;
    }

    @Test
    void aRunThatWarmsUpThenHoldsStillIsFlat() {
        // The first quarter grows (heap, JIT, threads), then everything wobbles within the slack.
        List<ProcessFootprint> samples = samples(i -> i < 10
                ? new ProcessFootprint(100_000 + i * 20_000, 40 + i, 300 + 5 * i)
                : new ProcessFootprint(300_000 + (i % 3) * 10_000, 50 + i % 4, 350 + i % 5));
        ProcessFootprint.Verdict verdict = ProcessFootprint.judge(BEFORE, samples,
                new ProcessFootprint(310_000, 40, 310), 25, 16);
        assertTrue(verdict.flat(), verdict.problems().toString());
        assertEquals(40, verdict.samples());
    }

    @Test
    void aDescriptorPerKilledProducerIsALeak() {
        List<ProcessFootprint> samples = samples(i -> new ProcessFootprint(300_000, 50 + i, 350));
        ProcessFootprint.Verdict verdict = ProcessFootprint.judge(BEFORE, samples,
                new ProcessFootprint(300_000, 40 + 40, 300), 25, 16);
        assertFalse(verdict.flat());
        assertEquals(List.of("open descriptors grew from 69 to 89"), verdict.problems());
    }

    @Test
    void growingMemoryAndMappingsAreCaught() {
        List<ProcessFootprint> samples = samples(i -> new ProcessFootprint(200_000 + i * 10_000, 50, 350 + 2 * i));
        ProcessFootprint.Verdict verdict = ProcessFootprint.judge(BEFORE, samples,
                new ProcessFootprint(600_000, 40, 300), 25, 16);
        assertEquals(List.of("RSS grew from 380 to 576 MiB", "mappings grew from 388 to 428"), verdict.problems());
    }

    @Test
    void aShortRunCannotBeJudged() {
        ProcessFootprint.Verdict verdict = ProcessFootprint.judge(BEFORE, List.of(BEFORE, BEFORE), BEFORE, 25, 16);
        assertFalse(verdict.flat());
    }

    @Test
    void thisProcessCanBeMeasured() {
        ProcessFootprint now = ProcessFootprint.now();
        assertTrue(now.rssKb() > 0 && now.fds() > 2 && now.mappings() > 10, now.toString());
    }
}
