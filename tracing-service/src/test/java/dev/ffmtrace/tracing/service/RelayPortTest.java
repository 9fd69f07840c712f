package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.ipc.BoundService;
import dev.ffmtrace.ipc.IpcClient;
import dev.ffmtrace.ipc.PeerIdentity;
import dev.ffmtrace.ipc.IpcHost;
import dev.ffmtrace.memory.TcpAddress;
import dev.ffmtrace.perfetto.protos.BuiltinClock;
import dev.ffmtrace.perfetto.protos.ClockSnapshot;
import dev.ffmtrace.perfetto.protos.InitRelayRequest;
import dev.ffmtrace.perfetto.protos.RemoteClockSync;
import dev.ffmtrace.perfetto.protos.SyncClockRequest;
import dev.ffmtrace.perfetto.protos.SystemInfo;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.Utsname;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The relay port: a relay's machine's SystemInfo and clocks reach the traces, stamped with its machine. */
class RelayPortTest {
    private static final String BOOT_ID = "4f1b3ac2-6f0e-4c1d-9d3a-0c9b2f6e7a10";
    /** What traced derives from {@link #BOOT_ID} (IpcHostTcpTest checks the derivation). */
    private static final int BOOT_ID_MACHINE = -1278369095;

    private static byte[] initRelay(String sysname) {
        HeapBuffered<InitRelayRequest> request = new HeapBuffered<>(InitRelayRequest.FACTORY);
        request.get().setSystemInfo().setUtsname().setSysname(sysname);
        return request.toByteArray();
    }

    private static byte[] syncClock(int clocks, long base) {
        HeapBuffered<SyncClockRequest> request = new HeapBuffered<>(SyncClockRequest.FACTORY);
        request.get().setPhase(SyncClockRequest.Phase.UPDATE);
        for (int i = 0; i < clocks; i++) {
            SyncClockRequest.Clock clock = request.get().addClocks();
            clock.setClockId(i + 1);
            clock.setTimestamp(base + i);
        }
        return request.toByteArray();
    }

