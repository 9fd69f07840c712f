package dev.ffmtrace.bench;

import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.UnixServerSocket;
import dev.ffmtrace.memory.UnixSocket;
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
 * Run with {@code -prof gc}: both paths allocate nothing (gc.alloc.rate.norm 0 B/op).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 1, time = 1)
@Measurement(iterations = 3, time = 3)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class SharedRingBufferBenchmark {
    static final long RING_SIZE = 8L << 20;

    /** The buffer shared by the writer and the reader of a group (writeThenRead is a group of one). */
    @State(Scope.Group)
    public static class Ring {
        @Param({"64", "1024", "65536"})
        public int size;

        SharedRingBuffer buffer;
        Arena arena;
        MemorySegment source;
        RecordSlot writerSlot;
        RecordSlot readerSlot;
        long checksum;
        long recordsRead;

        @Setup(Level.Trial)
        public void setUp() {
            buffer = SharedRingBuffer.create(RING_SIZE);
            arena = Arena.ofShared();
            source = arena.allocate(size, 8);
            for (int i = 0; i < size; i++) {
                source.set(Layouts.BYTE, i, (byte) (i * 31 + 7));
            }
            writerSlot = buffer.newSlot();
            readerSlot = buffer.newSlot();
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            long perRecord = source.get(Layouts.BYTE, 0) + source.get(Layouts.BYTE, size - 1);
            buffer.close();
            arena.close();
            if (checksum != recordsRead * perRecord) {
                throw new IllegalStateException("reader saw wrong bytes: sum " + checksum + " over " + recordsRead
                        + " records, expected " + recordsRead * perRecord);
            }
        }

        /** Writes one record if the lock and the space allow; returns whether it did. */
        boolean write() {
            if (!buffer.lock(SharedRingBuffer.LockMode.TRY)) {
                return false;
            }
            SharedRingBuffer.WriteResult result = buffer.beginWrite(writerSlot, size);
            buffer.unlock();
            if (result != SharedRingBuffer.WriteResult.OK) {
                return false;
            }
            MemorySegment.copy(source, 0, writerSlot.buffer(), writerSlot.offset(), size);
            buffer.endWrite(writerSlot);
            return true;
        }

        /** Reads and frees one record if there is one; returns whether it did. */
        boolean read() {
            if (buffer.beginRead(readerSlot) != SharedRingBuffer.ReadResult.OK) {
                return false;
            }
            MemorySegment payload = readerSlot.buffer();
            long offset = readerSlot.offset();
            checksum += payload.get(Layouts.BYTE, offset) + payload.get(Layouts.BYTE, offset + readerSlot.length() - 1);
            recordsRead++;
            buffer.endRead(readerSlot);
            return true;
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
        Process reader;

        @Setup(Level.Trial)
        public void setUp() throws IOException {
            ring = new Ring();
            ring.size = size;
            ring.setUp();
            UnixAddress address = UnixAddress.abstractName("ffmtrace-bench-" + ProcessHandle.current().pid());
            try (UnixServerSocket server = UnixServerSocket.listen(address, 1)) {
                reader = new ProcessBuilder(List.of(
                        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                        ReaderProcess.class.getName(), address.name(), Integer.toString(size)))
                        .redirectErrorStream(true).start();
                try (UnixSocket connection = server.accept()) {
                    connection.send(new byte[] {'F'}, ring.buffer.fd());
                }
            }
        }

        @TearDown(Level.Trial)
        public void tearDown() throws Exception {
            ring.buffer.setShuttingDown();
            String report = new String(reader.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            int exit = reader.waitFor();
            ring.buffer.close();
            ring.arena.close();
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
            try (UnixSocket socket = UnixSocket.connect(UnixAddress.abstractName(args[0]));
                 SharedRingBuffer buffer = SharedRingBuffer.attach(socket.receive(new byte[1], 1).fds()[0], true)) {
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
    public static class WriterCounters {
        public long full;

        @Setup(Level.Iteration)
        public void reset() {
            full = 0;
        }
    }

    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class ReaderCounters {
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
    public void writer(Ring ring, WriterCounters counters) {
        if (!ring.write()) {
            counters.full++;
            Thread.yield();
        }
    }

    @Benchmark
    @Group("threads")
    @GroupThreads(1)
    public void reader(Ring ring, ReaderCounters counters) {
        if (ring.read()) {
            counters.records++;
            counters.bytes += ring.size;
        } else {
            counters.empty++;
            Thread.yield();
        }
    }

    @Benchmark
    @Group("processes")
    @GroupThreads(1)
    public void processWriter(ProcessRing processRing, ProcessWriterCounters counters) {
        Ring ring = processRing.ring;
        if (ring.write()) {
            counters.records++;
            counters.bytes += ring.size;
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
    public boolean writeThenRead(Ring ring) {
        return ring.write() & ring.read();
    }
}
