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
import dev.ffmtrace.perfetto.protos.DataSourceDescriptor;
import dev.ffmtrace.perfetto.protos.InitializeConnectionRequest;
import dev.ffmtrace.perfetto.protos.RegisterDataSourceRequest;
import dev.ffmtrace.perfetto.protos.RegisterDataSourceResponse;
import dev.ffmtrace.perfetto.protos.TracingServiceState;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.tracing.service.Guardrails;
import dev.ffmtrace.tracing.service.LocalProducers;
import dev.ffmtrace.tracing.service.Producer;
import dev.ffmtrace.tracing.service.ProducerPort;
import dev.ffmtrace.tracing.service.TracingService;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #27, item 5: a producer's huge data source name no longer breaks QueryServiceState
 * for every consumer. A producer process may not register such a name (its error reply, a
 * refusal counted); the state is split over replies entry by entry, and an entry that
 * alone would not fit a frame is left out, counted, the reply sent all the same.
 */
class ServiceStateLimitsTest {
    /** A hang detector: the replies come at once or never. */
    private static final long TIMEOUT_MS = 30_000;
    /** The name of issue #27: the longest whose RegisterDataSource still fits a 128 KiB frame. */
    private static final int HUGE_NAME = 131_040;

    @TempDir
    Path dir;

    private TracingService service;
    private ConsumerPort consumerPort;
    private IpcHost consumerHost;
    private ProducerPort producerPort;

    private static UnixAddress address(String kind) {
        return UnixAddress.abstractName("ffmtrace-state-limits-" + kind + "-" + UUID.randomUUID());
    }

    @BeforeEach
    void start() {
        service = new TracingService();
        consumerPort = new ConsumerPort(service, "limits test");
        consumerHost = IpcHost.listen(address("consumer"));
        consumerHost.exposeService(consumerPort.descriptor());
        producerPort = ProducerPort.listen(service, address("producer"));
    }

    @AfterEach
    void stop() {
        producerPort.close();
        consumerHost.close();
        consumerPort.close();
        service.close();
    }

    private TracingServiceState.Decoder queryState() throws InterruptedException {
        try (ConsumerConnection sentinel = ConsumerConnection.connect(consumerHost.address(), TIMEOUT_MS)) {
            byte[] state = sentinel.queryServiceState(TIMEOUT_MS);
            assertNotNull(state, "the sentinel consumer got its QueryServiceState replies");
            TracingServiceState.Decoder decoder = new TracingServiceState.Decoder();
            decoder.reset(MemorySegment.ofArray(state));
            assertFalse(decoder.hasError());
            return decoder;
        }
    }

    private static List<String> dataSourceNames(TracingServiceState.Decoder state) {
        List<String> names = new ArrayList<>();
        RepeatedFieldIterator sources = state.dataSources(new RepeatedFieldIterator());
        TracingServiceState.DataSource.Decoder source = new TracingServiceState.DataSource.Decoder();
        DataSourceDescriptor.Decoder descriptor = new DataSourceDescriptor.Decoder();
        while (sources.next()) {
            source.reset(sources.field());
            assertTrue(source.dsDescriptor(descriptor));
            names.add(descriptor.name());
        }
        return names;
    }

    private Path registerRequest(String name) throws Exception {
        HeapBuffered<RegisterDataSourceRequest> request = new HeapBuffered<>(RegisterDataSourceRequest.FACTORY);
        request.get().setDataSourceDescriptor().setName(name);
        Path file = dir.resolve("register-" + name.length() + ".bin");
        Files.write(file, request.toByteArray());
        return file;
    }

    /** perfetto_ipc_tool's "1 0 HEX" reply line as its bytes. */
    private static byte[] replyBytes(String line) {
        String[] parts = line.split(" ", -1);
        assertEquals("1", parts[0], "the call succeeded: " + line);
        return HexFormat.of().parseHex(parts[2]);
    }

