package dev.ffmtrace.tracing.service;

import static dev.ffmtrace.perfetto.protos.GetAsyncCommandResponse.SETUP_DATA_SOURCE_FIELD_NUMBER;
import static dev.ffmtrace.perfetto.protos.GetAsyncCommandResponse.SETUP_TRACING_FIELD_NUMBER;
import static dev.ffmtrace.perfetto.protos.GetAsyncCommandResponse.START_DATA_SOURCE_FIELD_NUMBER;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.TcpAddress;
import dev.ffmtrace.perfetto.protos.CommitDataRequest;
import dev.ffmtrace.perfetto.protos.DataSourceConfig;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The producer port on TCP: producers of other machines, forwarded by a relay that names
 * them, write through shared memory emulation, and their packets say which machine they
 * came from.
 */
class ProducerPortTcpTest {
    private static final String BOOT_ID = "4f1b3ac2-6f0e-4c1d-9d3a-0c9b2f6e7a10";
    /** What traced derives from {@link #BOOT_ID} (IpcHostTcpTest checks the derivation). */
    private static final int BOOT_ID_MACHINE = -1278369095;

    /** One packet of a trace: its event name and the trusted fields the service added. */
    private record Packet(String name, int uid, boolean hasPid, int pid, boolean hasMachine, int machineId) {
    }

    private static SessionConfig config(String dataSource, boolean traceAllMachines, List<String> machines)
            throws InvalidConfigException {
        HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
        config.get().addBuffers().setSizeKb(1024);
        TraceConfig.DataSource entry = config.get().addDataSources();
        entry.setConfig().setName(dataSource);
        machines.forEach(entry::addMachineNameFilter);
        if (traceAllMachines) {
            config.get().setTraceAllMachines(true);
        }
        return SessionConfig.parse(config.toSegment());
    }

    private static List<Packet> events(TracingSession session) throws Exception {
        ByteArrayOutputStream trace = new ByteArrayOutputStream();
        session.writeTrace(trace);
        Trace.Decoder decoder = new Trace.Decoder();
        decoder.reset(MemorySegment.ofArray(trace.toByteArray()));
        RepeatedFieldIterator packets = decoder.packet(new RepeatedFieldIterator());
        TracePacket.Decoder packet = new TracePacket.Decoder();
        TrackEvent.Decoder event = new TrackEvent.Decoder();
        List<Packet> out = new ArrayList<>();
        while (packets.next()) {
            packet.reset(packets.field());
            if (packet.trackEvent(event)) {
                out.add(new Packet(event.name(), packet.trustedUid(), packet.hasTrustedPid(), packet.trustedPid(),
                        packet.hasMachineId(), packet.machineId()));
            }
        }
        return out;
    }

    private static void write(TraceWriter<TracePacket> writer, String name) {
        TracePacket packet = writer.newTracePacket();
        packet.setTrackEvent().setName(name);
        writer.finishTracePacket();
    }

