package dev.ffmtrace.tracing.service.ipc;

import dev.ffmtrace.tracing.consumer.ConsumerConnection;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.ipc.IpcHost;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.testing.CPrograms;
import dev.ffmtrace.memory.testing.HeldClient;
import dev.ffmtrace.memory.testing.OtherUser;
import dev.ffmtrace.perfetto.protos.DataSourceConfig;
import dev.ffmtrace.perfetto.protos.EnableTracingRequest;
import dev.ffmtrace.perfetto.protos.EnableTracingResponse;
import dev.ffmtrace.perfetto.protos.FlushRequest;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.service.DataSource;
import dev.ffmtrace.tracing.service.Guardrails;
import dev.ffmtrace.tracing.service.LocalProducers;
import dev.ffmtrace.tracing.service.Producer;
import dev.ffmtrace.tracing.service.TracingService;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #27, item 6: Perfetto's guardrails on the consumer port, each refusal Perfetto's
 * error reply and a {@link ConsumerPort#refusals() count}, while a sentinel consumer is
 * served. The attackers are C processes on the real socket; sessions of other users run
 * as other uids where the tests can switch users.
 */
class ConsumerGuardrailsTest {
    /** A hang detector: the replies come at once or never. */
    private static final long TIMEOUT_MS = 30_000;

    @TempDir
    Path dir;

    private TracingService service;
    private ConsumerPort port;
    private IpcHost host;
    private final List<HeldClient> clients = new ArrayList<>();
    private final List<ConsumerConnection> connections = new ArrayList<>();

    @BeforeEach
    void start() {
        OtherUser.openForTraversal(dir);
        service = new TracingService();
        port = new ConsumerPort(service, "guardrails test");
        host = IpcHost.listen(UnixAddress.abstractName("ffmtrace-guardrails-" + UUID.randomUUID()));
        host.exposeService(port.descriptor());
    }

    @AfterEach
    void stop() {
        clients.forEach(HeldClient::close);
        connections.forEach(ConsumerConnection::close);
        host.close();
        port.close();
        service.close();
    }

    private static byte[] enableRequest(Consumer<TraceConfig> fill) {
        HeapBuffered<EnableTracingRequest> request = new HeapBuffered<>(EnableTracingRequest.FACTORY);
        fill.accept(request.get().setTraceConfig());
        return request.toByteArray();
    }

    private Path file(String name, byte[] bytes) throws IOException {
        Path file = dir.resolve(name);
        Files.write(file, bytes);
        return file;
    }

    /** perfetto_ipc_tool call on the consumer port, as {@code uid} (-1: this user), held once its calls are done. */
    private HeldClient call(int uid, String... calls) {
        List<String> command = new ArrayList<>(List.of(CPrograms.program("perfetto_ipc_tool").toString(), "call",
                host.address().toString(), "ConsumerPort"));
        command.addAll(List.of(calls));
        HeldClient client = HeldClient.start(uid, command);
        clients.add(client);
        return client;
    }

    private static EnableTracingResponse.Decoder enableResponse(String line) {
        String[] parts = line.split(" ", -1);
        assertEquals("1", parts[0], line);
        EnableTracingResponse.Decoder response = new EnableTracingResponse.Decoder();
        response.reset(MemorySegment.ofArray(HexFormat.of().parseHex(parts[2])));
        assertFalse(response.hasError());
        return response;
    }

    /** The memfds this process has open: every trace buffer is one. */
    private static long memfds() throws IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.filter(fd -> {
                try {
                    return Files.readSymbolicLink(fd).toString().startsWith("/memfd:");
                } catch (IOException e) {
                    return false; // the listing's own fd, closed by now
                }
            }).count();
        }
    }

    private void assertSentinelServed() throws InterruptedException {
        try (ConsumerConnection sentinel = ConsumerConnection.connect(host.address(), TIMEOUT_MS)) {
            assertNotNull(sentinel.queryServiceState(TIMEOUT_MS), "the sentinel consumer is served");
        }
    }

    /** A session of this user's, through a consumer connection of the test's; its EnableTracing reply stays deferred. */
    private CompletableFuture<ConsumerConnection.TracingDisabled> session() throws InterruptedException {
        ConsumerConnection consumer = ConsumerConnection.connect(host.address(), TIMEOUT_MS);
        connections.add(consumer);
        CompletableFuture<ConsumerConnection.TracingDisabled> disabled = consumer.enableTracing(
                enableRequestConfig(), -1);
        // QueryServiceState runs after EnableTracing on the consumer's worker: once answered, the session is in.
        assertNotNull(consumer.queryServiceState(TIMEOUT_MS));
        return disabled;
    }

    private static byte[] enableRequestConfig() {
        HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
        config.get().addBuffers().setSizeKb(64);
        return config.toByteArray();
    }

    @Test
    void tenThousandBuffersAreRefusedBeforeAnyBufferIsMade() throws Exception {
        long memfdsBefore = memfds();
        Path request = file("buffers.bin", enableRequest(config -> {
            for (int i = 0; i < 10_000; i++) {
                config.addBuffers().setSizeKb(4);
            }
        }));
        String reason = OtherUser.unavailableReason();
        HeldClient attacker = call(reason == null ? OtherUser.UID : -1, "EnableTracing", "@" + request);
        List<String> replies = attacker.awaitHeld();
        EnableTracingResponse.Decoder response = enableResponse(replies.getLast());
        assertTrue(response.disabled());
        assertEquals("Too many buffers configured (10000)", response.error());
        assertEquals(1, port.refusals());
        assertEquals(memfdsBefore, memfds(), "no buffer was made");
        assertEquals(0, port.sessionCount());

        Path most = file("most.bin", enableRequest(config -> {
            for (int i = 0; i < Guardrails.MAX_BUFFERS_PER_SESSION; i++) {
                config.addBuffers().setSizeKb(4);
            }
        }));
        call(-1, "!EnableTracing", "@" + most, "QueryServiceState", "").awaitHeld();
        assertEquals(1, port.sessionCount(), "128 buffers are allowed");
        assertSentinelServed();
    }

    @Test
    void buffersOverTheMemoryOfAllSessionsAreRefusedBeforeAnyIsMade() throws Exception {
        long memfdsBefore = memfds();
        Path request = file("memory.bin", enableRequest(config -> {
            config.addBuffers().setSizeKb(1536 * 1024);
            config.addBuffers().setSizeKb(1536 * 1024);
        }));
        EnableTracingResponse.Decoder response = enableResponse(call(-1, "EnableTracing", "@" + request)
                .awaitHeld().getLast());
        assertEquals("Requested too large trace buffer (3145728kB  > 2097152 kB)", response.error());
        assertEquals(1, port.refusals());
        assertEquals(memfdsBefore, memfds(), "no buffer was made");
        assertSentinelServed();
    }

    /** A ProtoVM's state lives in the daemon's heap: its memory limit counts as buffer memory. */
    @Test
    void protoVmLimitsCountAsBufferMemory() throws Exception {
        long memfdsBefore = memfds();
        Path request = file("protovm.bin", enableRequest(config -> {
            config.addBuffers().setSizeKb(1024);
            DataSourceConfig source = config.addDataSources().setConfig();
            source.setName("deltas");
            source.setProtovmConfig().setMemoryLimitKb(2048 * 1024);
        }));
        EnableTracingResponse.Decoder response = enableResponse(call(-1, "EnableTracing", "@" + request)
                .awaitHeld().getLast());
        assertEquals("Requested too large trace buffer (2098176kB  > 2097152 kB)", response.error());
        assertEquals(1, port.refusals());
        assertEquals(memfdsBefore, memfds(), "no buffer was made");
        assertSentinelServed();
    }

    @Test
    void fiveSessionsPerUidAndFifteenInAll() throws Exception {
        for (int i = 0; i < Guardrails.MAX_SESSIONS_PER_UID; i++) {
            session();
        }
        CompletableFuture<ConsumerConnection.TracingDisabled> sixth = session();
        assertEquals("Too many concurrent tracing sesions (5) for uid 0 limit is 5",
                sixth.get(TIMEOUT_MS, TimeUnit.MILLISECONDS).error());
        assertEquals(1, port.refusals());
        assertEquals(5, port.sessionCount());

        String reason = OtherUser.unavailableReason();
        if (reason == null) {
            Path request = file("session.bin", enableRequest(config -> config.addBuffers().setSizeKb(64)));
            // Five sessions each for two more users: fifteen in all.
            for (int uid : new int[] {OtherUser.UID, OtherUser.UID - 1}) {
                for (int i = 0; i < Guardrails.MAX_SESSIONS_PER_UID; i++) {
                    call(uid, "!EnableTracing", "@" + request, "QueryServiceState", "").awaitHeld();
                }
            }
            assertEquals(Guardrails.MAX_SESSIONS, port.sessionCount());
            EnableTracingResponse.Decoder refused = enableResponse(
                    call(OtherUser.UID - 2, "EnableTracing", "@" + request).awaitHeld().getLast());
            assertEquals("Too many concurrent tracing sesions (15)", refused.error());
            assertEquals(2, port.refusals());
        }
        assertSentinelServed();
    }

    @Test
    void requestsOverAConnectionsPendingOnesFailWhileOthersAreServed() throws Exception {
        // A data source whose flush does not return until the test says: the attacker's worker is busy.
        Producer producer = LocalProducers.connect(service, "slow", 1 << 20);
        DataSource slow = LocalProducers.register(producer, "slow");
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch flushing = new CountDownLatch(1);
        slow.onFlush(() -> {
            flushing.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        try {
            Path enable = file("enable.bin", enableRequest(config -> {
                config.addBuffers().setSizeKb(64);
                config.addDataSources().setConfig().setName("slow");
                config.setFlushTimeoutMs(600_000);
            }));
            HeapBuffered<FlushRequest> flush = new HeapBuffered<>(FlushRequest.FACTORY);
            flush.get().setTimeoutMs(600_000);
            List<String> calls = new ArrayList<>(List.of("!EnableTracing", "@" + enable, "QueryServiceState", "",
                    "!Flush", HexFormat.of().formatHex(flush.toByteArray()), "-", "-"));
            int flood = Guardrails.MAX_PENDING_REQUESTS + 44;
            for (int i = 0; i < flood; i++) {
                calls.addAll(List.of("!GetTraceStats", ""));
            }
            calls.addAll(List.of("QueryServiceState", ""));
            HeldClient attacker = call(-1, calls.toArray(String[]::new));
            attacker.awaitLine("paused");
            // The flush has started on the attacker's worker and holds it: what follows waits.
            assertTrue(flushing.await(TIMEOUT_MS, TimeUnit.MILLISECONDS));
            attacker.resume();
            List<String> replies = attacker.awaitHeld();
            assertEquals("0 0 ", replies.getLast(), "the last request was refused: the flush holds the others");
            assertEquals(flood - Guardrails.MAX_PENDING_REQUESTS + 1, port.refusals());
            assertSentinelServed();
        } finally {
            release.countDown();
        }
    }

    /**
     * Item 4's other half: a consumer that sends requests and never reads their replies.
     * They fill its socket; the send that finds no room for the host's send timeout ends
     * the connection, which stops the consumer's session and frees it, while the sentinel
     * is served.
     */
    @Test
    void aConsumerThatNeverReadsItsRepliesIsDisconnectedAndItsSessionStopped() throws Exception {
        host.close();
        host = IpcHost.listen(UnixAddress.abstractName("ffmtrace-guardrails-" + UUID.randomUUID()),
                IpcHost.Options.DEFAULT.withSendTimeout(Duration.ofMillis(500)));
        host.exposeService(port.descriptor());
        // A producer whose data sources' names make each QueryServiceState reply about 100 KB.
        Producer wordy = LocalProducers.connect(service, "wordy", 1 << 20);
        for (int i = 0; i < 100; i++) {
            LocalProducers.register(wordy, i + "w".repeat(1000));
        }
        DataSource probe = LocalProducers.register(wordy, "probe");
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch stopped = new CountDownLatch(1);
        probe.onStart(config -> started.countDown());
        probe.onStop(done -> {
            stopped.countDown();
            done.run();
        });
        Path enable = file("enable.bin", enableRequest(config -> {
            config.addBuffers().setSizeKb(64);
            config.addDataSources().setConfig().setName("probe");
        }));
        List<String> calls = new ArrayList<>(List.of("!EnableTracing", "@" + enable));
        for (int i = 0; i < 20; i++) {
            calls.addAll(List.of("!QueryServiceState", ""));
        }
        call(-1, calls.toArray(String[]::new));
        assertTrue(started.await(TIMEOUT_MS, TimeUnit.MILLISECONDS), "the attacker's session started");
        assertTrue(stopped.await(TIMEOUT_MS, TimeUnit.MILLISECONDS), "its session stopped when it was disconnected");
        assertEquals(1, host.sendTimeouts());
        assertSentinelServed();
        assertEquals(0, port.sessionCount());
    }

    /** A clone is a session of its consumer's uid, as in Perfetto, and the trace it holds counts as buffer memory. */
    @Test
    void clonesCountAsSessionsOfTheirUid() throws Exception {
        session();
        List<ConsumerConnection> cloners = new ArrayList<>();
        for (int i = 1; i < Guardrails.MAX_SESSIONS_PER_UID; i++) {
            ConsumerConnection cloner = ConsumerConnection.connect(host.address(), TIMEOUT_MS);
            connections.add(cloner);
            cloners.add(cloner);
            ConsumerConnection.Cloned cloned = cloner.cloneSession(1, TIMEOUT_MS);
            assertTrue(cloned.success(), cloned.error());
        }
        ConsumerConnection refused = ConsumerConnection.connect(host.address(), TIMEOUT_MS);
        connections.add(refused);
        ConsumerConnection.Cloned over = refused.cloneSession(1, TIMEOUT_MS);
        assertFalse(over.success());
        assertEquals("Too many concurrent tracing sesions (5) for uid 0 limit is 5", over.error());
        assertEquals(1, port.refusals());

        // A clone read is gone: its place is free again.
        assertNotNull(cloners.getFirst().readBuffers(TIMEOUT_MS));
        ConsumerConnection.Cloned again = refused.cloneSession(1, TIMEOUT_MS);
        assertTrue(again.success(), again.error());
        assertSentinelServed();
    }
}
