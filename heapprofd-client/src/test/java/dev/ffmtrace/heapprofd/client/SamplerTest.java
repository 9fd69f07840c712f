package dev.ffmtrace.heapprofd.client;

import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The sampler's promises: large allocations always, every byte at interval 1, an unbiased total otherwise. */
class SamplerTest {
    @Test
    void anAllocationAtLeastTheIntervalIsAlwaysSampledWithItsRealSize() {
        Sampler sampler = new Sampler(4096, 1);
        for (long size = 4096; size < 4096 * 4; size += 777) {
            assertEquals(size, sampler.sampleSize(size));
        }
    }

    @Test
    void atIntervalOneEveryAllocationIsSampledWithItsSize() {
        Sampler sampler = new Sampler(1, 1);
        for (long size = 1; size < 5000; size += 13) {
            assertEquals(size, sampler.sampleSize(size));
        }
    }

    @Test
    void sampledSizesAddUpToTheBytesAllocated() {
        SplittableRandom sizes = new SplittableRandom(42);
        for (long interval : new long[] {512, 4096, 32768}) {
            Sampler sampler = new Sampler(interval, 7);
            long allocated = 0;
            long sampled = 0;
            long samples = 0;
            for (int i = 0; i < 2_000_000; i++) {
                long size = 1 + sizes.nextInt(2 * 256);
                allocated += size;
                long sample = sampler.sampleSize(size);
                sampled += sample;
                samples += sample == 0 ? 0 : 1;
            }
            double error = Math.abs(sampled - allocated) / (double) allocated;
            // About allocated / interval samples: a relative spread of 1 / sqrt(samples).
            assertTrue(error < 5 / Math.sqrt(allocated / (double) interval),
                    "interval " + interval + ": " + sampled + " sampled of " + allocated + " bytes, " + samples + " samples");
        }
    }

    @Test
    void theGapBetweenSamplesAveragesTheInterval() {
        Sampler sampler = new Sampler(1000, 3);
        long bytes = 0;
        long samples = 0;
        while (samples < 20_000) {
            bytes++;
            samples += sampler.sampleSize(1) / 1000;
        }
        double meanGap = bytes / (double) samples;
        assertTrue(Math.abs(meanGap - 1000) < 1000 * 5 / Math.sqrt(samples), "mean gap " + meanGap);
    }

    @Test
    void anIntervalBelowOneIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> new Sampler(0, 1));
    }
}
