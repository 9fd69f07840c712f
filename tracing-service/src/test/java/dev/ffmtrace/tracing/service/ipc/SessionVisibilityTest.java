package dev.ffmtrace.tracing.service.ipc;

import dev.ffmtrace.tracing.consumer.ConsumerConnection;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.ffmtrace.ipc.IpcHost;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.testing.CPrograms;
import dev.ffmtrace.memory.testing.HeldClient;
import dev.ffmtrace.memory.testing.OtherUser;
import dev.ffmtrace.perfetto.protos.CloneSessionRequest;
import dev.ffmtrace.perfetto.protos.CloneSessionResponse;
import dev.ffmtrace.perfetto.protos.EnableTracingRequest;
import dev.ffmtrace.perfetto.protos.QueryServiceStateResponse;
import dev.ffmtrace.perfetto.protos.TracingServiceState;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.tracing.service.TracingService;
import java.io.ByteArrayOutputStream;
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
 * Issue #27, item 7: a consumer sees in QueryServiceState, and clones, only its own uid's
 * sessions; root sees them all, as in Perfetto. The other user is a C client run as
 * uid {@value OtherUser#UID}; the tests skip where users cannot be switched.
 */
class SessionVisibilityTest {
    private static final long TIMEOUT_MS = 30_000;

    @TempDir
    Path dir;

    private TracingService service;
    private ConsumerPort port;
    private IpcHost host;
    private final List<HeldClient> clients = new ArrayList<>();

    @BeforeEach
    void start() {
        String reason = OtherUser.unavailableReason();
        assumeTrue(reason == null, reason);
        OtherUser.openForTraversal(dir);
        service = new TracingService();
        port = new ConsumerPort(service, "visibility test");
        host = IpcHost.listen(UnixAddress.abstractName("ffmtrace-visibility-" + UUID.randomUUID()));
        host.exposeService(port.descriptor());
    }

    @AfterEach
    void stop() {
        if (host == null) {
            return;
        }
        clients.forEach(HeldClient::close);
        host.close();
        port.close();
        service.close();
    }

    private HeldClient call(int uid, String... calls) {
        List<String> command = new ArrayList<>(List.of(CPrograms.program("perfetto_ipc_tool").toString(), "call",
                host.address().toString(), "ConsumerPort"));
        command.addAll(List.of(calls));
        HeldClient client = HeldClient.start(uid, command);
        clients.add(client);
        return client;
    }

    /** The state in a QueryServiceState's reply lines, merged as Perfetto's client merges them. */
    private static TracingServiceState.Decoder state(List<String> replies) {
        ByteArrayOutputStream merged = new ByteArrayOutputStream();
        QueryServiceStateResponse.Decoder response = new QueryServiceStateResponse.Decoder();
        for (String reply : replies) {
            String[] parts = reply.split(" ", -1);
            assertEquals("1", parts[0], reply);
            response.reset(MemorySegment.ofArray(HexFormat.of().parseHex(parts[2])));
            merged.writeBytes(response.field(QueryServiceStateResponse.SERVICE_STATE_FIELD_NUMBER).asBytes());
        }
        TracingServiceState.Decoder state = new TracingServiceState.Decoder();
        state.reset(MemorySegment.ofArray(merged.toByteArray()));
        assertFalse(state.hasError());
        return state;
    }

    /** The uid of each session listed. */
    private static List<Integer> listedUids(TracingServiceState.Decoder state) {
        List<Integer> uids = new ArrayList<>();
        RepeatedFieldIterator sessions = state.tracingSessions(new RepeatedFieldIterator());
        TracingServiceState.TracingSession.Decoder session = new TracingServiceState.TracingSession.Decoder();
        while (sessions.next()) {
            session.reset(sessions.field());
            uids.add(session.consumerUid());
        }
        return uids;
    }

    @Test
    void anotherUserSeesAndClonesOnlyItsOwnSessionsAndRootSeesAll() throws Exception {
        HeapBuffered<EnableTracingRequest> enable = new HeapBuffered<>(EnableTracingRequest.FACTORY);
        enable.get().setTraceConfig().addBuffers().setSizeKb(64);
        Path request = dir.resolve("enable.bin");
        Files.write(request, enable.toByteArray());
        try (ConsumerConnection root = ConsumerConnection.connect(host.address(), TIMEOUT_MS)) {
            HeapBuffered<dev.ffmtrace.perfetto.protos.TraceConfig> config =
                    new HeapBuffered<>(dev.ffmtrace.perfetto.protos.TraceConfig.FACTORY);
            config.get().addBuffers().setSizeKb(64);
            root.enableTracing(config.toByteArray(), -1);
            assertNotNull(root.queryServiceState(TIMEOUT_MS));

            TracingServiceState.Decoder seenByOther = state(call(OtherUser.UID, "QueryServiceState", "").awaitHeld());
            assertEquals(List.of(), listedUids(seenByOther), "root's session is not listed to another user");
            assertEquals(1, seenByOther.numSessions(), "but counted, as Perfetto counts it");

            TracingServiceState.Decoder seenByOwner = state(call(OtherUser.UID, "!EnableTracing", "@" + request,
                    "QueryServiceState", "").awaitHeld());
            assertEquals(List.of(OtherUser.UID), listedUids(seenByOwner), "its own session is listed");
            assertEquals(2, seenByOwner.numSessions());

            TracingServiceState.Decoder seenByRoot = new TracingServiceState.Decoder();
            seenByRoot.reset(MemorySegment.ofArray(root.queryServiceState(TIMEOUT_MS)));
            assertEquals(List.of(0, OtherUser.UID), listedUids(seenByRoot).stream().sorted().toList(),
                    "root sees every session");

            HeapBuffered<CloneSessionRequest> clone = new HeapBuffered<>(CloneSessionRequest.FACTORY);
            clone.get().setSessionId(1);
            List<String> cloned = call(OtherUser.UID, "CloneSession",
                    HexFormat.of().formatHex(clone.toByteArray())).awaitHeld();
            CloneSessionResponse.Decoder response = new CloneSessionResponse.Decoder();
            response.reset(MemorySegment.ofArray(HexFormat.of().parseHex(cloned.getLast().split(" ", -1)[2])));
            assertFalse(response.success());
            assertEquals("Not allowed to clone a session from another UID", response.error());
        }
    }
}
