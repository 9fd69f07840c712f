package dev.ffmtrace.bench;

import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.protozero.Message;
import dev.ffmtrace.protozero.MessageFactory;
import dev.ffmtrace.tracing.smb.SharedMemoryAbi;
import dev.ffmtrace.tracing.smb.SharedMemoryArbiter;
import dev.ffmtrace.tracing.smb.SharedMemoryReader;
import dev.ffmtrace.tracing.smb.TraceWriter;
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
 * <p>{@code trackEventSizedPacket*}: a 40-byte packet shaped like a TrackEvent slice
 * (timestamp, sequence flags, nested event with type, category iid and name iid), from
 * 1 and 2 threads, ns/op. {@code kilobytePacket}: 1 KiB payloads, throughput with a
 * {@code bytes} counter, i.e. bytes/s.
 */
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class TraceWriterBenchmark {
    /** A TracePacket-shaped root: field numbers as in Perfetto's TracePacket and TrackEvent. */
    public static final class BenchPacket extends Message {
        static final MessageFactory<BenchPacket> FACTORY = MessageFactory.of(BenchPacket::new);
    }

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
            arbiter = new SharedMemoryArbiter(abi, request -> {
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
        TraceWriter<BenchPacket> writer;
        final byte[] kilobyte = new byte[1024];
        long timestamp = 1_000_000;

        @Setup(Level.Trial)
        public void setUp(Smb smb) {
            writer = smb.arbiter.createTraceWriter(0, SharedMemoryArbiter.BufferExhaustedPolicy.STALL, new BenchPacket());
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

    private static void writeTrackEventSizedPacket(Writer w) {
        BenchPacket packet = w.writer.newTracePacket();
        packet.appendVarInt(8, w.timestamp += 1250);       // timestamp
        packet.appendVarInt(10, 1);                         // trusted_packet_sequence_id
        packet.appendVarInt(13, 2);                         // sequence_flags
        BenchPacket event = packet.beginNestedMessage(11, BenchPacket.FACTORY); // track_event
        event.appendVarInt(9, 1);                           // type
        event.appendVarInt(3, 1);                           // category_iids
        event.appendVarInt(10, 1);                          // name_iid
        event.appendVarInt(11, 123456789L);                 // track_uuid
        event.appendVarInt(25, 987654321L);                 // extra field, to reach ~40 bytes
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
        w.writer.newTracePacket().appendBytes(1, w.kilobyte);
        w.writer.finishTracePacket();
        counter.bytes += 1024;
    }
}
