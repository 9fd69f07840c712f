package dev.ffmtrace.tracing.service.ipc;

import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.memory.testing.OpenDescriptors;
import dev.ffmtrace.tracing.consumer.ConsumerConnection;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.ipc.BoundService;
import dev.ffmtrace.ipc.IpcClient;
import dev.ffmtrace.ipc.IpcHost;
import dev.ffmtrace.memory.FileDescriptorChannel;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.perfetto.protos.FlushRequest;
import dev.ffmtrace.perfetto.protos.ObservableEvents;
import dev.ffmtrace.perfetto.protos.ObserveEventsRequest;
import dev.ffmtrace.perfetto.protos.QueryServiceStateRequest;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.service.LocalProducers;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Random and mutated arguments for every ConsumerPort method, some with a descriptor,
 * against a running port: no crash, the port keeps serving a well-behaved consumer, and
 * every descriptor and session is gone once the fuzzing consumers are.
 */
class ConsumerPortFuzzTest {
    private static final int CLIENTS = 16;
    private static final int CALLS_PER_CLIENT = 200;
    private static final List<String> METHODS = List.of("EnableTracing", "DisableTracing", "ReadBuffers", "FreeBuffers",
            "Flush", "StartTracing", "ChangeTraceConfig", "Detach", "Attach", "GetTraceStats", "ObserveEvents",
            "QueryServiceState", "QueryCapabilities", "SaveTraceForBugreport", "CloneSession");

    @TempDir
    Path dir;

    /** Valid arguments of each kind the methods take, for mutation. */
    private static List<byte[]> validArgs() throws Exception {
        List<byte[]> args = new ArrayList<>();
        byte[] config = SessionConfig.builder().buffer(64, OverwritePolicy.RING_BUFFER).dataSource("track_event")
                .durationMs(50).build().traceConfig().toArray(ValueLayout.JAVA_BYTE);
        byte[] fileConfig = SessionConfig.builder().buffer(64, OverwritePolicy.DISCARD).dataSource("track_event")
                .writeIntoFile(100, 4096).durationMs(50).build().traceConfig().toArray(ValueLayout.JAVA_BYTE);
        for (byte[] c : List.of(config, fileConfig)) {
            HeapBuffered<dev.ffmtrace.perfetto.protos.EnableTracingRequest> enable =
                    new HeapBuffered<>(dev.ffmtrace.perfetto.protos.EnableTracingRequest.FACTORY);
            enable.get().appendBytes(dev.ffmtrace.perfetto.protos.EnableTracingRequest.TRACE_CONFIG_FIELD_NUMBER, c);
            args.add(enable.toByteArray());
        }
        HeapBuffered<FlushRequest> flush = new HeapBuffered<>(FlushRequest.FACTORY);
        flush.get().setTimeoutMs(100);
        args.add(flush.toByteArray());
        HeapBuffered<ObserveEventsRequest> observe = new HeapBuffered<>(ObserveEventsRequest.FACTORY);
        observe.get().addEventsToObserve(ObservableEvents.Type.TYPE_ALL_DATA_SOURCES_STARTED);
        observe.get().addEventsToObserve(ObservableEvents.Type.TYPE_DATA_SOURCES_INSTANCES);
        args.add(observe.toByteArray());
        HeapBuffered<QueryServiceStateRequest> query = new HeapBuffered<>(QueryServiceStateRequest.FACTORY);
        query.get().setSessionsOnly(true);
        args.add(query.toByteArray());
        return args;
    }

    private static byte[] randomArgs(SplittableRandom random, List<byte[]> valid) {
        return switch (random.nextInt(4)) {
            case 0 -> new byte[0];
            case 1 -> {
                byte[] bytes = new byte[random.nextInt(64)];
                random.nextBytes(bytes);
                yield bytes;
            }
            default -> {
                byte[] bytes = valid.get(random.nextInt(valid.size())).clone();
                for (int flips = 1 + random.nextInt(3); flips > 0 && bytes.length > 0; flips--) {
                    bytes[random.nextInt(bytes.length)] = (byte) random.nextInt(256);
                }
                yield random.nextInt(4) == 0 ? java.util.Arrays.copyOf(bytes, random.nextInt(bytes.length + 1)) : bytes;
            }
        };
    }

