package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ffmtrace.memory.PeerCredentials;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.ListeningSocket;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.memory.testing.CPrograms;
import dev.ffmtrace.memory.testing.Peers;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TraceStats;
import dev.ffmtrace.tracing.buffer.ClientIdentity;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A producer in another process ({@code hostile_producer ... die}) killed by SIGKILL in
 * the middle of a packet: its chunk stays being written for ever. What it wrote before
 * reaches the trace, and once its owner closes the producer (the connection ended) the
 * chunk, whose last packet is lost, is counted in {@code trace_stats.chunks_discarded}.
 */
class ProducerKilledTest {
    private static final int PAGE_SIZE = 4096;
    private static final int PAGES = 16;
    private static final int WRITER = 5;
    /** What a process killed by signal 9 exits with, as Java reports it. */
    private static final int KILLED_BY_SIGKILL = 128 + 9;

    /**
     * The timestamps of the producer's packets, and of the trace's stats chunks_discarded
     * and the producers connected and seen.
     */
    private record Read(List<Long> timestamps, long chunksDiscarded, int producersConnected, long producersSeen) {
        static Read of(byte[] trace) {
            List<Long> timestamps = new ArrayList<>();
            long chunksDiscarded = -1;
            int connected = -1;
            long seen = -1;
            TracePacket.Decoder packet = new TracePacket.Decoder();
            TraceStats.Decoder stats = new TraceStats.Decoder();
            for (byte[] bytes : ProducerRemoteWriterTest.rawPackets(trace)) {
                packet.reset(MemorySegment.ofArray(bytes));
                if (packet.traceStats(stats)) {
                    chunksDiscarded = stats.chunksDiscarded();
                    connected = stats.producersConnected();
                    seen = stats.producersSeen();
                } else if (packet.trustedPacketSequenceId() != TracingSession.SERVICE_SEQUENCE_ID) {
                    timestamps.add(packet.timestamp());
                }
            }
            return new Read(timestamps, chunksDiscarded, connected, seen);
        }
    }

    /** Also with the producer built with ASan and UBSan, up to its death mid-packet. */
    @ParameterizedTest(name = "sanitized: {0}")
    @ValueSource(booleans = {false, true})
    void aProducerKilledMidWriteLosesItsOpenChunkAndTheStatsSaySo(boolean sanitized) throws Exception {
        Path program = sanitized ? CPrograms.sanitized("hostile_producer") : CPrograms.program("hostile_producer");
        try (TracingService service = new TracingService();
             ListeningSocket server = ListeningSocket.listen(UnixAddress.abstractName(
                     "ffmtrace-killed-" + ProcessHandle.current().pid() + "-" + System.nanoTime()), 1)) {
            TracingSession session = service.startSession(TracingServiceTest.twoNamedBuffers());
            Peers.Peer peer = Peers.startNative(program, server.address().toString(),
                    Integer.toString(PAGE_SIZE), Integer.toString(PAGES * PAGE_SIZE), Integer.toString(WRITER), "die");
            Producer producer;
            try (StreamSocket connection = server.accept()) {
                PeerCredentials credentials = connection.peerCredentials();
                producer = service.connectProducer(ProducerOptions.of("doomed")
                        .withIdentity(new ClientIdentity(credentials.uid(), credentials.pid()))
                        .withSmbSize((long) PAGES * PAGE_SIZE).withPageSize(PAGE_SIZE));
                producer.adoptRemoteWriter(WRITER, producer.registerDataSource("track_event"));
                connection.send(new byte[] {'S'}, producer.smbFd());
                assertEquals(KILLED_BY_SIGKILL, peer.process().waitFor());
            }
            // A flush cannot tell a dead writer from a slow one: the packet being written stays hidden.
            session.flush();
            ByteArrayOutputStream beforeClose = new ByteArrayOutputStream();
            session.writeTrace(beforeClose);
            assertEquals(new Read(List.of(1000L, 1001L, 1002L, 1003L, 1004L), 0, 1, 1),
                    Read.of(beforeClose.toByteArray()));

            producer.close();
            ByteArrayOutputStream afterClose = new ByteArrayOutputStream();
            session.writeTrace(afterClose);
            // Packet 1005 will never be finished: the chunk holding it is counted as discarded,
            // and the producer as one seen but no longer connected.
            assertEquals(new Read(List.of(), 1, 0, 1), Read.of(afterClose.toByteArray()));
            assertEquals(1, session.chunksDiscarded());
            assertEquals(0, producer.abiViolations());
        }
    }
}
