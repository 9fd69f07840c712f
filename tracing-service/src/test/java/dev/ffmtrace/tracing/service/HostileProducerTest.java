package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.PeerCredentials;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.ListeningSocket;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.memory.testing.CPrograms;
import dev.ffmtrace.memory.testing.Peers;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TraceStats;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.ProtoWire;
import dev.ffmtrace.tracing.buffer.ClientIdentity;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A producer in another process ({@code native/src/hostile_producer.c}) writes packets
 * holding fields only the service may write, and packets that do not parse, between
 * valid ones: the trace holds the valid ones alone, byte for byte with the service's
 * trusted fields, each forgery is counted in {@code invalid_packets}, and the packet
 * after one reports the loss.
 */
class HostileProducerTest {
    private static final int PAGE_SIZE = 4096;
    private static final int PAGES = 16;
    private static final int WRITER = 9;
    /** What hostile_producer forges, in order (it prints them; the test checks it forged these). */
    private static final List<String> FORGERIES = List.of("machine_id", "trace_stats", "compressed_packets",
            "trusted_uid", "trusted_packet_sequence_id", "trusted_pid", "trace_config", "synchronization_marker",
            "service_event", "trace_provenance", "protovms", "previous_packet_dropped_with_a_service_cause",
            "previous_packet_dropped_not_a_varint", "length_raised", "truncated_varint", "group_wire_type",
            "varint_over_10_bytes");

    /** A valid packet of hostile_producer: the timestamp, then an instant TrackEvent. */
    private static byte[] valid(long timestamp) {
        byte[] packet = new byte[32];
        int at = ProtoWire.writeVarInt(packet, 0, ProtoWire.makeTag(TracePacket.TIMESTAMP_FIELD_NUMBER,
                ProtoWire.WIRE_TYPE_VARINT));
        at = ProtoWire.writeVarInt(packet, at, timestamp);
        at = ProtoWire.writeVarInt(packet, at, ProtoWire.makeTag(TracePacket.TRACK_EVENT_FIELD_NUMBER,
                ProtoWire.WIRE_TYPE_LENGTH_DELIMITED));
        at = ProtoWire.writeVarInt(packet, at, 2);
        at = ProtoWire.writeVarInt(packet, at, ProtoWire.makeTag(TrackEvent.TYPE_FIELD_NUMBER, ProtoWire.WIRE_TYPE_VARINT));
        at = ProtoWire.writeVarInt(packet, at, TrackEvent.Type.TYPE_INSTANT.number());
        return Arrays.copyOf(packet, at);
    }

    /** Its packet saying its SMB was full. */
    private static byte[] smbFull() {
        HeapBuffered<TracePacket> packet = new HeapBuffered<>(TracePacket.FACTORY);
        packet.get().setTimestamp(2000);
        packet.get().setPreviousPacketDropped(PacketValidator.LOSS_PRESENT | PacketValidator.LOSS_SMB_FULL);
        return packet.toByteArray();
    }

    /** The producer's bytes followed by the fields the service appends. */
    private static byte[] withTrustedFields(byte[] producerBytes, ClientIdentity identity, int sequenceId, int loss) {
        HeapBuffered<TracePacket> trailer = new HeapBuffered<>(TracePacket.FACTORY);
        trailer.get().setTrustedUid(identity.uid());
        trailer.get().setTrustedPacketSequenceId(sequenceId);
        trailer.get().setTrustedPid(identity.pid());
        if (loss != 0) {
            trailer.get().setPreviousPacketDropped(loss);
        }
        ByteArrayOutputStream packet = new ByteArrayOutputStream();
        packet.writeBytes(producerBytes);
        packet.writeBytes(trailer.toByteArray());
        return packet.toByteArray();
    }

    private static long invalidPacketsOf(byte[] statsPacket) {
        TracePacket.Decoder packet = new TracePacket.Decoder();
        packet.reset(MemorySegment.ofArray(statsPacket));
        TraceStats.Decoder stats = new TraceStats.Decoder();
        assertTrue(packet.traceStats(stats), "the last packet is the service's trace_stats");
        assertEquals(TracingSession.SERVICE_SEQUENCE_ID, packet.trustedPacketSequenceId());
        return stats.invalidPackets();
    }