    @Test
    void randomAndMutatedArgumentsNeitherCrashNorLeak() throws Exception {
        try (TracingService service = new TracingService();
             ConsumerPort port = new ConsumerPort(service, "fuzz");
             IpcHost host = IpcHost.listen(ConsumerPortTest.newAddress())) {
            host.exposeService(port.descriptor());
            LocalProducers.register(LocalProducers.connect(service, "fuzz-producer"), "track_event");
            byte[] wellBehaved = SessionConfig.builder().buffer(256, OverwritePolicy.RING_BUFFER)
                    .dataSource("track_event").build().traceConfig().toArray(ValueLayout.JAVA_BYTE);
            runSession(host, port, wellBehaved);
            OpenDescriptors fdsBefore = OpenDescriptors.snapshot();

            List<byte[]> valid = validArgs();
            SplittableRandom random = new SplittableRandom(20261124);
            AtomicLong replies = new AtomicLong();
            Path output = Files.createFile(dir.resolve("fuzz.pftrace"));
            for (int c = 0; c < CLIENTS; c++) {
                try (IpcClient client = IpcClient.connect(host.address());
                     FileDescriptorChannel file = FileDescriptorChannel.openForWriting(output)) {
                    BoundService bound = client.bindService(ConsumerPort.SERVICE_NAME).get(10, TimeUnit.SECONDS);
                    assertEquals(METHODS.size(), bound.methodIds().size());
                    for (int i = 0; i < CALLS_PER_CLIENT; i++) {
                        String method = METHODS.get(random.nextInt(METHODS.size()));
                        boolean withFd = (method.equals("EnableTracing") || method.equals("CloneSession"))
                                && random.nextBoolean();
                        client.invoke(bound, method, randomArgs(random, valid), withFd ? file.fd() : -1, reply -> {
                            StreamSocket.closeReceived(reply.fd());
                            replies.incrementAndGet();
                        });
                    }
                    if (c == 0) {
                        // One well-formed call, so that a reply is certain to come before the
                        // first client goes: the port answers beside the garbage.
                        client.invoke(bound, "QueryServiceState", new byte[0], -1, reply -> replies.incrementAndGet());
                        Await.until("a reply to the first client", () -> replies.get() > 0);
                    }
                    // Some calls finish on the port's side while others are in flight when the client goes.
                    Thread.sleep(random.nextInt(50));
                }
            }
            Await.until("the fuzzing consumers and their sessions are gone",
                    () -> port.consumerCount() == 0 && port.sessionCount() == 0);
            assertTrue(replies.get() > 0, "waited for above");
            assertEquals(0, host.violations(), "arguments are the method's business, not the wire's");

            runSession(host, port, wellBehaved);
            Await.until("no descriptor leaked", () -> fdsBefore.openedSince().isEmpty(),
                    () -> "opened since: " + fdsBefore.openedSince());
        }
    }

    /** A whole session by a well-behaved consumer: enable, flush, disable, read, free. */
    private static void runSession(IpcHost host, ConsumerPort port, byte[] config) throws Exception {
        try (ConsumerConnection consumer = ConsumerConnection.connect(host.address(), ConsumerPortTest.TIMEOUT_MS)) {
            CompletableFuture<ConsumerConnection.TracingDisabled> disabled = consumer.enableTracing(config, -1);
            assertTrue(consumer.flush(0, ConsumerPortTest.TIMEOUT_MS));
            assertTrue(consumer.disableTracing(ConsumerPortTest.TIMEOUT_MS));
            assertTrue(disabled.get(ConsumerPortTest.TIMEOUT_MS, TimeUnit.MILLISECONDS).ok());
            assertTrue(ConsumerPortTest.read(consumer.readBuffers(ConsumerPortTest.TIMEOUT_MS)).statsPackets() > 0);
            assertTrue(consumer.freeBuffers(ConsumerPortTest.TIMEOUT_MS));
        }
        // The host closes its end of the connection when its I/O thread sees the client go.
        Await.until("the well-behaved session and its connection are gone",
                () -> port.sessionCount() == 0 && host.clientCount() == 0);
    }
}
