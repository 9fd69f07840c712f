package dev.ffmtrace.bench;

import dev.ffmtrace.tracing.buffer.ChunkCommit;
import dev.ffmtrace.tracing.buffer.ClientIdentity;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.buffer.TraceBufferV2;
import dev.ffmtrace.tracing.buffer.TracePacketView;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;

/**
 * TraceBufferV2 throughput, mirroring Perfetto's {@code BM_TraceBuffer_WR_SingleWriter},
 * {@code BM_TraceBuffer_WR_MultipleWriters} and {@code BM_TraceBuffer_RD} (workload in
 * {@code shared/spec/tracebuffer-behaviours.md}).
 *
 * <p>Each benchmark invocation is one iteration of the C++ benchmark loop (16384 chunk
 * copies, or reading a filled 128 MiB buffer), and JMH reports per chunk copy or per
 * packet read ({@code @OperationsPerInvocation}), so ops/s, the time per op and
 * {@code gc.alloc.rate.norm} are per copy or per packet. Bytes per second is the secondary metric
 * {@code bytes} (an {@link AuxCounters} operations counter, so JMH reports it as a
 * rate): 4096 bytes per chunk copied, whatever its real size, for the writes; the
 * payload bytes of every fragment read for the reads.
 *
 * <p>The two {@code memcpy} rows are the floor each is measured against: the same chunks
 * moved by {@link MemorySegment#copy} alone, per op as their row counts ops, so that a
 * row's bytes per second reads as a fraction of what copying its bytes costs in the same
 * run (issue #32).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class TraceBufferBenchmark {
    /** What every copy counts for, as in the C++ benchmark. */
    static final int CHUNK_SIZE = 4096;
    static final int WRITE_BUFFER_SIZE = 64 * 1024 * 1024;
    static final int READ_BUFFER_SIZE = 128 * 1024 * 1024;
    static final int COPIES_PER_OPERATION = WRITE_BUFFER_SIZE / CHUNK_SIZE;
    /** Packets in a read buffer filled from the templates: fixed by the workload, checked after each read. */
    static final int PACKETS_PER_READ = 323_718;

    /**
     * The 100 chunk templates: {@code minstd_rand} seeded 42, 5..15 packets of 50..500
     * bytes (varint header included) each, payload capped at 4080 bytes.
     */
    @State(Scope.Benchmark)
    public static class Templates {
        static final int COUNT = 100;

        final Arena arena = Arena.ofShared();
        MemorySegment data;
        final long[] offsets = new long[COUNT];
        final int[] sizes = new int[COUNT];
        final int[] numFragments = new int[COUNT];

        @Setup(Level.Trial)
        public void generate() {
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            long state = 42;
            int packets = 0;
            for (int i = 0; i < COUNT; i++) {
                offsets[i] = all.size();
                state = state * 48271 % 2147483647;
                int numPackets = 5 + (int) (state % 11);
                int used = 0;
                int maxPayload = CHUNK_SIZE - 16;
                for (int p = 0; p < numPackets && used < maxPayload - 50; p++) {
                    state = state * 48271 % 2147483647;
                    int size = 50 + (int) (state % 451);
                    if (used + size > maxPayload) {
                        size = maxPayload - used;
                    }
                    if (size < 10) {
                        break;
                    }
                    writePacket(all, size, (char) ('a' + i % 26));
                    numFragments[i]++;
                    used += size;
                }
                sizes[i] = used;
                packets += numFragments[i];
            }
            if (packets != 988) {
                throw new IllegalStateException("templates differ from Perfetto's: " + packets + " packets");
            }
            byte[] bytes = all.toByteArray();
            data = arena.allocate(bytes.length, 16);
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, data, 0, bytes.length);
        }

        @TearDown(Level.Trial)
        public void close() {
            arena.close();
        }

        /** Perfetto's FakePacketFragment: 1-byte size varint up to 128 bytes, else 2 (redundant at 129). */
        private static void writePacket(ByteArrayOutputStream out, int size, char seed) {
            int payload = size <= 128 ? size - 1 : size - 2;
            if (size <= 128) {
                out.write(payload);
            } else {
                out.write(payload & 0x7F | 0x80);
                out.write(payload >>> 7);
            }
            for (int i = 0; i < payload; i++) {
                out.write(seed + i);
            }
        }
    }

    @State(Scope.Thread)
    public static class SingleWriter {
        final Arena arena = Arena.ofConfined();
        final ClientIdentity identity = new ClientIdentity(1000, 100);
        /** Reused for every copy, as the service does. */
        final ChunkCommit chunk = new ChunkCommit().producer(1, identity).writerId(1).flags(0).complete(true);
        TraceBufferV2 buffer;
        int chunkId;
        int templateIndex;

        @Setup(Level.Trial)
        public void create() {
            buffer = new TraceBufferV2(arena.allocate(WRITE_BUFFER_SIZE, 16), OverwritePolicy.RING_BUFFER);
        }

        @TearDown(Level.Trial)
        public void close() {
            arena.close();
        }
    }

    @State(Scope.Thread)
    public static class MultipleWriters {
        /** Writers taking turns, a chunk each (the C++ benchmark's 1,000); scripts/bench-curves varies it. */
        @Param({"1000"})
        public int writers;
        final Arena arena = Arena.ofConfined();
        ClientIdentity[] identities;
        int[] chunkIds;
        final ChunkCommit chunk = new ChunkCommit().flags(0).complete(true);
        TraceBufferV2 buffer;
        int templateIndex;

        @Setup(Level.Trial)
        public void create() {
            identities = new ClientIdentity[writers];
            chunkIds = new int[writers];
            for (int i = 0; i < writers; i++) {
                identities[i] = new ClientIdentity(1000 + i, 100 + i);
            }
            buffer = new TraceBufferV2(arena.allocate(WRITE_BUFFER_SIZE, 16), OverwritePolicy.RING_BUFFER);
        }

        @TearDown(Level.Trial)
        public void close() {
            arena.close();
        }
    }

    /** Where the memcpy rows copy to, in chunk slots of {@value #CHUNK_SIZE} bytes. */
    @State(Scope.Thread)
    public static class CopyTarget {
        final Arena arena = Arena.ofConfined();
        MemorySegment memory;
        long offset;
        int templateIndex;

        @Setup(Level.Trial)
        public void allocate() {
            memory = arena.allocate(READ_BUFFER_SIZE, 16);
        }

        @TearDown(Level.Trial)
        public void close() {
            arena.close();
        }
    }

    /** The read row's chunks laid out plainly, a template chunk per 4 KiB slot, for its memcpy row to copy out. */
    @State(Scope.Thread)
    public static class FilledRegion {
        final Arena arena = Arena.ofConfined();
        MemorySegment memory;

        @Setup(Level.Trial)
        public void fill(Templates templates) {
            memory = arena.allocate(READ_BUFFER_SIZE, 16);
            int templateIndex = 0;
            for (long offset = 0; offset < READ_BUFFER_SIZE - CHUNK_SIZE; offset += CHUNK_SIZE) {
                int t = templateIndex++ % Templates.COUNT;
                MemorySegment.copy(templates.data, templates.offsets[t], memory, offset, templates.sizes[t]);
            }
        }

        @TearDown(Level.Trial)
        public void close() {
            arena.close();
        }
    }

    @State(Scope.Thread)
    public static class FilledBuffer {
        final Arena arena = Arena.ofConfined();
        final ClientIdentity identity = new ClientIdentity(1000, 100);
        final ChunkCommit chunk = new ChunkCommit().producer(1, identity).writerId(1).flags(0).complete(true);
        final TracePacketView packet = new TracePacketView();
        MemorySegment memory;
        TraceBufferV2 buffer;

        int chunkId;
        int packetsRead;

        @TearDown(Level.Invocation)
        public void checkEveryPacketWasRead() {
            if (packetsRead != PACKETS_PER_READ) {
                throw new IllegalStateException("read " + packetsRead + " packets, the workload has " + PACKETS_PER_READ);
            }
        }

        @Setup(Level.Trial)
        public void allocate() {
            memory = arena.allocate(READ_BUFFER_SIZE, 16);
            buffer = new TraceBufferV2(memory, OverwritePolicy.RING_BUFFER);
        }

        /**
         * Untimed: refills the buffer with 32767 chunks before each operation, since reads
         * consume. The C++ benchmark builds a new buffer each time; here the same buffer is
         * refilled with the next chunk ids, which overwrites only chunks already read and
         * leaves the same 32767 chunks to read, without allocating a new buffer per
         * operation (the write path allocates nothing), so the gc column is the read path's.
         */
        @Setup(Level.Invocation)
        public void fill(Templates templates) {
            int templateIndex = 0;
            for (long written = 0; written < READ_BUFFER_SIZE - CHUNK_SIZE; written += CHUNK_SIZE) {
                int t = templateIndex++ % Templates.COUNT;
                buffer.copyChunkUntrusted(chunk.chunkId(chunkId++).numFragments(templates.numFragments[t]),
                        templates.data, templates.offsets[t], templates.sizes[t]);
            }
        }

        @TearDown(Level.Trial)
        public void close() {
            arena.close();
        }
    }

    @Benchmark
    @OperationsPerInvocation(COPIES_PER_OPERATION)
    public void writeSingleWriter(Templates templates, SingleWriter state, BytesThroughput throughput) {
        TraceBufferV2 buffer = state.buffer;
        int chunkId = state.chunkId;
        int templateIndex = state.templateIndex;
        ChunkCommit chunk = state.chunk;
        for (int i = 0; i < COPIES_PER_OPERATION; i++) {
            int t = templateIndex++ % Templates.COUNT;
            buffer.copyChunkUntrusted(chunk.chunkId(chunkId++).numFragments(templates.numFragments[t]),
                    templates.data, templates.offsets[t], templates.sizes[t]);
        }
        state.chunkId = chunkId;
        state.templateIndex = templateIndex;
        throughput.bytes += (long) COPIES_PER_OPERATION * CHUNK_SIZE;
    }

    @Benchmark
    @OperationsPerInvocation(COPIES_PER_OPERATION)
    public void writeMultipleWriters(Templates templates, MultipleWriters state, BytesThroughput throughput) {
        TraceBufferV2 buffer = state.buffer;
        int templateIndex = state.templateIndex;
        ChunkCommit chunk = state.chunk;
        int writers = state.writers;
        // The copy's index modulo the writers, as the C++ loop takes it, without a division.
        int w = 0;
        for (int copy = 0; copy < COPIES_PER_OPERATION; copy++) {
            int t = templateIndex++ % Templates.COUNT;
            chunk.producer(w + 1, state.identities[w]).writerId(w + 1).chunkId(state.chunkIds[w]++)
                    .numFragments(templates.numFragments[t]);
            buffer.copyChunkUntrusted(chunk, templates.data, templates.offsets[t], templates.sizes[t]);
            if (++w == writers) {
                w = 0;
            }
        }
        state.templateIndex = templateIndex;
        throughput.bytes += (long) COPIES_PER_OPERATION * CHUNK_SIZE;
    }

    @Benchmark
    @OperationsPerInvocation(PACKETS_PER_READ)
    public long readMixedPackets(FilledBuffer state, BytesThroughput throughput) {
        TraceBufferV2 buffer = state.buffer;
        TracePacketView packet = state.packet;
        long bytesRead = 0;
        int packets = 0;
        buffer.beginRead();
        while (buffer.readNextTracePacket(packet)) {
            packets++;
            for (int i = 0; i < packet.fragmentCount(); i++) {
                bytesRead += packet.fragmentSize(i);
            }
        }
        state.packetsRead = packets;
        throughput.bytes += bytesRead;
        return bytesRead;
    }

    /**
     * The write rows' floor: each template chunk's bytes copied into the next 4 KiB slot of
     * a 64 MiB region, and nothing else (no header, index or bookkeeping); counted as the
     * write rows count, 4096 bytes a copy.
     */
    @Benchmark
    @OperationsPerInvocation(COPIES_PER_OPERATION)
    public void memcpyWriteBaseline(Templates templates, CopyTarget target, BytesThroughput throughput) {
        MemorySegment to = target.memory;
        long offset = target.offset;
        int templateIndex = target.templateIndex;
        for (int i = 0; i < COPIES_PER_OPERATION; i++) {
            int t = templateIndex++ % Templates.COUNT;
            MemorySegment.copy(templates.data, templates.offsets[t], to, offset, templates.sizes[t]);
            offset = (offset + CHUNK_SIZE) % WRITE_BUFFER_SIZE;
        }
        target.offset = offset;
        target.templateIndex = templateIndex;
        throughput.bytes += (long) COPIES_PER_OPERATION * CHUNK_SIZE;
    }

    /**
     * The read row's floor: the same {@value #PACKETS_PER_READ} packets in 32767 chunks,
     * copied out chunk by chunk (payload and packet headers, a little more than the read
     * row counts); bytes are the bytes copied.
     */
    @Benchmark
    @OperationsPerInvocation(PACKETS_PER_READ)
    public long memcpyReadBaseline(Templates templates, FilledRegion region, CopyTarget target,
                                   BytesThroughput throughput) {
        MemorySegment from = region.memory;
        MemorySegment to = target.memory;
        long copied = 0;
        int templateIndex = 0;
        for (long offset = 0; offset < READ_BUFFER_SIZE - CHUNK_SIZE; offset += CHUNK_SIZE) {
            int size = templates.sizes[templateIndex++ % Templates.COUNT];
            MemorySegment.copy(from, offset, to, offset, size);
            copied += size;
        }
        throughput.bytes += copied;
        return copied;
    }
}
