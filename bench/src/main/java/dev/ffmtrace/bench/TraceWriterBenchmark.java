package dev.ffmtrace.bench;

import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.tracing.service.reader.SharedMemoryReader;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.SharedMemoryArbiter;
import dev.ffmtrace.tracing.smb.TraceWriter;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbi;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The producer's cost per packet: {@link TraceWriter} writing into a 4 MiB memfd SMB of
 * 4 KiB pages, one chunk per page. Full chunks are committed and taken back by an
 * in-process service that frees them at once (the service's copy into its buffer is
 * {@code TraceBufferBenchmark}'s subject), so the numbers are the writer's fast path
 * plus its share of per-chunk commits.
 *
 * <p>{@code trackEventSizedPacket*}: a 40-byte generated {@code TracePacket} holding a
 * TrackEvent slice begin (timestamp, sequence id and flags, nested event with type,
 * category iid, name iid and track uuid), from
 * 1 and 2 threads, ns/op. {@code kilobytePacket}: packets carrying a 1 KiB bytes field
 * ({@code synchronization_marker}), throughput with a {@code bytes} counter, i.e. bytes/s.
 */
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class TraceWriterBenchmark {
    @State(Scope.Benchmark)
    public static class Smb {
        SharedMemory memory;
        SharedMemoryArbiter arbiter;

        @Setup(Level.Trial)
        public void setUp() {
            memory = SharedMemory.create("bench-smb", 4 << 20);
            SharedMemoryAbi abi = new SharedMemoryAbi(memory.segment(), 4096);
            SharedMemoryReader service = new SharedMemoryReader(abi);
            SharedMemoryReader.ChunkSink free = (writer, chunk, packets, complete, smb, offset, size) -> { };
            arbiter = new SharedMemoryArbiter(abi.segment(), abi.pageSize(), request -> {
                for (int i = 0; i < request.chunksToMove(); i++) {
                    service.moveChunk(request.movePage(i), request.moveChunk(i), free);
                }
            });
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            memory.close();
        }
    }

    @State(Scope.Thread)
    public static class Writer {
        TraceWriter<TracePacket> writer;
        final byte[] kilobyte = new byte[1024];
        long timestamp = 1_000_000;

        @Setup(Level.Trial)
        public void setUp(Smb smb) {
            writer = smb.arbiter.createTraceWriter(0, BufferExhaustedPolicy.STALL);
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            writer.close();
        }
    }

    @AuxCounters(AuxCounters.Type.OPERATIONS)
    @State(Scope.Thread)
    public static class Bytes {
        public long bytes;
    }

    /** 40 bytes once encoded, like a TrackEvent slice begin with interned names. */
    private static void writeTrackEventSizedPacket(Writer w) {
        TracePacket packet = w.writer.newTracePacket();
        packet.setTimestamp(w.timestamp += 1250);
        packet.setTrustedPacketSequenceId(1);
        packet.setSequenceFlags(TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE.number());
        TrackEvent event = packet.setTrackEvent();
        event.setType(TrackEvent.Type.TYPE_SLICE_BEGIN);
        event.addCategoryIids(1);
        event.setNameIid(1);
        event.setTrackUuid(0x123456789abcdefL);
        w.writer.finishTracePacket();
    }

    @Benchmark
    @BenchmarkMode(Mode.AverageTime)
    @OutputTimeUnit(TimeUnit.NANOSECONDS)
    @Threads(1)
    public void trackEventSizedPacket(Writer w) {
        writeTrackEventSizedPacket(w);
    }

    @Benchmark
    @BenchmarkMode(Mode.AverageTime)
    @OutputTimeUnit(TimeUnit.NANOSECONDS)
    @Threads(2)
    public void trackEventSizedPacketTwoThreads(Writer w) {
        writeTrackEventSizedPacket(w);
    }

    @Benchmark
    @BenchmarkMode(Mode.Throughput)
    @OutputTimeUnit(TimeUnit.SECONDS)
    @Threads(1)
    public void kilobytePacket(Writer w, Bytes counter) {
        w.writer.newTracePacket().setSynchronizationMarker(w.kilobyte);
        w.writer.finishTracePacket();
        counter.bytes += 1024;
    }
}
