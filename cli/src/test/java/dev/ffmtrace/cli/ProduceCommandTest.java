package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.ffmtrace.ipc.Invocation;
import dev.ffmtrace.ipc.IpcHost;
import dev.ffmtrace.ipc.ServiceDescriptor;
import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.testing.Await;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import perfetto.protos.CommitDataRequestOuterClass.CommitDataRequest;
import perfetto.protos.DataSourceConfigOuterClass.DataSourceConfig;
import perfetto.protos.ProducerPort.GetAsyncCommandResponse;
import perfetto.protos.ProducerPort.RegisterDataSourceRequest;

/**
 * {@code produce} as a producer of a ProducerPort scripted as traced drives it: the SDK's
 * data source {@code track_event} registered, started into a sealed memfd SMB, flushed
 * (the ack comes back), stopped; the command then ends and says what it wrote.
 */
class ProduceCommandTest {
    private static final List<String> METHODS = List.of("InitializeConnection", "RegisterDataSource",
            "UnregisterDataSource", "CommitData", "GetAsyncCommand", "RegisterTraceWriter", "UnregisterTraceWriter",
            "NotifyDataSourceStarted", "NotifyDataSourceStopped", "ActivateTriggers", "Sync", "UpdateDataSource");
    private static final Pattern TOTAL = Pattern.compile("total: (\\d+) requests .*; sessions stopped: 1");

    private final CompletableFuture<Invocation> stream = new CompletableFuture<>();
    private final CompletableFuture<String> registered = new CompletableFuture<>();
    private final CompletableFuture<Void> flushAcked = new CompletableFuture<>();
    private final CompletableFuture<Void> stopped = new CompletableFuture<>();
    private final AtomicInteger chunksToBuffer3 = new AtomicInteger();
    private final AtomicInteger writersRegistered = new AtomicInteger();

    private void handle(String method, Invocation call) {
        try {
            switch (method) {
                case "GetAsyncCommand" -> stream.complete(call);
                case "RegisterDataSource" -> {
                    registered.complete(RegisterDataSourceRequest.parseFrom(call.args()).getDataSourceDescriptor().getName());
                    call.reply(new byte[0]);
                }
                case "CommitData" -> {
                    CommitDataRequest request = CommitDataRequest.parseFrom(call.args());
                    chunksToBuffer3.addAndGet((int) request.getChunksToMoveList().stream()
                            .filter(move -> move.getTargetBuffer() == 3).count());
                    if (request.getFlushRequestId() == 7) {
                        flushAcked.complete(null);
                    }
                }
                case "RegisterTraceWriter" -> writersRegistered.incrementAndGet();
                case "NotifyDataSourceStopped" -> stopped.complete(null);
                default -> call.reply(new byte[0]);
            }
        } catch (InvalidProtocolBufferException e) {
            throw new IllegalArgumentException(e);
        }
    }

    @Test
    void producesUntilTheServiceStopsItsDataSource() throws Exception {
        UnixAddress address = UnixAddress.abstractName("ffmtrace-produce-test-" + UUID.randomUUID());
        List<ServiceDescriptor.Method> methods = new ArrayList<>();
        for (String name : METHODS) {
            methods.add(new ServiceDescriptor.Method(name, name.equals("InitializeConnection"), call -> handle(name, call)));
        }
        try (IpcHost host = IpcHost.listen(address);
             SharedMemory smb = SharedMemory.create("perfetto:shmem", 4 << 20)) {
            host.exposeService(new ServiceDescriptor("ProducerPort", methods));
            CompletableFuture<ConvertAndDumpTest.Run> produce = CompletableFuture.supplyAsync(() ->
                    ConvertAndDumpTest.run("produce", "--producer-socket", "@" + address.name(), "--threads", "2"));
            assertEquals("track_event", registered.get(20, TimeUnit.SECONDS));
            Invocation commands = stream.get(10, TimeUnit.SECONDS);
            commands.reply(GetAsyncCommandResponse.newBuilder().setSetupTracing(GetAsyncCommandResponse.SetupTracing
                    .newBuilder().setSharedBufferPageSizeKb(4)).build().toByteArray(), true, smb.fd());
            commands.replyMore(GetAsyncCommandResponse.newBuilder().setStartDataSource(
                    GetAsyncCommandResponse.StartDataSource.newBuilder().setNewInstanceId(1).setConfig(
                            DataSourceConfig.newBuilder().setName("track_event").setTargetBuffer(3))).build().toByteArray());
            Await.until("5 chunks committed", () -> chunksToBuffer3.get() >= 5, () -> chunksToBuffer3.get() + " chunks");
            commands.replyMore(GetAsyncCommandResponse.newBuilder().setFlush(GetAsyncCommandResponse.Flush.newBuilder()
                    .setRequestId(7).addDataSourceIds(1)).build().toByteArray());
            flushAcked.get(10, TimeUnit.SECONDS);
            commands.replyMore(GetAsyncCommandResponse.newBuilder().setStopDataSource(
                    GetAsyncCommandResponse.StopDataSource.newBuilder().setInstanceId(1)).build().toByteArray());
            stopped.get(20, TimeUnit.SECONDS);
            ConvertAndDumpTest.Run run = produce.get(20, TimeUnit.SECONDS);
            assertEquals(0, run.exit(), run.err() + run.out());
            assertTrue(run.out().contains("started: data source track_event instance 1 (buffer 3)"), run.out());
            assertTrue(run.out().contains("stopped: data source track_event instance 1 (buffer 3)"), run.out());
            Matcher matcher = TOTAL.matcher(run.out());
            assertTrue(matcher.find(), run.out());
            assertTrue(Long.parseLong(matcher.group(1)) > 0, run.out());
            // Two demo threads, each with one writer for the instance: a thread's events and counters are one sequence.
            assertEquals(2, writersRegistered.get());
        }
    }

    @Test
    void badArgumentsAreOneLine() {
        ConvertAndDumpTest.Run threads = ConvertAndDumpTest.run("produce", "--threads", "0");
        assertEquals(2, threads.exit());
        assertEquals("ffmtrace produce: --threads must be at least 1\n", threads.err());
        ConvertAndDumpTest.Run socket = ConvertAndDumpTest.run("produce", "--producer-socket", "vsock://3:1234");
        assertEquals(2, socket.exit());
        assertEquals("ffmtrace produce: --producer-socket vsock://3:1234: vsock addresses are not supported: vsock://3:1234\n",
                socket.err());
    }
}