    @Test
    void aProducerProcessCannotRegisterANameTooLongAndConsumersAreServedWhileItStays() throws Exception {
        HeapBuffered<InitializeConnectionRequest> init = new HeapBuffered<>(InitializeConnectionRequest.FACTORY);
        init.get().setProducerName("attacker");
        String huge = "n".repeat(HUGE_NAME);
        String longest = "m".repeat(Guardrails.MAX_DATA_SOURCE_NAME_BYTES);
        try (HeldClient attacker = HeldClient.start(false, List.of(CPrograms.program("perfetto_ipc_tool").toString(),
                "call", producerPort.address().toString(), "ProducerPort",
                "InitializeConnection", HexFormat.of().formatHex(init.toByteArray()),
                "RegisterDataSource", "@" + registerRequest(huge),
                "RegisterDataSource", "@" + registerRequest(longest)))) {
            List<String> replies = attacker.awaitHeld();
            assertEquals(3, replies.size(), replies.toString());
            RegisterDataSourceResponse.Decoder refused = new RegisterDataSourceResponse.Decoder();
            refused.reset(MemorySegment.ofArray(replyBytes(replies.get(1))));
            assertEquals("Data source name too long (131040 bytes > 1024)", refused.error());
            assertEquals(0, replyBytes(replies.get(2)).length, "a name at the limit is registered");
            assertEquals(1, producerPort.refusals());
            assertEquals(0, producerPort.violations(), "a refusal is not a violation: the producer stays");

            List<String> names = dataSourceNames(queryState());
            assertEquals(List.of(longest), names);
            // A C consumer, whose frames may not exceed 128 KiB either, is served too.
            HeldClient sentinel = HeldClient.start(false, List.of(CPrograms.program("perfetto_ipc_tool").toString(),
                    "call", consumerHost.address().toString(), "ConsumerPort", "QueryServiceState", ""));
            try (sentinel) {
                List<String> state = sentinel.awaitHeld();
                assertTrue(state.getLast().startsWith("1 0 "), state.toString());
            }
        }
    }

    @Test
    void theStateIsSplitEntryByEntryAndAnEntryThatFitsNoReplyIsLeftOut() throws Exception {
        // In-process producers are the application's own and not held to the limit: they make the entries.
        List<String> big = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Producer producer = LocalProducers.connect(service, "big-" + i, 1 << 20);
            big.add(i + "x".repeat(60_000));
            LocalProducers.register(producer, big.getLast());
        }
        Producer huge = LocalProducers.connect(service, "huge", 1 << 20);
        LocalProducers.register(huge, "h".repeat(HUGE_NAME));

        TracingServiceState.Decoder state = queryState();
        assertEquals(big, dataSourceNames(state), "three 60 KB names came, in two replies at least");
        assertEquals(4, state.producersCount());
        assertEquals("limits test", state.tracingServiceVersion());
        assertEquals(1, consumerPort.stateEntriesLeftOut(), "the one that fits no reply is left out");
        assertEquals(0, consumerPort.requestFailures());
    }

    @Test
    void aProducerProcessRegistersAtMostItsShareOfDataSources() throws Exception {
        HeapBuffered<InitializeConnectionRequest> init = new HeapBuffered<>(InitializeConnectionRequest.FACTORY);
        init.get().setProducerName("many");
        List<String> command = new ArrayList<>(List.of(CPrograms.program("perfetto_ipc_tool").toString(), "call",
                producerPort.address().toString(), "ProducerPort",
                "InitializeConnection", HexFormat.of().formatHex(init.toByteArray())));
        for (int i = 0; i <= Guardrails.MAX_DATA_SOURCES_PER_PRODUCER; i++) {
            HeapBuffered<RegisterDataSourceRequest> request = new HeapBuffered<>(RegisterDataSourceRequest.FACTORY);
            request.get().setDataSourceDescriptor().setName("source-" + i);
            command.addAll(List.of("RegisterDataSource", HexFormat.of().formatHex(request.toByteArray())));
        }
        try (HeldClient attacker = HeldClient.start(false, command)) {
            List<String> replies = attacker.awaitHeld();
            RegisterDataSourceResponse.Decoder refused = new RegisterDataSourceResponse.Decoder();
            refused.reset(MemorySegment.ofArray(replyBytes(replies.getLast())));
            assertEquals("Too many data sources registered by the producer (limit is 1024)", refused.error());
            assertEquals(0, replyBytes(replies.get(replies.size() - 2)).length, "the 1024th is registered");
            assertEquals(1, producerPort.refusals());
            assertEquals(Guardrails.MAX_DATA_SOURCES_PER_PRODUCER, dataSourceNames(queryState()).size());
        }
    }
}
