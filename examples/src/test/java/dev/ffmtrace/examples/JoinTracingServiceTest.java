package dev.ffmtrace.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.ipc.Invocation;
import dev.ffmtrace.ipc.IpcHost;
import dev.ffmtrace.ipc.ServiceDescriptor;
import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.perfetto.protos.CommitDataRequest;
import dev.ffmtrace.perfetto.protos.GetAsyncCommandResponse;
import dev.ffmtrace.protozero.HeapBuffered;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Runs {@link JoinTracingService} against a ProducerPort scripted as traced drives it:
 * SetupTracing with a sealed memfd, StartDataSource once the data source is registered,
 * StopDataSource after a few commits; the example must answer NotifyDataSourceStopped
 * and end, having written its slices into the buffer.
 */
class JoinTracingServiceTest {
    private static final List<String> METHODS = List.of("InitializeConnection", "RegisterDataSource",
            "UnregisterDataSource", "CommitData", "GetAsyncCommand", "RegisterTraceWriter", "UnregisterTraceWriter",
            "NotifyDataSourceStarted", "NotifyDataSourceStopped", "ActivateTriggers", "Sync", "UpdateDataSource");

    private final CompletableFuture<Invocation> stream = new CompletableFuture<>();
    private final CompletableFuture<String> registered = new CompletableFuture<>();
    private final CompletableFuture<Void> stopped = new CompletableFuture<>();
    private final AtomicInteger chunksCommitted = new AtomicInteger();

    private void handle(String method, Invocation call) {
        switch (method) {
            case "GetAsyncCommand" -> stream.complete(call);
            case "RegisterDataSource" -> {
                dev.ffmtrace.perfetto.protos.RegisterDataSourceRequest.Decoder request =
                        new dev.ffmtrace.perfetto.protos.RegisterDataSourceRequest.Decoder();
                request.reset(java.lang.foreign.MemorySegment.ofArray(call.args()));
                dev.ffmtrace.perfetto.protos.DataSourceDescriptor.Decoder descriptor =
                        new dev.ffmtrace.perfetto.protos.DataSourceDescriptor.Decoder();
                request.dataSourceDescriptor(descriptor);
                registered.complete(descriptor.name());
                call.reply(new byte[0]);
            }
            case "CommitData" -> {
                CommitDataRequest.Decoder request = new CommitDataRequest.Decoder();
                request.reset(java.lang.foreign.MemorySegment.ofArray(call.args()));
                chunksCommitted.addAndGet(request.count(CommitDataRequest.CHUNKS_TO_MOVE_FIELD_NUMBER));
            }
            case "NotifyDataSourceStopped" -> stopped.complete(null);
            default -> call.reply(new byte[0]);
        }
    }

    private static byte[] command(java.util.function.Consumer<GetAsyncCommandResponse> fill) {
        HeapBuffered<GetAsyncCommandResponse> command = new HeapBuffered<>(GetAsyncCommandResponse.FACTORY);
        fill.accept(command.get());
        return command.toByteArray();
    }

    @Test
    void joinsTheServiceWritesUntilStoppedAndEnds() throws Exception {
        UnixAddress address = UnixAddress.abstractName("ffmtrace-join-example-" + UUID.randomUUID());
        List<ServiceDescriptor.Method> methods = new ArrayList<>();
        for (String name : METHODS) {
            methods.add(new ServiceDescriptor.Method(name, name.equals("InitializeConnection"), call -> handle(name, call)));
        }
        try (IpcHost host = IpcHost.listen(address);
             SharedMemory smb = SharedMemory.create("perfetto:shmem", 256 * 1024)) {
            host.exposeService(new ServiceDescriptor("ProducerPort", methods));
            CompletableFuture<Void> example = CompletableFuture.runAsync(() -> {
                try {
                    JoinTracingService.main(new String[] {"@" + address.name()});
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            assertEquals("track_event", registered.get(10, TimeUnit.SECONDS));
            Invocation commands = stream.get(10, TimeUnit.SECONDS);
            commands.reply(command(c -> c.setSetupTracing().setSharedBufferPageSizeKb(4)), true, smb.fd());
            commands.replyMore(command(c -> {
                GetAsyncCommandResponse.StartDataSource start = c.setStartDataSource();
                start.setNewInstanceId(1);
                dev.ffmtrace.perfetto.protos.DataSourceConfig config = start.setConfig();
                config.setName("track_event");
                config.setTargetBuffer(1);
            }));
            Await.until("3 chunks committed", () -> chunksCommitted.get() >= 3, () -> chunksCommitted.get() + " chunks");
            commands.replyMore(command(c -> c.setStopDataSource().setInstanceId(1)));
            stopped.get(10, TimeUnit.SECONDS);
            example.get(10, TimeUnit.SECONDS);
            String bytes = new String(smb.segment().toArray(ValueLayout.JAVA_BYTE), StandardCharsets.ISO_8859_1);
            assertTrue(bytes.contains("join example"), "the process track's name is in the buffer");
            assertTrue(bytes.contains("work"), "the slices' interned name is in the buffer");
            assertFalse(example.isCompletedExceptionally());
        }
    }
}
