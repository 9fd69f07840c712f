package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.ipc.IpcHost;
import dev.ffmtrace.memory.ListeningSocket;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.memory.TcpAddress;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.perfetto.protos.SystemInfo;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TracingServiceState;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.tracing.consumer.ConsumerConnection;
import dev.ffmtrace.tracing.relay.RelayService;
import dev.ffmtrace.tracing.service.ipc.ConsumerPort;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** ffmtrace's relay between a producer and a host service on TCP, both ends ffmtrace's. */
class RelayServiceTest {
    private static final String HINT = "4f1b3ac2-6f0e-4c1d-9d3a-0c9b2f6e7a10";
    /** What traced derives from {@link #HINT} (IpcHostTcpTest checks the derivation). */
    private static final int MACHINE = -1278369095;

    private static UnixAddress localSocket() {
        return UnixAddress.abstractName("ffmtrace-relay-test-" + System.nanoTime());
    }

    private static SessionConfig allMachines() throws InvalidConfigException {
        HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
        config.get().addBuffers().setSizeKb(1024);
        config.get().addDataSources().setConfig().setName("track_event");
        config.get().setTraceAllMachines(true);
        return SessionConfig.parse(config.toSegment());
    }

    @Test
    void aProducerBehindTheRelayWritesIntoTheHostOnAMachineOfItsOwn() throws Exception {
        try (TracingService service = new TracingService();
             IpcHost host = IpcHost.listen(TcpAddress.loopback(0))) {
            ProducerPort producerPort = ProducerPort.expose(service, host);
            RelayPort relayPort = RelayPort.expose(service, host);
            RelayService.Options options = new RelayService.Options(localSocket(), -1, host.address(), HINT, "guest-r");
            try (RelayService relay = RelayService.start(options)) {
                assertTrue(relay.awaitClockSyncs(1, Duration.ofSeconds(30)), "the relay's clock exchange");
                try (SharedMemory ownSmb = SharedMemory.create("provided", 64 * 1024);
                     PortProducer producer = PortProducer.connect(options.producerSocket(), "behind-relay", 1 << 20,
                             4096, ownSmb.fd(), 0)) {
                    assertTrue(producer.emulating(), "the host's emulation request reaches the producer");
                    producer.registerDataSource("track_event", false, false);
                    TracingSession session = service.startSession(allMachines());
                    TraceWriter<TracePacket> writer = producer.newWriter(producer.awaitStarted());
                    for (int i = 0; i < 100; i++) {
                        TracePacket packet = writer.newTracePacket();
                        packet.setTrackEvent().setName("relayed-" + i);
                        writer.finishTracePacket();
                    }
                    writer.close();
                    assertTrue(session.flush(Duration.ofSeconds(10)));
                    ByteArrayOutputStream out = new ByteArrayOutputStream();
                    session.writeTrace(out);
                    Trace.Decoder trace = new Trace.Decoder();
                    trace.reset(MemorySegment.ofArray(out.toByteArray()));
                    RepeatedFieldIterator packets = trace.packet(new RepeatedFieldIterator());
                    TracePacket.Decoder packet = new TracePacket.Decoder();
                    int events = 0;
                    int remoteSystems = 0;
                    int clockSyncs = 0;
                    while (packets.next()) {
                        packet.reset(packets.field());
                        if (packet.trackEvent(new TrackEvent.Decoder())) {
                            events++;
                            assertEquals(MACHINE, packet.machineId());
                            assertEquals(Os.pid(), packet.trustedPid(), "the producer's pid, as the relay's kernel saw it");
                            assertEquals(Os.uid(), packet.trustedUid());
                        }
                        remoteSystems += packet.systemInfo(new SystemInfo.Decoder()) && packet.hasMachineId() ? 1 : 0;
                        clockSyncs += packet.hasRemoteClockSync() && packet.machineId() == MACHINE ? 1 : 0;
                    }
                    assertEquals(List.of("behind-relay@" + MACHINE + "/guest-r"), remoteProducers(service));
                    assertEquals(100, events);
                    assertEquals(1, remoteSystems);
                    assertEquals(1, clockSyncs);
                    assertEquals(1, relay.descriptorsDropped(), "the producer's own SMB cannot cross TCP");
                    assertEquals(0, producerPort.violations() + producerPort.abiViolations() + relayPort.violations());
                    session.close();
                }
                assertTrue(relay.awaitNoProducers(Duration.ofSeconds(30)), "the forwarding ends with the producer");
            }
        }
    }

    /** The producers of other machines QueryServiceState lists, as name@machine_id/machine_name. */
    private static List<String> remoteProducers(TracingService service) throws Exception {
        try (ConsumerPort consumers = new ConsumerPort(service, "relay test");
             IpcHost consumerHost = IpcHost.listen(localSocket())) {
            consumerHost.exposeService(consumers.descriptor());
            try (ConsumerConnection consumer = ConsumerConnection.connect(consumerHost.address(), 30_000)) {
                TracingServiceState.Decoder state = new TracingServiceState.Decoder();
                state.reset(MemorySegment.ofArray(consumer.queryServiceState(30_000)));
                List<String> remote = new ArrayList<>();
                RepeatedFieldIterator producers = state.producers(new RepeatedFieldIterator());
                TracingServiceState.Producer.Decoder producer = new TracingServiceState.Producer.Decoder();
                while (producers.next()) {
                    producer.reset(producers.field());
                    if (producer.hasMachineId()) {
                        remote.add(producer.name() + "@" + producer.machineId() + "/" + producer.machineName());
                    }
                }
                return remote;
            }
        }
    }

    @Test
    void aProducerIsDisconnectedWhenTheHostCannotBeReached() throws Exception {
        TcpAddress nobody;
        try (ListeningSocket closedSoon = ListeningSocket.listen(TcpAddress.loopback(0), 1)) {
            nobody = (TcpAddress) closedSoon.address();
        }
        RelayService.Options options = new RelayService.Options(localSocket(), -1, nobody, HINT, "guest-r");
        try (RelayService relay = RelayService.start(options)) {
            assertThrows(Exception.class, () -> PortProducer.connect(options.producerSocket(), "lonely", 0, 0));
            assertTrue(relay.awaitNoProducers(Duration.ofSeconds(30)), "the forwarding ends at once");
            assertEquals(1, relay.hostUnreachable(), "the refused connection counted");
        }
    }
}