    /** The trace of a session started and read now. */
    private static List<TracePacket.Decoder> trace(TracingService service) throws Exception {
        HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
        config.get().addBuffers().setSizeKb(64);
        config.get().addDataSources().setConfig().setName("nothing");
        try (TracingSession session = service.startSession(SessionConfig.parse(config.toSegment()))) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            session.writeTrace(out);
            Trace.Decoder trace = new Trace.Decoder();
            trace.reset(MemorySegment.ofArray(out.toByteArray()));
            RepeatedFieldIterator packets = trace.packet(new RepeatedFieldIterator());
            List<TracePacket.Decoder> decoded = new ArrayList<>();
            while (packets.next()) {
                TracePacket.Decoder packet = new TracePacket.Decoder();
                packet.reset(packets.field().asSlice());
                decoded.add(packet);
            }
            return decoded;
        }
    }

    @Test
    void aRelaysSystemInfoAndClockExchangesReachTheTraceUnderItsMachine() throws Exception {
        try (TracingService service = new TracingService();
             IpcHost host = IpcHost.listen(TcpAddress.loopback(0))) {
            RelayPort port = RelayPort.expose(service, host);
            try (IpcClient relay = IpcClient.connect(host.address())) {
                relay.setPeerIdentity(new PeerIdentity(0, 0, BOOT_ID, "guest-a"));
                BoundService bound = relay.bindService(RelayPort.SERVICE_NAME).get(10, TimeUnit.SECONDS);
                assertTrue(relay.invoke(bound, "InitRelay", initRelay("GuestOS")).get(10, TimeUnit.SECONDS).success());
                for (int exchange = 0; exchange < RelayClients.KEPT_SYNCS + 2; exchange++) {
                    assertTrue(relay.invoke(bound, "SyncClock", syncClock(2, 1000L * exchange))
                            .get(10, TimeUnit.SECONDS).success());
                }
                List<TracePacket.Decoder> packets = trace(service);
                List<String> systems = new ArrayList<>();
                int syncs = 0;
                for (TracePacket.Decoder packet : packets) {
                    SystemInfo.Decoder info = new SystemInfo.Decoder();
                    if (packet.systemInfo(info)) {
                        Utsname.Decoder uts = new Utsname.Decoder();
                        info.utsname(uts);
                        systems.add(uts.sysname() + "@" + packet.machineId());
                    }
                    RemoteClockSync.Decoder sync = new RemoteClockSync.Decoder();
                    if (packet.remoteClockSync(sync)) {
                        syncs++;
                        assertEquals(BOOT_ID_MACHINE, packet.machineId());
                        RepeatedFieldIterator exchanges = sync.syncedClocks(new RepeatedFieldIterator());
                        List<Long> firstClientTimes = new ArrayList<>();
                        RemoteClockSync.SyncedClocks.Decoder exchange = new RemoteClockSync.SyncedClocks.Decoder();
                        while (exchanges.next()) {
                            exchange.reset(exchanges.field());
                            ClockSnapshot.Decoder client = new ClockSnapshot.Decoder();
                            exchange.clientClocks(client);
                            ClockSnapshot.Clock.Decoder clock = new ClockSnapshot.Clock.Decoder();
                            RepeatedFieldIterator clocks = client.clocks(new RepeatedFieldIterator());
                            clocks.next();
                            clock.reset(clocks.field());
                            firstClientTimes.add(clock.timestamp());
                            ClockSnapshot.Decoder hostClocks = new ClockSnapshot.Decoder();
                            exchange.hostClocks(hostClocks);
                            RepeatedFieldIterator hostReadings = hostClocks.clocks(new RepeatedFieldIterator());
                            hostReadings.next();
                            clock.reset(hostReadings.field());
                            assertEquals(BuiltinClock.BUILTIN_CLOCK_BOOTTIME.number(), clock.clockId());
                            assertTrue(clock.timestamp() > 0);
                        }
                        assertEquals(List.of(2000L, 3000L, 4000L, 5000L, 6000L), firstClientTimes,
                                "the last five exchanges, oldest first");
                    }
                }
                assertEquals(1, syncs);
                assertEquals(2, systems.size(), "the host's and the relay's: " + systems);
                assertEquals("GuestOS@" + BOOT_ID_MACHINE, systems.get(1));
                assertFalse(systems.get(0).endsWith("@" + BOOT_ID_MACHINE), "the host's has no machine id");
                assertEquals(0, port.violations());
            }
            assertTrue(service.relays().awaitEmpty(Duration.ofSeconds(10)), "a relay that goes is forgotten");
        }
    }

    @Test
    void aRelayMustNameItsMachineAndStayWithinBounds() throws Exception {
        try (TracingService service = new TracingService();
             IpcHost host = IpcHost.listen(TcpAddress.loopback(0))) {
            RelayPort port = RelayPort.expose(service, host);
            try (IpcClient anonymous = IpcClient.connect(host.address())) {
                BoundService bound = anonymous.bindService(RelayPort.SERVICE_NAME).get(10, TimeUnit.SECONDS);
                assertFalse(anonymous.invoke(bound, "InitRelay", initRelay("Forged")).get(10, TimeUnit.SECONDS).success(),
                        "a connection of this machine cannot speak for the host");
                assertFalse(anonymous.invoke(bound, "SyncClock", syncClock(1, 1)).get(10, TimeUnit.SECONDS).success());
            }
            try (IpcClient relay = IpcClient.connect(host.address())) {
                relay.setPeerIdentity(new PeerIdentity(0, 0, BOOT_ID, "guest-a"));
                BoundService bound = relay.bindService(RelayPort.SERVICE_NAME).get(10, TimeUnit.SECONDS);
                assertFalse(relay.invoke(bound, "SyncClock", syncClock(RelayPort.MAX_CLOCKS + 1, 1))
                        .get(10, TimeUnit.SECONDS).success());
                HeapBuffered<InitRelayRequest> garbage = new HeapBuffered<>(InitRelayRequest.FACTORY);
                garbage.get().appendBytes(InitRelayRequest.SYSTEM_INFO_FIELD_NUMBER, new byte[] {(byte) 0xFF, 0x01});
                assertFalse(relay.invoke(bound, "InitRelay", garbage.toByteArray()).get(10, TimeUnit.SECONDS).success(),
                        "a SystemInfo that does not parse");
                assertEquals(4, port.violations());
                for (TracePacket.Decoder packet : trace(service)) {
                    assertFalse(packet.hasMachineId(), "nothing of the refused calls reached the trace");
                }
            }
        }
    }

    @Test
    void garbledRelayRequestsFailOneByOneAndAWellFormedRelayStillGetsThrough() throws Exception {
        SplittableRandom random = new SplittableRandom(30);
        try (TracingService service = new TracingService();
             IpcHost host = IpcHost.listen(TcpAddress.loopback(0))) {
            RelayPort port = RelayPort.expose(service, host);
            try (IpcClient relay = IpcClient.connect(host.address())) {
                relay.setPeerIdentity(new PeerIdentity(0, 0, BOOT_ID, "guest-a"));
                BoundService bound = relay.bindService(RelayPort.SERVICE_NAME).get(10, TimeUnit.SECONDS);
                byte[][] seeds = {initRelay("GuestOS"), syncClock(3, 7)};
                int refused = 0;
                for (int round = 0; round < 500; round++) {
                    boolean init = random.nextBoolean();
                    byte[] args = seeds[init ? 0 : 1].clone();
                    for (int flips = random.nextInt(1, 4); flips > 0; flips--) {
                        args[random.nextInt(args.length)] = (byte) random.nextInt(256);
                    }
                    if (!relay.invoke(bound, init ? "InitRelay" : "SyncClock", args).get(10, TimeUnit.SECONDS).success()) {
                        refused++;
                    }
                }
                assertEquals(refused, port.violations(), "every refusal counted, nothing else");
                assertTrue(relay.invoke(bound, "InitRelay", initRelay("AfterTheNoise")).get(10, TimeUnit.SECONDS)
                        .success(), "the connection and the port carry on");
                assertTrue(relay.invoke(bound, "SyncClock", syncClock(2, 1)).get(10, TimeUnit.SECONDS).success());
                boolean named = false;
                for (TracePacket.Decoder packet : trace(service)) {
                    SystemInfo.Decoder info = new SystemInfo.Decoder();
                    if (packet.systemInfo(info) && packet.hasMachineId()) {
                        Utsname.Decoder uts = new Utsname.Decoder();
                        info.utsname(uts);
                        named = uts.sysname().equals("AfterTheNoise");
                    }
                }
                assertTrue(named, "the last SystemInfo the relay sent is the one kept");
            }
        }
    }
}
