package dev.ffmtrace.bench;

import dev.ffmtrace.ipc.BoundService;
import dev.ffmtrace.ipc.IpcClient;
import dev.ffmtrace.ipc.Reply;
import dev.ffmtrace.memory.Seals;
import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.perfetto.protos.CommitDataRequest;
import dev.ffmtrace.perfetto.protos.DataSourceConfig;
import dev.ffmtrace.perfetto.protos.GetAsyncCommandResponse;
import dev.ffmtrace.perfetto.protos.InitializeConnectionRequest;
import dev.ffmtrace.perfetto.protos.RegisterDataSourceRequest;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.service.ProducerPort;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.CommitRequest;
import dev.ffmtrace.tracing.smb.SharedMemoryArbiter;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
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
 * One CommitData round trip through the producer port, µs/op: a producer in this JVM,
 * speaking Perfetto's IPC over a real Unix socket, fills a 4 KiB chunk of the SMB the
 * service sent it with a 1 KiB packet, then returns the chunk, which commits it, and
 * waits for the service's reply: the service decodes the request, copies the chunk into
 * the session's buffer, frees it and answers. The allocation column counts both ends.
 */
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Benchmark)
public class ProducerPortBenchmark {
    private TracingService service;
    private ProducerPort port;
    private IpcClient client;
    private SharedMemory smb;
    private TracingSession session;
    private TraceWriter<TracePacket> writer;
    private CompletableFuture<Reply> lastCommit;
    private BoundService bound;
    private final byte[] kilobyte = new byte[1024];

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        service = new TracingService();
        port = ProducerPort.listen(service, UnixAddress.abstractName("ffmtrace-bench-port-" + System.nanoTime()));
        client = IpcClient.connect(port.address());
        bound = client.bindService(ProducerPort.SERVICE_NAME).get(5, TimeUnit.SECONDS);
        HeapBuffered<InitializeConnectionRequest> init = new HeapBuffered<>(InitializeConnectionRequest.FACTORY);
        init.get().setProducerName("bench");
        init.get().setSharedMemorySizeHintBytes(1 << 20);
        init.get().setSharedMemoryPageSizeHintBytes(4096);
        client.invoke(bound, "InitializeConnection", init.toByteArray()).get(5, TimeUnit.SECONDS);
        BlockingQueue<Reply> commands = new LinkedBlockingQueue<>();
        client.invoke(bound, "GetAsyncCommand", new byte[0], -1, commands::add);
        HeapBuffered<RegisterDataSourceRequest> register = new HeapBuffered<>(RegisterDataSourceRequest.FACTORY);
        register.get().setDataSourceDescriptor().setName("bench");
        client.invoke(bound, "RegisterDataSource", register.toByteArray()).get(5, TimeUnit.SECONDS);
        session = service.startSession(SessionConfig.builder().buffer(64 * 1024, OverwritePolicy.RING_BUFFER)
                .dataSource("bench").build());

        Reply setup = commands.poll(5, TimeUnit.SECONDS);
        smb = SharedMemory.attach(setup.fd(), Seals.REQUIRED);
        commands.poll(5, TimeUnit.SECONDS);
        GetAsyncCommandResponse.Decoder start = new GetAsyncCommandResponse.Decoder();
        start.reset(MemorySegment.ofArray(commands.poll(5, TimeUnit.SECONDS).replyProto()));
        GetAsyncCommandResponse.StartDataSource.Decoder startCommand = new GetAsyncCommandResponse.StartDataSource.Decoder();
        start.startDataSource(startCommand);
        DataSourceConfig.Decoder config = new DataSourceConfig.Decoder();
        startCommand.config(config);

        SharedMemoryArbiter arbiter = new SharedMemoryArbiter(smb.segment(), 4096, this::send);
        writer = arbiter.createTraceWriter(config.targetBuffer(), BufferExhaustedPolicy.STALL);
    }

    private void send(CommitRequest request) {
        HeapBuffered<CommitDataRequest> commit = new HeapBuffered<>(CommitDataRequest.FACTORY);
        request.writeTo(commit.get());
        lastCommit = client.invoke(bound, "CommitData", commit.toByteArray());
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        writer.close();
        session.close();
        client.close();
        port.close();
        service.close();
        smb.close();
    }

    @Benchmark
    public boolean commitOneChunk() throws Exception {
        TracePacket packet = writer.newTracePacket();
        packet.setSynchronizationMarker(kilobyte);
        writer.finishTracePacket();
        writer.flush();
        return lastCommit.get(5, TimeUnit.SECONDS).success();
    }
}
