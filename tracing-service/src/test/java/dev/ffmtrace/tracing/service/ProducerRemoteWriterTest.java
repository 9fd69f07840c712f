package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.PeerCredentials;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.ListeningSocket;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.memory.testing.CPrograms;
import dev.ffmtrace.memory.testing.Peers;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.ProtoWire;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.tracing.buffer.ClientIdentity;
import dev.ffmtrace.tracing.buffer.TraceBufferStats;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A producer in another process that writes into its SMB without commits: tracebuffer-ffm's
 * C tool ({@code smb_tool produce}) as a remote writer the producer adopted, next to an
 * in-process writer that commits.
 */
class ProducerRemoteWriterTest {
    private static final int PAGE_SIZE = 4096;
    private static final int REMOTE_WRITER = 77;
    private static final int SEED = 4242;
    private static final int MAX_PACKET = 300;
    /** Perfetto's TracePacket.for_testing, which {@code smb_tool produce ... wrap} writes. */
    private static final int FOR_TESTING_FIELD_NUMBER = 900;
    private static Path tool;

    @BeforeAll
    static void build() {
        tool = CPrograms.program("smb_tool");
    }

    /**
     * The packets {@code smb_tool produce ... wrap} writes for a seed: each generated
     * packet as the bytes of field 900, so that the service's validation keeps them.
     */
    private static List<byte[]> generatedPackets(int count) {
        List<byte[]> packets = new ArrayList<>();
        for (byte[] bytes : SmbCrossProcessTest.generatedPackets(count, SEED, MAX_PACKET)) {
            byte[] packet = new byte[2 * ProtoWire.MAX_VARINT_SIZE + bytes.length];
            int at = ProtoWire.writeVarInt(packet, 0, ProtoWire.makeTag(FOR_TESTING_FIELD_NUMBER,
                    ProtoWire.WIRE_TYPE_LENGTH_DELIMITED));
            at = ProtoWire.writeVarInt(packet, at, bytes.length);
            System.arraycopy(bytes, 0, packet, at, bytes.length);
            packets.add(Arrays.copyOf(packet, at + bytes.length));
        }
        return packets;
    }

    /** Each packet of a trace file, as its bytes. */
    static List<byte[]> rawPackets(byte[] trace) {
        Trace.Decoder decoder = new Trace.Decoder();
        decoder.reset(MemorySegment.ofArray(trace));
        RepeatedFieldIterator packets = decoder.packet(new RepeatedFieldIterator());
        List<byte[]> raw = new ArrayList<>();
        while (packets.next()) {
            raw.add(packets.field().asBytes());
        }
        assertFalse(decoder.hasError(), "the trace file is a valid Trace");
        return raw;
    }

    /** The packets of {@code trace} that producers wrote, without the service's own (sequence 1). */
    static List<byte[]> producerPackets(byte[] trace) {
        TracePacket.Decoder packet = new TracePacket.Decoder();
        List<byte[]> out = new ArrayList<>();
        for (byte[] raw : rawPackets(trace)) {
            packet.reset(MemorySegment.ofArray(raw));
            if (packet.trustedPacketSequenceId() != TracingSession.SERVICE_SEQUENCE_ID) {
                out.add(raw);
            }
        }
        return out;
    }

