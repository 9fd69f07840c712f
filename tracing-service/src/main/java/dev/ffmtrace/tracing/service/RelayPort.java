package dev.ffmtrace.tracing.service;

import dev.ffmtrace.ipc.ClientInfo;
import dev.ffmtrace.ipc.Invocation;
import dev.ffmtrace.ipc.IpcHost;
import dev.ffmtrace.ipc.ServiceDescriptor;
import dev.ffmtrace.ipc.ServiceDescriptor.Method;
import dev.ffmtrace.perfetto.protos.InitRelayRequest;
import dev.ffmtrace.perfetto.protos.SyncClockRequest;
import dev.ffmtrace.perfetto.protos.SystemInfo;
import dev.ffmtrace.protozero.ProtoField;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.tracing.relay.ClockReading;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The relay port of Perfetto's IPC ({@code traced --enable-relay-endpoint}): a relay
 * ({@code traced_relay} or {@code ffmtrace relay}) that forwards the producers of its
 * machine also binds {@value #SERVICE_NAME} on the host's producer socket, sends its
 * machine's SystemInfo (InitRelay), and exchanges clock readings with the host
 * (SyncClock), which the host keeps in {@link TracingService#relays()} for its sessions'
 * traces.
 *
 * <p>Untrusted peers: only a connection that named its machine (SetPeerIdentity on TCP)
 * may speak for one, so a relay cannot write the host's SystemInfo or clocks; a
 * SystemInfo must parse and be at most {@value #MAX_SYSTEM_INFO_BYTES} bytes, a SyncClock
 * carry at most {@value #MAX_CLOCKS} clocks. What is refused fails its call and is
 * counted in {@link #violations()}.
 */
public final class RelayPort {
    /** The name relays bind. */
    public static final String SERVICE_NAME = "RelayPort";
    /** The largest SystemInfo kept: a real one is a few hundred bytes. */
    static final int MAX_SYSTEM_INFO_BYTES = 16 * 1024;
    /** The most clocks one exchange may name: a relay reads a handful. */
    static final int MAX_CLOCKS = 64;

    private final RelayClients relays;
    private final AtomicLong violations = new AtomicLong();

    private RelayPort(RelayClients relays) {
        this.relays = relays;
    }

    /**
     * Serves relays of {@code service} on {@code host} (its producer socket, usually TCP).
     *
     * @throws IllegalStateException if the host already exposes a service named {@value #SERVICE_NAME}
     */
    public static RelayPort expose(TracingService service, IpcHost host) {
        RelayPort port = new RelayPort(service.relays());
        if (!host.exposeService(port.descriptor())) {
            throw new IllegalStateException("the host already exposes " + SERVICE_NAME);
        }
        return port;
    }

    /** Calls refused: from a connection of this machine, or with a SystemInfo or clock list that breaks a bound. */
    public long violations() {
        return violations.get();
    }

    private ServiceDescriptor descriptor() {
        // Perfetto's declaration order: a method's id is its position.
        return new ServiceDescriptor(SERVICE_NAME, List.of(
                new Method("InitRelay", this::initRelay),
                new Method("SyncClock", this::syncClock)),
                client -> relays.disconnected(client.clientId()));
    }

    private void initRelay(Invocation invocation) {
        InitRelayRequest.Decoder request = new InitRelayRequest.Decoder();
        invocation.readArgs(request);
        ClientInfo client = invocation.client();
        ProtoField info = request.field(InitRelayRequest.SYSTEM_INFO_FIELD_NUMBER);
        if (request.hasError() || !client.isRemote() || (info.valid() && !isSystemInfo(info))) {
            refuse(invocation);
            return;
        }
        invocation.reply(new byte[0]);
        relays.initRelay(client.machineId(), client.clientId(), info.valid() ? info.asBytes() : new byte[0]);
    }

    private static boolean isSystemInfo(ProtoField info) {
        if (info.length() > MAX_SYSTEM_INFO_BYTES) {
            return false;
        }
        SystemInfo.Decoder decoder = new SystemInfo.Decoder();
        decoder.reset(info.asSlice());
        return !decoder.hasError();
    }

    private void syncClock(Invocation invocation) {
        // The host's clocks first, as close to the relay's readings as this side can be.
        List<ClockReading> host = ClockReading.snapshot();
        SyncClockRequest.Decoder request = new SyncClockRequest.Decoder();
        invocation.readArgs(request);
        ClientInfo client = invocation.client();
        if (request.hasError() || !client.isRemote() || request.clocksCount() > MAX_CLOCKS) {
            refuse(invocation);
            return;
        }
        List<ClockReading> readings = new ArrayList<>();
        RepeatedFieldIterator clocks = request.clocks(new RepeatedFieldIterator());
        SyncClockRequest.Clock.Decoder clock = new SyncClockRequest.Clock.Decoder();
        while (clocks.next()) {
            clock.reset(clocks.field());
            if (clock.hasError()) {
                refuse(invocation);
                return;
            }
            readings.add(new ClockReading(clock.clockId(), clock.timestamp()));
        }
        invocation.reply(new byte[0]);
        relays.syncClocks(client.machineId(), client.clientId(), readings, host);
    }

    private void refuse(Invocation invocation) {
        violations.incrementAndGet();
        invocation.fail();
    }
}