    @Test
    void aRelayedProducerWritesThroughEmulationAndItsPacketsNameItsMachine() throws Exception {
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, TcpAddress.loopback(0));
             PortProducer guest = PortProducer.connectRelayed(port.address(), "guest-app", 4242, 1000, BOOT_ID,
                     "guest-a")) {
            assertTrue(guest.emulating(), "a TCP port asks for shared memory emulation");
            guest.registerDataSource("track_event", false, false);
            TracingSession session = service.startSession(config("track_event", true, List.of()));
            PortProducer.Command setup = guest.next(SETUP_TRACING_FIELD_NUMBER);
            assertEquals(-1, setup.fd(), "no SMB crosses TCP");
            int buffer = guest.awaitStarted();
            TraceWriter<TracePacket> writer = guest.newWriter(buffer);
            List<String> written = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                write(writer, "guest-" + i);
                written.add("guest-" + i);
            }
            writer.close();
            assertTrue(session.flush(Duration.ofSeconds(10)));
            List<Packet> events = events(session);
            assertEquals(written, events.stream().map(Packet::name).toList(), "every packet, in order");
            for (Packet packet : events) {
                assertEquals(new Packet(packet.name(), 1000, true, 4242, true, BOOT_ID_MACHINE), packet);
            }
            assertEquals(0, port.violations());
            assertEquals(0, port.abiViolations());
            session.close();
        }
    }

    @Test
    void remoteDataSourcesStartOnlyWhenTheSessionTracesAllMachinesOrNamesThem() throws Exception {
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, TcpAddress.loopback(0));
             PortProducer guest = PortProducer.connectRelayed(port.address(), "guest-app", 1, 1, BOOT_ID, "guest-a")) {
            guest.registerDataSource("track_event", false, false);
            try (TracingSession hostOnly = service.startSession(config("track_event", false, List.of()));
                 TracingSession hostByName = service.startSession(config("track_event", true, List.of("host")));
                 TracingSession byName = service.startSession(config("track_event", false, List.of("guest-a")))) {
                guest.next(SETUP_TRACING_FIELD_NUMBER);
                guest.next(SETUP_DATA_SOURCE_FIELD_NUMBER);
                DataSourceConfig.Decoder started = new DataSourceConfig.Decoder();
                started.reset(MemorySegment.ofArray(guest.next(START_DATA_SOURCE_FIELD_NUMBER).config()));
                assertEquals(byName.id(), started.tracingSessionId(), "only the session that names guest-a");
                assertTrue(guest.commands.isEmpty(), "nothing more for the guest: " + guest.commands);
            }
        }
    }

    @Test
    void aDataSourcesMachineFilterDecidesAsTracedDoes() {
        SessionConfig.DataSource any = new SessionConfig.DataSource("x", 0, SessionConfig.DataSource.NO_PROTOVM,
                List.of());
        assertTrue(any.startsOn(false, "", false), "no filter: this machine");
        assertFalse(any.startsOn(true, "guest-a", false), "no filter: no other machine");
        assertTrue(any.startsOn(true, "guest-a", true), "unless the session traces all machines");
        SessionConfig.DataSource named = new SessionConfig.DataSource("x", 0, SessionConfig.DataSource.NO_PROTOVM,
                List.of("guest-a", "host"));
        assertTrue(named.startsOn(true, "guest-a", false));
        assertFalse(named.startsOn(true, "guest-b", true), "a filter overrides trace_all_machines");
        assertTrue(named.startsOn(false, "", false), "\"host\" is this machine");
        assertTrue(named.startsOn(true, "host", false), "a relay that calls its machine \"host\" matches, as in traced");
        SessionConfig.DataSource guestOnly = new SessionConfig.DataSource("x", 0, SessionConfig.DataSource.NO_PROTOVM,
                List.of("guest-a"));
        assertFalse(guestOnly.startsOn(false, "", true), "a filter without \"host\" leaves this machine out");
    }

    @Test
    void chunksWithoutTheirBytesOnTcpAndBytesThatAreNoChunkAreRefusedAndCounted() throws Exception {
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, TcpAddress.loopback(0));
             PortProducer guest = PortProducer.connectRelayed(port.address(), "guest-app", 1, 1, BOOT_ID, "guest-a")) {
            guest.registerDataSource("track_event", false, false);
            TracingSession session = service.startSession(config("track_event", true, List.of()));
            int buffer = guest.awaitStarted();
            HeapBuffered<CommitDataRequest> commit = new HeapBuffered<>(CommitDataRequest.FACTORY);
            CommitDataRequest.ChunksToMove noBytes = commit.get().addChunksToMove();
            noBytes.setPage(0);
            noBytes.setChunk(0);
            noBytes.setTargetBuffer(buffer);
            CommitDataRequest.ChunksToMove tooShort = commit.get().addChunksToMove();
            tooShort.setTargetBuffer(buffer);
            tooShort.setData(new byte[5]);
            CommitDataRequest.ChunksToMove writerZero = commit.get().addChunksToMove();
            writerZero.setTargetBuffer(buffer);
            writerZero.setData(new byte[64]);
            assertTrue(guest.call("CommitData", commit.toByteArray()).success());
            assertEquals(1, port.violations(), "a chunk named by page and index, which TCP cannot share");
            assertEquals(2, port.abiViolations(), "5 bytes are no chunk; writer id 0 is nobody's");
            assertTrue(events(session).isEmpty());
            session.close();
        }
    }
}
