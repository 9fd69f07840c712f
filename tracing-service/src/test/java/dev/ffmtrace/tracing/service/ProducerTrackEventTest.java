package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.ipc.Invocation;
import dev.ffmtrace.ipc.IpcHost;
import dev.ffmtrace.ipc.ServiceDescriptor;
import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.perfetto.protos.DataSourceConfig;
import dev.ffmtrace.perfetto.protos.GetAsyncCommandResponse;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.producer.internal.DataSourceHandler;
import dev.ffmtrace.tracing.producer.internal.DataSourceInstance;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.trackevent.Category;
import dev.ffmtrace.tracing.trackevent.InternedName;
import dev.ffmtrace.tracing.trackevent.TraceWriterSink;
import dev.ffmtrace.tracing.trackevent.Track;
import dev.ffmtrace.tracing.trackevent.TrackEventWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * The TrackEvent API over a producer connection's instance, driven by a ProducerPort
 * scripted as traced drives it: the service's ClearIncrementalState moves the sink's
 * epoch, and a service that goes away mid-session leaves the writer discarding, counting
 * its calls, never throwing.
 */
class ProducerTrackEventTest {
    private static final List<String> METHODS = List.of("InitializeConnection", "RegisterDataSource",
            "UnregisterDataSource", "CommitData", "GetAsyncCommand", "RegisterTraceWriter", "UnregisterTraceWriter",
            "NotifyDataSourceStarted", "NotifyDataSourceStopped", "ActivateTriggers", "Sync", "UpdateDataSource");
    private static final Category CATEGORY = new Category("test");
    private static final InternedName NAME = InternedName.of("slice");

    private final CompletableFuture<Invocation> stream = new CompletableFuture<>();
    private final CompletableFuture<Void> registered = new CompletableFuture<>();
    private final AtomicInteger commits = new AtomicInteger();

    private void handle(String method, Invocation call) {
        switch (method) {
            case "GetAsyncCommand" -> stream.complete(call);
            case "RegisterDataSource" -> {
                registered.complete(null);
                call.reply(new byte[0]);
            }
            case "CommitData" -> commits.incrementAndGet();
            default -> call.reply(new byte[0]);
        }
    }

    private static byte[] command(Consumer<GetAsyncCommandResponse> fill) {
        HeapBuffered<GetAsyncCommandResponse> command = new HeapBuffered<>(GetAsyncCommandResponse.FACTORY);
        fill.accept(command.get());
        return command.toByteArray();
    }

    @Test
    void trackEventsGoThroughTheConnectionAndDiscardOnceTheServiceIsGone() throws Exception {
        UnixAddress address = UnixAddress.abstractName("ffmtrace-trackevent-producer-" + UUID.randomUUID());
        List<ServiceDescriptor.Method> methods = new ArrayList<>();
        for (String name : METHODS) {
            methods.add(new ServiceDescriptor.Method(name, name.equals("InitializeConnection"), call -> handle(name, call)));
        }
        CompletableFuture<DataSourceInstance> started = new CompletableFuture<>();
        IpcHost host = IpcHost.listen(address);
        try (SharedMemory smb = SharedMemory.create("perfetto:shmem", 64 * 1024);
             ProducerConnection producer = ProducerConnection.connect(ProducerConnection.Options.named("track-event-test")
                     .withSocket(address).withRetryDelays(new ProducerConnection.RetryDelays(Duration.ofMillis(50),
                             Duration.ofMillis(50), Duration.ofMillis(200), Duration.ofMillis(200))))) {
            host.exposeService(new ServiceDescriptor("ProducerPort", methods));
            producer.registerDataSource(DataSourceDescriptor.named("track_event"), new DataSourceHandler() {
                @Override
                public void onStart(DataSourceInstance instance) {
                    started.complete(instance);
                }
            });
            registered.get(10, TimeUnit.SECONDS);
            Invocation commands = stream.get(10, TimeUnit.SECONDS);
            commands.reply(command(c -> c.setSetupTracing().setSharedBufferPageSizeKb(4)), true, smb.fd());
            commands.replyMore(command(c -> {
                GetAsyncCommandResponse.StartDataSource start = c.setStartDataSource();
                start.setNewInstanceId(1);
                DataSourceConfig config = start.setConfig();
                config.setName("track_event");
                config.setTargetBuffer(1);
            }));
            DataSourceInstance instance = started.get(10, TimeUnit.SECONDS);
            TraceWriterSink sink = new TraceWriterSink(instance.newTraceWriter(BufferExhaustedPolicy.DROP), instance::incrementalStateClears);
            Track thread = Track.thread(Track.process(1234, "test"), 5678, "thread");
            try (TrackEventWriter writer = new TrackEventWriter(sink, TrackEventWriter.Config.forThread(thread))) {
                for (int i = 0; i < 100; i++) {
                    writer.slice(CATEGORY, NAME).close();
                }
                writer.flush();
                assertEquals(0, writer.discardedEvents());
                Await.until("a commit", () -> commits.get() > 0);

                long epoch = sink.incrementalStateEpoch();
                commands.replyMore(command(c -> c.setClearIncrementalState().addDataSourceIds(1)));
                Await.until("the next incremental state epoch", () -> sink.incrementalStateEpoch() == epoch + 1);

                host.close();
                // Writing on while the connection tears the session down: nothing throws.
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (writer.isOpen() && System.nanoTime() < deadline) {
                    writer.slice(CATEGORY, NAME).close();
                }
                assertFalse(writer.isOpen());
                assertFalse(instance.isRunning());
                for (int i = 0; i < 100; i++) {
                    writer.slice(CATEGORY, NAME).close();
                }
                assertTrue(writer.discardedEvents() >= 100, "discarded " + writer.discardedEvents());
                assertEquals(1, producer.stats().writersClosedByDisconnect());
            }
            // A writer asked for after the service went away is born discarding.
            try (TrackEventWriter late = new TrackEventWriter(new TraceWriterSink(instance.newTraceWriter(BufferExhaustedPolicy.DROP), instance::incrementalStateClears))) {
                assertFalse(late.isOpen());
                late.instant(CATEGORY, thread, NAME);
                assertEquals(1, late.discardedEvents());
            }
        } finally {
            host.close();
        }
    }

}