    @Test
    void anInProcessWriterIsCheckedAlike() throws Exception {
        try (TracingService service = new TracingService()) {
            Producer producer = service.connectProducer(ProducerOptions.of("app"));
            DataSource events = producer.registerDataSource("track_event");
            TracingSession session = service.startSession(TracingServiceTest.twoNamedBuffers());
            try (TraceWriter<TracePacket> writer = events.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                writer.newTracePacket().setTimestamp(1);
                TracePacket forged = writer.newTracePacket();
                forged.setTimestamp(2);
                forged.setMachineId(3);
                writer.newTracePacket().setTimestamp(3);
            }
            ByteArrayOutputStream file = new ByteArrayOutputStream();
            assertEquals(2, session.writeTrace(file));
            List<TracingServiceTest.Packet> packets = TracingServiceTest.decode(file.toByteArray()).stream()
                    .filter(packet -> packet.sequenceId() != TracingSession.SERVICE_SEQUENCE_ID).toList();
            assertEquals(List.of(1L, 3L), packets.stream().map(TracingServiceTest.Packet::timestamp).toList());
            assertEquals(List.of(false, true), packets.stream().map(TracingServiceTest.Packet::dropped).toList());
            assertEquals(1, session.invalidPackets());
        }
    }

    /** Also with the producer built with ASan and UBSan: its writer's chunks and its forgeries under them. */
    @ParameterizedTest(name = "sanitized: {0}")
    @ValueSource(booleans = {false, true})
    void forgedAndMalformedPacketsAreDroppedCountedAndReportedAsALoss(boolean sanitized) throws Exception {
        Path program = sanitized ? CPrograms.sanitized("hostile_producer") : CPrograms.program("hostile_producer");
        try (TracingService service = new TracingService();
             ListeningSocket server = ListeningSocket.listen(UnixAddress.abstractName(
                     "ffmtrace-hostile-" + ProcessHandle.current().pid() + "-" + System.nanoTime()), 1)) {
            TracingSession session = service.startSession(TracingServiceTest.twoNamedBuffers());
            Peers.Peer peer = Peers.startNative(program, server.address().toString(), Integer.toString(PAGE_SIZE),
                    Integer.toString(PAGES * PAGE_SIZE), Integer.toString(WRITER));
            ClientIdentity identity;
            Producer producer;
            try (StreamSocket connection = server.accept()) {
                PeerCredentials credentials = connection.peerCredentials();
                identity = new ClientIdentity(credentials.uid(), credentials.pid());
                producer = service.connectProducer(ProducerOptions.of("hostile").withIdentity(identity)
                        .withSmbSize((long) PAGES * PAGE_SIZE).withPageSize(PAGE_SIZE));
                producer.adoptRemoteWriter(WRITER, producer.registerDataSource("track_event"));
                connection.send(new byte[] {'S'}, producer.smbFd());
                String forged = peer.awaitSuccess();
                List<String> expectedLines = new ArrayList<>();
                for (int k = 0; k < FORGERIES.size(); k++) {
                    expectedLines.add("forgery " + (k + 1) + " " + FORGERIES.get(k));
                }
                expectedLines.add("forgery 1999 machine_id");
                assertEquals(String.join("\n", expectedLines) + "\n", forged);
            }
            session.flush();
            int sequenceId = PacketHandoff.sequenceId(producer.id(), WRITER);
            long invalid = FORGERIES.size() + 1;
            List<byte[]> expected = new ArrayList<>();
            expected.add(withTrustedFields(valid(1000), identity, sequenceId, 0));
            for (int k = 1; k <= FORGERIES.size(); k++) {
                expected.add(withTrustedFields(valid(1000 + k), identity, sequenceId, PacketValidator.LOSS_PRESENT));
            }
            // The loss the forgery before it left, with the producer's own cause kept in the service's field.
            expected.add(withTrustedFields(smbFull(), identity, sequenceId,
                    PacketValidator.LOSS_PRESENT | PacketValidator.LOSS_SMB_FULL));
            expected.add(withTrustedFields(valid(2001), identity, sequenceId, 0));

            ByteArrayOutputStream snapshot = new ByteArrayOutputStream();
            assertEquals(expected.size(), session.writeSnapshot(snapshot));
            List<byte[]> snapshotPackets = ProducerRemoteWriterTest.rawPackets(snapshot.toByteArray());
            assertEquals(invalid, invalidPacketsOf(snapshotPackets.getLast()));
            assertEquals(0, session.invalidPackets(), "a snapshot consumes nothing, and counts for itself");

            ByteArrayOutputStream file = new ByteArrayOutputStream();
            assertEquals(expected.size(), session.writeTrace(file));
            List<byte[]> packets = ProducerRemoteWriterTest.rawPackets(file.toByteArray());
            List<byte[]> fromProducer = ProducerRemoteWriterTest.producerPackets(file.toByteArray());
            assertEquals(expected.size(), fromProducer.size());
            for (int i = 0; i < expected.size(); i++) {
                assertArrayEquals(expected.get(i), fromProducer.get(i), "packet " + i + ": "
                        + HexFormat.of().formatHex(fromProducer.get(i)));
            }
            assertEquals(invalid, invalidPacketsOf(packets.getLast()));
            assertEquals(invalid, session.invalidPackets());
            assertEquals(0, producer.abiViolations(), "every chunk was well-formed: only the packets were not");
        }
    }
}
