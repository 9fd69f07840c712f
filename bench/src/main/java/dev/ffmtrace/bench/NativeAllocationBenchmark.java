package dev.ffmtrace.bench;

import java.lang.foreign.Arena;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * A JVM's native allocations in steady state, the figure a user weighs before running a
 * service under the preloaded heapprofd client: {@code arenaAllocate} allocates and frees
 * {@code size} bytes through an FFM arena ({@code Unsafe.allocateMemory}, libjvm's
 * {@code os::malloc}, then libc's {@code malloc} and {@code free}, which the client
 * wraps). Run alone it is the baseline; {@code scripts/heapprofd-jvm-steady} runs it
 * under {@code ffmtrace heapprofd} too (the fork inherits the preload and the service's
 * socket), alternated.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class NativeAllocationBenchmark {
    @Param({"64", "4096"})
    public long size;

    @Benchmark
    public long arenaAllocate() {
        try (Arena arena = Arena.ofConfined()) {
            return arena.allocate(size).address();
        }
    }
}
