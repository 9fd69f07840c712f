package dev.ffmtrace.bench;

import dev.ffmtrace.ipc.IpcHost;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.consumer.ConsumerConnection;
import dev.ffmtrace.tracing.producer.internal.DataSourceInstance;
import dev.ffmtrace.tracing.service.InvalidConfigException;
import dev.ffmtrace.tracing.service.ProducerPacket;
import dev.ffmtrace.tracing.service.ReadbackSink;
import dev.ffmtrace.tracing.service.SessionClone;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.service.ipc.ConsumerPort;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
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
 * A session's buffer read back, as a trace: a 4 MiB ring buffer full of 1 KiB packets
 * (or, with {@code -p payload=40}, of 50-byte packets, a small TrackEvent's size) from one
 * writer, read without consuming it. {@code snapshot} writes it to a channel
 * that drops the bytes ({@link TracingSession#writeSnapshot}: the buffer cloned under its
 * lock, each packet validated, given its trusted fields and framed), {@code
 * snapshotToFile} to a file in java.io.tmpdir, overwritten from its start each time. {@code
 * cloneAndReadBuffers} gets it over Perfetto's consumer IPC on a real Unix socket, as
 * {@code perfetto --clone} does: CloneSession, then ReadBuffers, whose replies the service
 * cuts into slices and this thread's {@link ConsumerConnection} glues into a trace. The
 * {@code bytes} column is the trace's bytes per second; the allocation column of
 * {@code cloneAndReadBuffers} includes the client's copy of the whole trace. The rows
 * into a {@link ReadbackSink} that copies and checks each packet into one array, as a
 * sink must, and keeps nothing have the service's allocation alone:
 * {@code cloneIntoSink} a clone of the full buffer written whole ({@link SessionClone}),
 * {@code consumeIntoSink} a consuming readback ({@link TracingSession#writeTrace}) of a
 * buffer read empty by the first one, so the service's own packets of each readback.
 * The producer that filled the buffer has left by then: a clone flushes no producer, and
 * the rows time the readback alone.
 */
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class ReadbackBenchmark {
    private static final String DATA_SOURCE = "bench";
    private static final long TIMEOUT_MS = 30_000;
    private static final int BUFFER_KB = 4096;
    private static final int SMB_SIZE = 1 << 20;

    /** Counts what it is given and keeps none of it. */
    static final class Discard implements WritableByteChannel {
        long written;

        @Override
        public int write(ByteBuffer source) {
            int length = source.remaining();
            source.position(source.limit());
            written += length;
            return length;
        }

        @Override
        public boolean isOpen() {
            return true;
        }

        @Override
        public void close() {
        }
    }

    /** Counts the packets' bytes it is given and keeps none of them. */
    static final class DiscardSink implements ReadbackSink {
        long taken;
        private long pending;
        private byte[] copy = new byte[64 << 10];

        @Override
        public void appendFramed(byte[] packet, int offset, int length) {
            pending += length;
        }

        @Override
        public Appended append(ProducerPacket packet) {
            // Copied and checked as every sink does, into one array reused.
            if (copy.length < packet.maxSize()) {
                copy = new byte[Math.max(packet.maxSize(), 2 * copy.length)];
            }
            int size = packet.copyTo(copy, 0);
            if (size < 0) {
                return Appended.INVALID;
            }
            pending += size;
            return Appended.TAKEN;
        }

        @Override
        public boolean isFull() {
            return false;
        }

        @Override
        public long pending() {
            return pending;
        }

        @Override
        public void flush() {
            taken += pending;
            pending = 0;
        }
    }

    /** A session of the in-process service, started directly and full. */
    @State(Scope.Benchmark)
    public static class Local {
        /** Bytes of each packet's string: 1000, or 40 for packets of a small event's size. */
        @Param({"1000"})
        public int payload;
        TracingService service;
        TracingSession session;
        final Discard discard = new Discard();
        final DiscardSink sink = new DiscardSink();

        @Setup(Level.Trial)
        public void setUp() throws Exception {
            service = new TracingService();
            try (InProcessProducer producer = InProcessProducer.connect(service, "bench", SMB_SIZE)) {
                CompletableFuture<DataSourceInstance> started = producer.register(DATA_SOURCE);
                session = service.startSession(config());
                fill(InProcessProducer.await(started), payload);
            }
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            session.close();
            service.close();
        }
    }

    /** A session a consumer started over IPC, full, and a second consumer that clones it. */
    @State(Scope.Benchmark)
    public static class OverIpc {
        TracingService service;
        ConsumerPort port;
        IpcHost host;
        ConsumerConnection owner;
        ConsumerConnection cloner;

        @Setup(Level.Trial)
        public void setUp() throws Exception {
            service = new TracingService();
            port = new ConsumerPort(service, "bench");
            host = IpcHost.listen(UnixAddress.abstractName("ffmtrace-bench-readback-" + System.nanoTime()));
            if (!host.exposeService(port.descriptor())) {
                throw new IllegalStateException("the consumer port is not exposed");
            }
            try (InProcessProducer producer = InProcessProducer.connect(service, "bench", SMB_SIZE)) {
                CompletableFuture<DataSourceInstance> started = producer.register(DATA_SOURCE);
                owner = ConsumerConnection.connect(host.address(), TIMEOUT_MS);
                cloner = ConsumerConnection.connect(host.address(), TIMEOUT_MS);
                owner.enableTracing(config().traceConfig().toArray(ValueLayout.JAVA_BYTE), -1);
                fill(InProcessProducer.await(started), 1000);
            }
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            cloner.close();
            owner.close();
            host.close();
            port.close();
            service.close();
        }
    }

    static SessionConfig config() throws InvalidConfigException {
        return SessionConfig.builder().buffer(BUFFER_KB, OverwritePolicy.RING_BUFFER).dataSource(DATA_SOURCE).build();
    }

    /** Twice the buffer's size in packets: it wraps, and holds whole chunks of packets from then on. */
    static void fill(DataSourceInstance source, int payloadSize) {
        byte[] payload = new byte[payloadSize];
        Arrays.fill(payload, (byte) 'x');
        String text = new String(payload, StandardCharsets.US_ASCII);
        long packets = 2L * BUFFER_KB * 1024 / (payloadSize + 24);
        try (TraceWriter<TracePacket> writer = source.newTraceWriter(BufferExhaustedPolicy.STALL)) {
            for (int i = 0; i < packets; i++) {
                TracePacket packet = writer.newTracePacket();
                packet.setTimestamp(i + 1);
                packet.setForTesting().setStr(text);
                writer.finishTracePacket();
            }
        }
    }

    @Benchmark
    public long snapshot(Local local, BytesThroughput throughput) throws IOException {
        long before = local.discard.written;
        local.session.writeSnapshot(local.discard);
        long bytes = local.discard.written - before;
        throughput.bytes += bytes;
        return bytes;
    }

    @Benchmark
    public long snapshotToFile(Local local, ToFile file, BytesThroughput throughput) throws IOException {
        // Overwritten from its start each time: the file's pages stay in the page cache.
        FileChannel channel = file.channel.position(0);
        local.session.writeSnapshot(channel);
        long bytes = channel.position();
        throughput.bytes += bytes;
        return bytes;
    }

    /** A file for {@code snapshotToFile}, in java.io.tmpdir, deleted at the end. */
    @State(Scope.Thread)
    public static class ToFile {
        Path path;
        FileChannel channel;

        @Setup(Level.Trial)
        public void setUp() throws IOException {
            path = Files.createTempFile("ffmtrace-readback-", ".pftrace");
            channel = FileChannel.open(path, StandardOpenOption.WRITE);
        }

        @TearDown(Level.Trial)
        public void tearDown() throws IOException {
            channel.close();
            Files.delete(path);
        }
    }

    @Benchmark
    public int cloneAndReadBuffers(OverIpc ipc, BytesThroughput throughput) throws InterruptedException {
        ConsumerConnection.Cloned cloned = ipc.cloner.cloneSession(1, TIMEOUT_MS);
        if (!cloned.success()) {
            throw new IllegalStateException(cloned.error());
        }
        byte[] trace = ipc.cloner.readBuffers(TIMEOUT_MS);
        throughput.bytes += trace.length;
        return trace.length;
    }

    @Benchmark
    public long cloneIntoSink(Local local, BytesThroughput throughput) throws IOException {
        long before = local.sink.taken;
        try (SessionClone clone = local.session.cloneSession(null)) {
            clone.write(local.sink);
        }
        long bytes = local.sink.taken - before;
        throughput.bytes += bytes;
        return bytes;
    }

    @Benchmark
    public long consumeIntoSink(Local local, BytesThroughput throughput) throws IOException {
        long before = local.sink.taken;
        local.session.writeTrace(local.sink);
        long bytes = local.sink.taken - before;
        throughput.bytes += bytes;
        return bytes;
    }
}
