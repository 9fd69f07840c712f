package dev.ffmtrace.bench;

import dev.ffmtrace.memory.Seals;
import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.ListeningSocket;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.shmring.RecordSlot;
import dev.ffmtrace.shmring.SharedRingBuffer;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.CompilerControl;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.GroupThreads;
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
 * heapprofd's SharedRingBuffer as heapprofd uses it, mirroring the C++ benchmark of
 * shared/spec/shared-ring-buffer.md section 4: an 8 MiB ring in a sealed memfd; the
 * writer takes the spinlock in try mode (yielding and retrying on failure), reserves,
 * releases the lock, bulk-copies the payload (byte i = i*31+7) and commits, yielding when
 * the ring is full; the reader takes the next record, touches its first and last payload
 * byte and frees it, yielding when the ring is empty.
 *
 * <ul>
 *   <li>{@code threads}: one writer thread and one reader thread. Records/s and bytes/s are
 *       the reader's {@code records} and {@code bytes} counters; {@code full} and
 *       {@code empty} count the yields. C++: 10.6 M/s (64 B), 8.8 M/s (1 KiB), 0.60 M/s
 *       (64 KiB).</li>
 *   <li>{@code processes}: the writer here, the reader in a second JVM
 *       ({@link ReaderProcess}) attached to the memfd received over a Unix socket. Records/s
 *       and bytes/s are the writer's {@code records} and {@code bytes} counters (in steady
 *       state the reader frees as many). C++: 10.6 M/s, 9.1 M/s, 0.59 M/s.</li>
 *   <li>{@code writeThenRead}: one thread, one record written then read, ns per record.
 *       C++: 33.5 ns, 46 ns, 1.63 µs.</li>
 * </ul>
 * Run with {@code -prof gc}: both paths allocate nothing (gc.alloc.rate.norm 0 B/op). The
 * C loops of {@code scripts/ring-bench-c} give the same measures for C on this machine.
 *
 * <h2>Why the two-sided rates come in two levels</h2>
 * The writer takes the lock, moves write_pos and counts the write in two metadata lines per
 * record; the reader hands read_pos and its read count back once per batch (a sixteenth of
 * the ring, at most 64 KiB) or when it finds the ring empty, and loads write_pos again only
 * when the one it last loaded no longer covers the next record. What still crosses between
 * the cores per record is the ring's own lines, which the reader reads while the writer is
 * still filling the records after them, and line 0 whenever the reader catches up. How fast
 * lines cross switches on this VM between two levels that hold for seconds, often within one
 * run: 64 B at 12 to 19 M/s or 4 to 6 M/s, 1 KiB at 9 to 14 or 2 to 3 M/s. Each side keeps a
 * whole CPU busy at either level (the C loops' process uses 196 to 200% by getrusage, and
 * the guest's steal time stays near 0), so neither thread is starved or shares a core; the
 * level follows where the host puts the two vCPUs (a core-to-core round trip measured 66 ns
 * at times and 330 ns at others). C shows the same two levels: {@code scripts/ring-bench-c}
 * runs these loops over the C implementation of the cross-process tests (Perfetto's
 * orderings, a hand-back per record). Compare implementations in alternated runs of one
 * session, over several forks, and per iteration rather than by the mean. Spinning
 * ({@link Thread#onSpinWait}) for a while before yielding polls the writer's lines more often
 * and was no faster in our runs.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 1, time = 1)
@Measurement(iterations = 3, time = 3)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class SharedRingBufferBenchmark {
    static final long RING_SIZE = 8L << 20;

    /**
     * The buffer shared by the writer and the reader of a group (writeThenRead is a group of
     * one). Read-only once set up: what a side writes per record lives in its own
     * {@link Writer} or {@link Reader}, so the two cores share only the ring's memory.
     */
    @State(Scope.Group)
    public static class Ring {
        @Param({"64", "1024", "65536"})
        public int size;

        SharedRingBuffer buffer;
        Arena arena;
        MemorySegment source;

        @Setup(Level.Trial)
        public void setUp() {
            buffer = SharedRingBuffer.create(RING_SIZE);
            arena = Arena.ofShared();
            source = arena.allocate(size, 8);
            for (int i = 0; i < size; i++) {
                source.set(Layouts.BYTE, i, (byte) (i * 31 + 7));
            }
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            buffer.close();
            arena.close();
        }
    }

    /**
     * 128 bytes in front of a thread's state. JMH pads only behind a state's fields (its
     * generated subclasses), and whatever was allocated just before a state, such as the
     * other thread's state or a segment the other side reads per record, would otherwise
     * share a cache line with fields written per record.
     */
    abstract static class LeadingPadding {
        byte p000, p001, p002, p003, p004, p005, p006, p007, p008, p009, p010, p011, p012, p013, p014, p015;
        byte p016, p017, p018, p019, p020, p021, p022, p023, p024, p025, p026, p027, p028, p029, p030, p031;
        byte p032, p033, p034, p035, p036, p037, p038, p039, p040, p041, p042, p043, p044, p045, p046, p047;
        byte p048, p049, p050, p051, p052, p053, p054, p055, p056, p057, p058, p059, p060, p061, p062, p063;
        byte p064, p065, p066, p067, p068, p069, p070, p071, p072, p073, p074, p075, p076, p077, p078, p079;
        byte p080, p081, p082, p083, p084, p085, p086, p087, p088, p089, p090, p091, p092, p093, p094, p095;
        byte p096, p097, p098, p099, p100, p101, p102, p103, p104, p105, p106, p107, p108, p109, p110, p111;
        byte p112, p113, p114, p115, p116, p117, p118, p119, p120, p121, p122, p123, p124, p125, p126, p127;
    }

    /** The writer side: its slot and local copies of what it reads per record. */
    @State(Scope.Thread)
    public static class Writer extends LeadingPadding {
        SharedRingBuffer buffer;
        MemorySegment source;
        long size;
        RecordSlot slot;

        @Setup(Level.Trial)
        public void setUp(Ring ring) {
            buffer = ring.buffer;
            source = ring.source;
            size = ring.size;
            slot = buffer.newSlot();
        }

        /**
         * Writes one record if the lock and the space allow; returns whether it did. Inlined
         * into the benchmark methods: compiled on its own it grows too large for C2 to inline,
         * and writeThenRead would time two calls as well as the ring.
         */
        @CompilerControl(CompilerControl.Mode.INLINE)
        boolean write() {
            if (!buffer.lock(SharedRingBuffer.LockMode.TRY)) {
                return false;
            }
            SharedRingBuffer.WriteResult result = buffer.beginWrite(slot, size);
            buffer.unlock();
            if (result != SharedRingBuffer.WriteResult.OK) {
                return false;
            }
            MemorySegment.copy(source, 0, slot.buffer(), slot.offset(), size);
            buffer.endWrite(slot);
            return true;
        }
    }

    /** The reader side: its slot and the sum of the bytes it touched, checked at the end. */
    @State(Scope.Thread)
    public static class Reader extends LeadingPadding {
        SharedRingBuffer buffer;
        RecordSlot slot;
        long perRecord;
        long checksum;
        long recordsRead;

        @Setup(Level.Trial)
        public void setUp(Ring ring) {
            buffer = ring.buffer;
            slot = buffer.newSlot();
            perRecord = ring.source.get(Layouts.BYTE, 0) + ring.source.get(Layouts.BYTE, ring.size - 1);
        }

        @TearDown(Level.Trial)
        public void check() {
            if (checksum != recordsRead * perRecord) {
                throw new IllegalStateException("reader saw wrong bytes: sum " + checksum + " over " + recordsRead
                        + " records, expected " + recordsRead * perRecord);
            }
        }

        /**
         * Reads and frees one record if there is one; returns its payload length, 0 if there
         * was none. Inlined for the reason given at {@link Writer#write}.
         */
        @CompilerControl(CompilerControl.Mode.INLINE)
        long read() {
            if (buffer.beginRead(slot) != SharedRingBuffer.ReadResult.OK) {
                return 0;
            }
            MemorySegment payload = slot.buffer();
            long offset = slot.offset();
            long length = slot.length();
            checksum += payload.get(Layouts.BYTE, offset) + payload.get(Layouts.BYTE, offset + length - 1);
            recordsRead++;
            buffer.endRead(slot);
            return length;
        }
    }

    /**
     * The buffer of the two-process benchmark: created here, its fd sent to a {@link ReaderProcess}
     * JVM, which reads until the buffer says shutting down and then reports what it read.
     */
    @State(Scope.Group)
    public static class ProcessRing {
        @Param({"64", "1024", "65536"})
        public int size;

        Ring ring;
        Writer writer;
        Process reader;

        @Setup(Level.Trial)
        public void setUp() throws IOException {
            ring = new Ring();
            ring.size = size;
            ring.setUp();
            writer = new Writer();
            writer.setUp(ring);
            UnixAddress address = UnixAddress.abstractName("ffmtrace-bench-" + ProcessHandle.current().pid());
            try (ListeningSocket server = ListeningSocket.listen(address, 1)) {
                reader = new ProcessBuilder(List.of(
                        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                        ReaderProcess.class.getName(), address.name(), Integer.toString(size)))
                        .redirectErrorStream(true).start();
                try (StreamSocket connection = server.accept()) {
                    connection.send(new byte[] {'F'}, ring.buffer.fd());
                }
            }
        }

        @TearDown(Level.Trial)
        public void tearDown() throws Exception {
            ring.buffer.setShuttingDown();
            String report = new String(reader.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            int exit = reader.waitFor();
            ring.tearDown();
            if (exit != 0) {
                throw new IllegalStateException("reader process exited " + exit + ": " + report);
            }
        }
    }

    /**
     * The reader of the two-process benchmark: attaches to the fd it receives, then reads as
     * the threaded reader does until the buffer is drained and shutting down; checks the bytes
     * it touched and exits 1 if they were wrong.
     */
    public static final class ReaderProcess {
        private ReaderProcess() {
        }

        public static void main(String[] args) {
            int size = Integer.parseInt(args[1]);
            try (StreamSocket socket = StreamSocket.connect(UnixAddress.abstractName(args[0]));
                 SharedRingBuffer buffer = SharedRingBuffer.attach(socket.receive(new byte[1], 1).fds()[0], Seals.REQUIRED)) {
                RecordSlot slot = buffer.newSlot();
                long records = 0;
                long checksum = 0;
                while (true) {
                    if (buffer.beginRead(slot) == SharedRingBuffer.ReadResult.OK) {
                        MemorySegment payload = slot.buffer();
                        long offset = slot.offset();
                        checksum += payload.get(Layouts.BYTE, offset) + payload.get(Layouts.BYTE, offset + slot.length() - 1);
                        records++;
                        buffer.endRead(slot);
                    } else if (buffer.isShuttingDown() && buffer.readAvailable() == 0) {
                        break;
                    } else {
                        Thread.yield();
                    }
                }
                long expected = records * ((byte) 7 + (byte) ((size - 1) * 31 + 7));
                System.out.println("read " + records + " records");
                if (checksum != expected) {
                    System.out.println("checksum " + checksum + ", expected " + expected);
                    System.exit(1);
                }
            }
        }
    }

    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class ProcessWriterCounters {
        public long records;
        public long bytes;
        public long full;

        @Setup(Level.Iteration)
        public void reset() {
            records = 0;
            bytes = 0;
            full = 0;
        }
    }

    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class WriterCounters extends LeadingPadding {
        public long full;

        @Setup(Level.Iteration)
        public void reset() {
            full = 0;
        }
    }

    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class ReaderCounters extends LeadingPadding {
        public long records;
        public long bytes;
        public long empty;

        @Setup(Level.Iteration)
        public void reset() {
            records = 0;
            bytes = 0;
            empty = 0;
        }
    }

    @Benchmark
    @Group("threads")
    @GroupThreads(1)
    public void writer(Writer writer, WriterCounters counters) {
        if (!writer.write()) {
            counters.full++;
            Thread.yield();
        }
    }

    @Benchmark
    @Group("threads")
    @GroupThreads(1)
    public void reader(Reader reader, ReaderCounters counters) {
        long length = reader.read();
        if (length != 0) {
            counters.records++;
            counters.bytes += length;
        } else {
            counters.empty++;
            Thread.yield();
        }
    }

    @Benchmark
    @Group("processes")
    @GroupThreads(1)
    public void processWriter(ProcessRing processRing, ProcessWriterCounters counters) {
        Writer writer = processRing.writer;
        if (writer.write()) {
            counters.records++;
            counters.bytes += writer.size;
        } else {
            counters.full++;
            Thread.yield();
        }
    }

    @Benchmark
    @Group("writeThenRead")
    @GroupThreads(1)
    @BenchmarkMode(Mode.AverageTime)
    @OutputTimeUnit(TimeUnit.NANOSECONDS)
    public boolean writeThenRead(Writer writer, Reader reader) {
        return writer.write() & reader.read() != 0;
    }
}
