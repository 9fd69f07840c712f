package dev.ffmtrace.cli.stress;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * What this process holds, from {@code /proc/self}: resident memory, open descriptors and
 * memory mappings. The soak mode samples it through a run and compares the end with the
 * beginning: a leak per connection, killed producer or flush shows as growth.
 */
public record ProcessFootprint(long rssKb, long fds, long mappings) {
    private static final Path PROC = Path.of("/proc/self");

    public static ProcessFootprint now() {
        try (Stream<Path> fds = Files.list(PROC.resolve("fd"));
             Stream<String> maps = Files.lines(PROC.resolve("maps"))) {
            long fdCount = fds.count();
            long mapCount = maps.count();
            long rss = 0;
            for (String line : Files.readAllLines(PROC.resolve("status"))) {
                if (line.startsWith("VmRSS:")) {
                    rss = Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
            return new ProcessFootprint(rss, fdCount, mapCount);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read /proc/self", e);
        }
    }

    /**
     * The verdict on samples taken at a steady pace through a run: the last quarter's peaks
     * against the second quarter's. The first quarter is warm-up (heap, JIT, thread pools
     * growing to their size); {@code before} and {@code after} the run are reported, not
     * judged, since a JVM keeps what its first use of a class or library opened (module
     * jars, native libraries, thread stacks).
     *
     * @param rssGrowthPercent  the most the peak RSS may grow from the second quarter to the last
     * @param slack             descriptors and mappings that may come and go with the moment
     *                          a sample lands (a producer being replaced, a thread starting)
     */
    public static Verdict judge(ProcessFootprint before, List<ProcessFootprint> samples, ProcessFootprint after,
                                int rssGrowthPercent, int slack) {
        List<String> problems = new ArrayList<>();
        if (samples.size() >= 8) {
            List<ProcessFootprint> early = samples.subList(samples.size() / 4, samples.size() / 2);
            List<ProcessFootprint> late = samples.subList(samples.size() * 3 / 4, samples.size());
            ProcessFootprint earlyPeak = peak(early);
            ProcessFootprint latePeak = peak(late);
            if (latePeak.rssKb > earlyPeak.rssKb * (100 + rssGrowthPercent) / 100) {
                problems.add("RSS grew from " + earlyPeak.rssKb / 1024 + " to " + latePeak.rssKb / 1024 + " MiB");
            }
            if (latePeak.fds > earlyPeak.fds + slack) {
                problems.add("open descriptors grew from " + earlyPeak.fds + " to " + latePeak.fds);
            }
            if (latePeak.mappings > earlyPeak.mappings + slack) {
                problems.add("mappings grew from " + earlyPeak.mappings + " to " + latePeak.mappings);
            }
        } else {
            problems.add("too few samples (" + samples.size() + ") to judge: run longer");
        }
        return new Verdict(before, peak(samples), after, samples.size(), List.copyOf(problems));
    }

    private static ProcessFootprint peak(List<ProcessFootprint> samples) {
        long rss = 0;
        long fds = 0;
        long mappings = 0;
        for (ProcessFootprint sample : samples) {
            rss = Math.max(rss, sample.rssKb);
            fds = Math.max(fds, sample.fds);
            mappings = Math.max(mappings, sample.mappings);
        }
        return new ProcessFootprint(rss, fds, mappings);
    }

    /** The soak's verdict: flat if no problem was found. */
    public record Verdict(ProcessFootprint before, ProcessFootprint peak, ProcessFootprint after, int samples,
                          List<String> problems) {
        public boolean flat() {
            return problems.isEmpty();
        }
    }
}
