package dev.ffmtrace.heapprofd.client;

import java.util.SplittableRandom;

/**
 * heapprofd's allocation sampler: Poisson sampling of allocated bytes with a mean
 * interval of {@code samplingInterval} bytes. Each allocation draws down the bytes left
 * to the next sample; one that crosses it is sampled, and stands for the interval times
 * the number of samples it crossed, so that the sampled sizes add up, on average, to the
 * bytes allocated. An allocation at least as large as the interval is always sampled, with
 * its real size. The gaps between samples are exponentially distributed (a geometric
 * distribution approximated as Perfetto's client does), plus one byte.
 *
 * <p>The unsampled path is a compare, a subtraction and a compare. Not thread-safe:
 * {@link HeapprofdClient} keeps one per heap and thread.
 */
public final class Sampler {
    private final SplittableRandom random;
    private long samplingInterval;
    private double samplingRate;
    private long bytesToNextSample;

    /** A sampler with its own random sequence from {@code seed}. */
    public Sampler(long samplingInterval, long seed) {
        this.random = new SplittableRandom(seed);
        setSamplingInterval(samplingInterval);
    }

    /**
     * Sets the mean interval (adaptive sampling doubles it) and draws the next gap.
     *
     * @param samplingInterval at least 1
     */
    public void setSamplingInterval(long samplingInterval) {
        if (samplingInterval < 1) {
            throw new IllegalArgumentException("sampling interval must be at least 1: " + samplingInterval);
        }
        this.samplingInterval = samplingInterval;
        this.samplingRate = 1.0 / samplingInterval;
        this.bytesToNextSample = nextSampleInterval();
    }

    public long samplingInterval() {
        return samplingInterval;
    }

    /**
     * The bytes the allocation of {@code allocSize} bytes stands for in the profile: 0 if
     * it is not sampled.
     */
    public long sampleSize(long allocSize) {
        if (allocSize >= samplingInterval) {
            return allocSize;
        }
        bytesToNextSample -= allocSize;
        if (bytesToNextSample > 0) {
            return 0;
        }
        return samplingInterval * samplesCrossed();
    }

    private long samplesCrossed() {
        long samples = 0;
        while (bytesToNextSample <= 0) {
            bytesToNextSample += nextSampleInterval();
            samples++;
        }
        return samples;
    }

    private long nextSampleInterval() {
        // Exponential with mean 1/rate, by inversion; 1 - u keeps the logarithm's argument in (0, 1].
        double exponential = -Math.log(1.0 - random.nextDouble()) / samplingRate;
        return (long) exponential + 1;
    }
}
