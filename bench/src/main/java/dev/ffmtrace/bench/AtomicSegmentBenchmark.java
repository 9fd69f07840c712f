package dev.ffmtrace.bench;

import dev.ffmtrace.memory.AtomicSegment;
import java.lang.foreign.Arena;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * {@link AtomicSegment} over native memory against a plain array-element
 * {@link VarHandle} on a heap {@code long[]}/{@code byte[]}: the price of reaching
 * shared memory through a segment (bounds, liveness and alignment checks) for each
 * ordering. Single-threaded: this measures the instruction path, not contention.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class AtomicSegmentBenchmark {
    private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);
    private static final VarHandle BYTES = MethodHandles.arrayElementVarHandle(byte[].class);

    private Arena arena;
    private AtomicSegment segment;
    private final long[] longs = new long[8];
    private final byte[] bytes = new byte[8];
    private long value;

    @Setup
    public void setUp() {
        arena = Arena.ofShared();
        segment = new AtomicSegment(arena.allocate(64, 64));
    }

    @TearDown
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    public long segmentGetLongAcquire() {
        return segment.getLongAcquire(8);
    }

    @Benchmark
    public long arrayGetLongAcquire() {
        return (long) LONGS.getAcquire(longs, 1);
    }

    @Benchmark
    public void segmentPutLongRelease() {
        segment.putLongRelease(8, ++value);
    }

    @Benchmark
    public void arrayPutLongRelease() {
        LONGS.setRelease(longs, 1, ++value);
    }

    @Benchmark
    public void segmentPutLongVolatile() {
        segment.putLongVolatile(8, ++value);
    }

    @Benchmark
    public void arrayPutLongVolatile() {
        LONGS.setVolatile(longs, 1, ++value);
    }

    @Benchmark
    public boolean segmentCompareAndSetLong() {
        long current = segment.getLong(8);
        return segment.compareAndSetLong(8, current, current + 1);
    }

    @Benchmark
    public boolean arrayCompareAndSetLong() {
        long current = (long) LONGS.get(longs, 1);
        return LONGS.compareAndSet(longs, 1, current, current + 1);
    }

    @Benchmark
    public long segmentGetAndAddLong() {
        return segment.getAndAddLong(8, 1);
    }

    @Benchmark
    public long arrayGetAndAddLong() {
        return (long) LONGS.getAndAdd(longs, 1, 1L);
    }

    @Benchmark
    public byte segmentGetAndSetByte() {
        return segment.getAndSetByte(1, (byte) value++);
    }

    @Benchmark
    public byte arrayGetAndSetByte() {
        return (byte) BYTES.getAndSet(bytes, 1, (byte) value++);
    }
}
