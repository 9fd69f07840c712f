package dev.ffmtrace.bench;

import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.perfetto.protos.TestEvent;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.producer.internal.DataSourceInstance;
import dev.ffmtrace.tracing.service.ProducerPort;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
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
import org.openjdk.jmh.annotations.Warmup;

/**
 * The producer's side of the system backend, µs/op: a {@link TraceWriter} of a
 * {@link ProducerConnection} writes a 3,900-byte packet per op, so about one 4 KiB chunk
 * completes per op, and the connection encodes its CommitData and sends it on a real Unix
 * socket from its sender thread. The service ({@link Service}: a {@link TracingService}
 * behind a {@link ProducerPort}) runs in a process of its own, so the allocation column,
 * which JMH takes over every thread of its JVM, is the producer's alone.
 */
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Benchmark)
public class ProducerConnectionBenchmark {
    private static final String DATA_SOURCE = "bench";

    private Process service;
    private ProducerConnection connection;
    private TraceWriter<TracePacket> writer;
    private final byte[] payload = new byte[3900];

    /** The service's process: serves a session of {@value #DATA_SOURCE} until its stdin closes. */
    public static final class Service {
        public static void main(String[] args) throws Exception {
            try (TracingService service = new TracingService()) {
                ProducerPort port = ProducerPort.listen(service, UnixAddress.abstractName(args[0]));
                TracingSession session = service.startSession(SessionConfig.builder()
                        .buffer(64 * 1024, OverwritePolicy.RING_BUFFER).dataSource(DATA_SOURCE).build());
                System.out.println("ready");
                System.out.flush();
                while (System.in.read() >= 0) {
                    // until the benchmark closes this process's stdin
                }
                session.close();
                port.close();
            }
        }
    }

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        Arrays.fill(payload, (byte) 'x');
        String name = "ffmtrace-bench-connection-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
        String java = ProcessHandle.current().info().command().orElseThrow();
        service = new ProcessBuilder(List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), Service.class.getName(), name))
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(service.getInputStream(), StandardCharsets.UTF_8));
        if (!"ready".equals(out.readLine())) {
            throw new IllegalStateException("the service process did not start");
        }
        connection = ProducerConnection.connect(ProducerConnection.Options.named("bench")
                .withSocket(UnixAddress.abstractName(name)));
        if (!connection.awaitConnected(Duration.ofSeconds(10))) {
            throw new IllegalStateException("no connection to the service process");
        }
        CompletableFuture<DataSourceInstance> started = new CompletableFuture<>();
        connection.registerDataSource(DataSourceDescriptor.named(DATA_SOURCE), started::complete);
        writer = started.get(10, TimeUnit.SECONDS).newTraceWriter(BufferExhaustedPolicy.STALL);
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        writer.close();
        ProducerConnection.Stats stats = connection.stats();
        connection.close();
        service.getOutputStream().close();
        service.waitFor(10, TimeUnit.SECONDS);
        if (stats.commitsDropped() != 0) {
            throw new IllegalStateException("commits were dropped: " + stats);
        }
    }

    @Benchmark
    public void commitAChunk() {
        TracePacket packet = writer.newTracePacket();
        packet.setForTesting().appendBytes(TestEvent.STR_FIELD_NUMBER, payload);
        writer.finishTracePacket();
    }
}
