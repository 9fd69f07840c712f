package dev.ffmtrace.bench;

import dev.ffmtrace.heapprofd.client.HeapprofdClient;
import dev.ffmtrace.heapprofd.client.Sampler;
import dev.ffmtrace.heapprofd.service.HeapprofdService;
import dev.ffmtrace.heapprofd.wire.ClientConfiguration;
import dev.ffmtrace.memory.UnixAddress;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One 64-byte allocation reported to heapprofd, ns/op: a {@link HeapprofdClient} in this
 * JVM, connected over its socket to a {@link HeapprofdService} in the same JVM, reports it
 * with {@link HeapprofdClient#reportAllocation}, as an allocator of its own would (a
 * ProfiledArena would add the wrapped arena's own allocation and its segment to each op).
 * {@code sampling}: {@code never} (a mean interval of 1 PiB), {@code 1in100} (6400 bytes)
 * or {@code every} (1 byte: each allocation walks its Java stack, writes a Malloc record
 * into the ring and sends the wake-up byte; the service's thread reads it on the other
 * core). The client blocks on a full ring, so a service that fell behind would show in the
 * sampled rows; the allocation column counts both ends. {@code unsampledSamplerAlone} is the control: the
 * unsampled path's sampler by itself, without the client's heap lookup and the thread-local
 * lookup of its thread's sampler.
 */
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class HeapprofdClientBenchmark {
    private static final String HEAP = "bench.heap";
    private static final long SIZE = 64;
    /** The addresses cycle over this many slots, so the service's books of live allocations stay small. */
    private static final int SLOTS = 1024;
    private static final long BASE_ADDRESS = 0x7f00_0000_0000L;

    /** A client connected to its own service, its heap sampled as {@code sampling} says. */
    @State(Scope.Thread)
    public static class Connected {
        @Param({"never", "1in100", "every"})
        public String sampling;

        HeapprofdService service;
        HeapprofdClient client;
        int heapId;
        int next;

        @Setup(Level.Trial)
        public void setUp() throws Exception {
            long interval = switch (sampling) {
                // A mean gap of 1 PiB: a run of a few billion 64-byte ops is unlikely to reach a sample.
                case "never" -> 1L << 50;
                case "1in100" -> 100 * SIZE;
                case "every" -> 1;
                default -> throw new IllegalArgumentException(sampling);
            };
            // Blocking, for up to a second: a client that gave up on a full ring would measure its stopped path.
            ClientConfiguration configuration = new ClientConfiguration(0, 1_000_000, 0, 0,
                    List.of(new ClientConfiguration.Heap(HEAP, interval)), true, false, false, false);
            service = HeapprofdService.start(
                    UnixAddress.abstractName("ffmtrace-bench-heapprofd-" + System.nanoTime()), configuration, 1 << 20);
            client = HeapprofdClient.connect(service.address());
            heapId = client.registerHeap(HEAP);
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            boolean active = client.isActive();
            client.close();
            service.close();
            if (!active) {
                throw new IllegalStateException("the client stopped recording during the run: its figures are not the "
                        + sampling + " path");
            }
        }
    }

    @Benchmark
    public boolean reportAllocation(Connected state) {
        long address = BASE_ADDRESS + (state.next++ & (SLOTS - 1)) * SIZE;
        return state.client.reportAllocation(state.heapId, address, SIZE);
    }

    /** A sampler that never samples, without a client: the unsampled path's arithmetic alone. */
    @State(Scope.Thread)
    public static class SamplerState {
        final Sampler sampler = new Sampler(1L << 50, 1);
    }

    @Benchmark
    public long unsampledSamplerAlone(SamplerState state) {
        return state.sampler.sampleSize(SIZE);
    }
}