    @ParameterizedTest(name = "{1} packets into {2} pages, flushes while writing: {0}")
    @CsvSource({"true, 3000, 32", "false, 400, 256"})
    void aRemoteWritersChunksReachItsBufferInOrderWithTheProcesssIdentity(boolean flushWhileWriting, int packets,
                                                                          int pages) throws Exception {
        try (TracingService service = new TracingService();
             ListeningSocket server = ListeningSocket.listen(UnixAddress.abstractName(
                     "ffmtrace-remote-writer-" + ProcessHandle.current().pid() + "-" + System.nanoTime()), 1)) {
            TracingSession session = service.startSession(TracingServiceTest.twoNamedBuffers());
            Peers.Peer peer = Peers.startNative(tool, "produce", server.address().toString(),
                    Integer.toString(PAGE_SIZE), Integer.toString(pages * PAGE_SIZE), Integer.toString(REMOTE_WRITER),
                    Integer.toString(packets), Integer.toString(SEED), Integer.toString(MAX_PACKET), "3", "1", "1");
            try (StreamSocket connection = server.accept()) {
                PeerCredentials credentials = connection.peerCredentials();
                assertEquals(peer.process().pid(), credentials.pid());
                Producer producer = service.connectProducer(ProducerOptions.of("remote")
                        .withIdentity(new ClientIdentity(credentials.uid(), credentials.pid()))
                        .withSmbSize((long) pages * PAGE_SIZE).withPageSize(PAGE_SIZE));
                DataSource events = producer.registerDataSource("track_event");
                DataSource counters = producer.registerDataSource("counters");
                producer.adoptRemoteWriter(REMOTE_WRITER, events);
                connection.send(new byte[] {'S'}, producer.smbFd());

                int local = 2000;
                Thread inProcess = Thread.ofPlatform().start(() -> {
                    try (TraceWriter<TracePacket> writer = counters.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                        for (int j = 0; j < local; j++) {
                            writer.newTracePacket().setTimestamp(j);
                            writer.finishTracePacket();
                        }
                    }
                });
                // Without flushes both writers would wait for chunks in the small SMB.
                while (flushWhileWriting && (peer.process().isAlive() || inProcess.isAlive())) {
                    session.flush();
                }
                peer.awaitSuccess();
                inProcess.join();
                // One flush takes all that is left, even a writer it has not seen before.
                session.flush();
                ByteArrayOutputStream file = new ByteArrayOutputStream();
                session.writeTrace(file);

                // The "events" buffer (the remote writer's), then the "counters" buffer.
                List<byte[]> raw = producerPackets(file.toByteArray());
                List<byte[]> expected = generatedPackets(packets);
                assertEquals(expected.size() + local, raw.size());
                TracePacket.Decoder trusted = new TracePacket.Decoder();
                for (int i = 0; i < expected.size(); i++) {
                    byte[] packet = raw.get(i);
                    byte[] payload = expected.get(i);
                    assertArrayEquals(payload, Arrays.copyOf(packet, payload.length), "packet " + i);
                    // What follows the producer's bytes are the service's trusted fields.
                    trusted.reset(MemorySegment.ofArray(Arrays.copyOfRange(packet, payload.length, packet.length)));
                    assertFalse(trusted.hasError());
                    assertEquals(credentials.pid(), trusted.trustedPid());
                    assertEquals(credentials.uid(), trusted.trustedUid());
                    assertEquals(PacketHandoff.sequenceId(producer.id(), REMOTE_WRITER), trusted.trustedPacketSequenceId());
                    assertEquals(0, trusted.previousPacketDropped(), "packet " + i);
                }
                TracePacket.Decoder decoded = new TracePacket.Decoder();
                for (int j = 0; j < local; j++) {
                    decoded.reset(MemorySegment.ofArray(raw.get(expected.size() + j)));
                    assertEquals(j, decoded.timestamp());
                    assertNotEquals(PacketHandoff.sequenceId(producer.id(), REMOTE_WRITER), decoded.trustedPacketSequenceId());
                }
                assertEquals(0, producer.abiViolations(), "the in-process writer's commits found their chunks");
                assertEquals(0, session.stats().stream().mapToLong(TraceBufferStats::abiViolations).sum());
            }
        }
    }

    @Test
    void onlyAStartedDataSourceOfTheSameProducerAdoptsAFreeWriterId() throws Exception {
        try (TracingService service = new TracingService()) {
            Producer producer = service.connectProducer(ProducerOptions.of("remote").withSmbSize(16 * PAGE_SIZE).withPageSize(PAGE_SIZE));
            DataSource events = producer.registerDataSource("track_event");
            assertThrows(IllegalStateException.class, () -> producer.adoptRemoteWriter(REMOTE_WRITER, events),
                    "no session started it yet");
            service.startSession(TracingServiceTest.twoNamedBuffers());
            assertThrows(IllegalArgumentException.class, () -> producer.adoptRemoteWriter(0, events));
            assertThrows(IllegalArgumentException.class, () -> producer.adoptRemoteWriter(32768, events));
            DataSource othersEvents = service.connectProducer(ProducerOptions.of("other").withSmbSize(16 * PAGE_SIZE).withPageSize(PAGE_SIZE))
                    .registerDataSource("track_event");
            assertThrows(IllegalArgumentException.class, () -> producer.adoptRemoteWriter(REMOTE_WRITER, othersEvents));

            producer.adoptRemoteWriter(1, events);
            try (TraceWriter<TracePacket> writer = events.newTraceWriter(BufferExhaustedPolicy.DROP)) {
                assertNotEquals(1, writer.writerId(), "the arbiter's ids pass over the remote writer's");
                int inProcess = writer.writerId();
                assertEquals("writer id " + inProcess + " is an in-process writer's",
                        assertThrows(IllegalArgumentException.class, () -> producer.adoptRemoteWriter(inProcess, events))
                                .getMessage());
            }
            producer.adoptRemoteWriter(1, events);
        }
    }
}
