package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.memory.testing.CPrograms;
import dev.ffmtrace.memory.testing.Peers;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.buffer.TraceBufferStats;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The C stress producer ({@code native/src/stress_producer.c}) through a {@link ProducerPort}:
 * four writer threads filling one SMB at once, their packets decoded from the trace
 * (TracePacket.for_testing, field 900, read by hand) and checked against the producer's
 * report and ledger: each writer's counters in order, checksums, the last packet marked,
 * and, under the drop policy, every gap announced by previous_packet_dropped, packets
 * abandoned mid-way among them.
 */
class StressProducerPortTest {
    private static final String DATA_SOURCE = "ffmtrace.stress";
    private static final int PRODUCER_ID = 7;
    private static final int THREADS = 4;
    private static final int FOR_TESTING = 900;
    private static final int PREVIOUS_PACKET_DROPPED = 42;
    private static final long SMB_FULL_LOSS = 257;
    private static final long WRITER_ABORT = 128;
    private static final Pattern REPORT_LINE = Pattern.compile("W (\\d+) (\\d+) (\\d+)");
    private static final int ACK_TIMEOUT_MS = 60_000;
    private static final int KILLED_BY_SIGKILL = 128 + 9;

    /** One writer's packet, as decoded from the trace. */
    record Event(int writer, long counter, boolean checksumRight, boolean last, long previousDropped,
                 int payloadBytes, int sequenceId) {
    }

    private static UnixAddress address() {
        return UnixAddress.abstractName("ffmtrace-stress-test-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
    }

    private static SessionConfig config() throws InvalidConfigException {
        HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
        config.get().addBuffers().setSizeKb(64 * 1024);
        config.get().addDataSources().setConfig().setName(DATA_SOURCE);
        config.get().setFlushTimeoutMs(ACK_TIMEOUT_MS);
        config.get().setDataSourceStopTimeoutMs(ACK_TIMEOUT_MS);
        return SessionConfig.parse(config.toSegment());
    }

    private static Peers.Peer startProducer(ProducerPort port, Path ledger, String... options) {
        return startProducer(port, ledger, THREADS, options);
    }

    private static Peers.Peer startProducer(ProducerPort port, Path ledger, int threads, String... options) {
        return startProducer(CPrograms.program("ffmtrace-stress-producer"), port, ledger, threads, options);
    }

    private static Peers.Peer startProducer(Path program, ProducerPort port, Path ledger, int threads, String... options) {
        List<String> args = new ArrayList<>(List.of("--producer-id", Integer.toString(PRODUCER_ID), "--data-source",
                DATA_SOURCE, "--threads", Integer.toString(threads), "--seed", "42", "--ledger", ledger.toString(),
                "--page-size", "4096"));
        args.addAll(List.of(options));
        args.add(port.address().toString());
        return Peers.startNative(program, args.toArray(String[]::new));
    }

    private static Path ledger(Path dir) throws Exception {
        return ledger(dir, THREADS);
    }

    private static Path ledger(Path dir, int threads) throws Exception {
        Path ledger = dir.resolve("ledger");
        Files.write(ledger, new byte[threads * Long.BYTES]);
        return ledger;
    }

    private static long[] readLedger(Path ledger) {
        try {
            ByteBuffer bytes = ByteBuffer.wrap(Files.readAllBytes(ledger)).order(ByteOrder.LITTLE_ENDIAN);
            long[] slots = new long[bytes.remaining() / Long.BYTES];
            for (int i = 0; i < slots.length; i++) {
                slots[i] = bytes.getLong();
            }
            return slots;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The producer's report: packets attempted and dropped, by writer index. */
    private static long[][] report(Peers.Peer peer) {
        return report(peer, THREADS);
    }

    private static long[][] report(Peers.Peer peer, int threads) {
        String out = peer.awaitSuccess();
        long[][] report = new long[threads][];
        for (String line : out.strip().split("\n")) {
            Matcher m = REPORT_LINE.matcher(line);
            assertTrue(m.matches(), "report line " + line);
            report[Integer.parseInt(m.group(1))] = new long[] {Long.parseLong(m.group(2)), Long.parseLong(m.group(3))};
        }
        for (long[] writer : report) {
            assertTrue(writer != null, "a line for every writer: " + out);
        }
        return report;
    }

    /** The stress packets of the trace, by writer index, in trace order. */
    private static Map<Integer, List<Event>> events(TracingSession session) throws Exception {
        ByteArrayOutputStream trace = new ByteArrayOutputStream();
        session.writeTrace(trace);
        TracePacket.Decoder decoder = new TracePacket.Decoder();
        Map<Integer, List<Event>> events = new HashMap<>();
        for (byte[] raw : ProducerRemoteWriterTest.rawPackets(trace.toByteArray())) {
            decoder.reset(MemorySegment.ofArray(raw));
            Event event = decode(raw, decoder.trustedPacketSequenceId());
            if (event != null) {
                events.computeIfAbsent(event.writer(), w -> new ArrayList<>()).add(event);
            }
        }
        return events;
    }

    /** A minimal protobuf reader, for the fields the generated decoders do not know. */
    private static final class Reader {
        private final byte[] bytes;
        private int at;
        private final int end;
        int id;
        int type;
        long value;
        int start;
        int size;

        Reader(byte[] bytes, int start, int end) {
            this.bytes = bytes;
            this.at = start;
            this.end = end;
        }

        boolean next() {
            if (at >= end) {
                return false;
            }
            long tag = varint();
            id = (int) (tag >>> 3);
            type = (int) (tag & 7);
            switch (type) {
                case 0 -> value = varint();
                case 1 -> at += 8;
                case 2 -> {
                    size = (int) varint();
                    start = at;
                    at += size;
                }
                case 5 -> at += 4;
                default -> throw new AssertionError("wire type " + type);
            }
            if (at > end) {
                throw new AssertionError("field " + id + " runs past its message");
            }
            return true;
        }

        Reader inner() {
            return new Reader(bytes, start, start + size);
        }

        byte[] data() {
            return Arrays.copyOfRange(bytes, start, start + size);
        }

        private long varint() {
            long result = 0;
            for (int shift = 0; shift < 64; shift += 7) {
                byte b = bytes[at++];
                result |= (long) (b & 0x7f) << shift;
                if (b >= 0) {
                    return result;
                }
            }
            throw new AssertionError("varint too long");
        }
    }

    private static int fnv1a(int hash, byte[] data) {
        for (byte b : data) {
            hash = (hash ^ (b & 0xff)) * 16777619;
        }
        return hash;
    }

    /** FNV-1a over a TestPayload's strings in pre-order; adds their bytes to {@code bytes[0]}. */
    private static int hashPayload(int hash, Reader payload, int[] bytes) {
        List<Reader> nested = new ArrayList<>();
        while (payload.next()) {
            if (payload.id == 1 && payload.type == 2) {
                hash = fnv1a(hash, payload.data());
                bytes[0] += payload.size;
            } else if (payload.id == 2 && payload.type == 2) {
                nested.add(payload.inner());
            }
        }
        for (Reader child : nested) {
            hash = hashPayload(hash, child, bytes);
        }
        return hash;
    }

    private static Event decode(byte[] raw, int sequenceId) {
        Reader packet = new Reader(raw, 0, raw.length);
        Reader forTesting = null;
        long previousDropped = 0;
        while (packet.next()) {
            if (packet.id == FOR_TESTING && packet.type == 2) {
                forTesting = packet.inner();
            } else if (packet.id == PREVIOUS_PACKET_DROPPED && packet.type == 0) {
                previousDropped = packet.value;
            }
        }
        if (forTesting == null) {
            return null;
        }
        byte[] str = null;
        long counter = -1;
        long seqValue = -1;
        boolean last = false;
        Reader payload = null;
        while (forTesting.next()) {
            switch (forTesting.id) {
                case 1 -> str = forTesting.data();
                case 2 -> seqValue = forTesting.value;
                case 3 -> counter = forTesting.value;
                case 4 -> last = forTesting.value != 0;
                case 5 -> payload = forTesting.inner();
                default -> throw new AssertionError("TestEvent field " + forTesting.id);
            }
        }
        String name = new String(str, StandardCharsets.US_ASCII);
        assertTrue(name.startsWith(PRODUCER_ID + "/"), name);
        byte[] counterBytes = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(counter).array();
        int hash = fnv1a(fnv1a(0x811c9dc5, str), counterBytes);
        int[] bytes = {0};
        hash = hashPayload(hash, payload, bytes);
        return new Event(Integer.parseInt(name.substring(name.indexOf('/') + 1)), counter,
                Integer.toUnsignedLong(hash) == seqValue, last, previousDropped, bytes[0], sequenceId);
    }

    private static void assertNoViolations(TracingSession session, ProducerPort port) {
        TraceBufferStats stats = session.stats().getFirst();
        assertEquals(0, stats.patchesFailed());
        assertEquals(0, stats.abiViolations());
        assertEquals(0, stats.chunksOverwritten(), "the buffer is big enough for every packet");
        assertEquals(0, port.violations());
        assertEquals(0, port.abiViolations());
    }

    /**
     * Also with the producer built with ThreadSanitizer, whose finding of a data race
     * between the writer threads, the command loop and the commits ends it with
     * {@link CPrograms#SANITIZER_FINDING} (its report then fails on that status).
     */
    @ParameterizedTest(name = "thread-sanitized: {0}")
    @ValueSource(booleans = {false, true})
    void underStallFourWritersLoseNothingAndStopWithALastPacket(boolean threadSanitized, @TempDir Path dir)
            throws Exception {
        Path program = threadSanitized ? CPrograms.threadSanitized("ffmtrace-stress-producer")
                : CPrograms.program("ffmtrace-stress-producer");
        Path ledger = ledger(dir);
        Peers.Peer peer = null;
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address())) {
            TracingSession session = service.startSession(config());
            // A small SMB, so that writers wait for chunks and large packets span many.
            peer = startProducer(program, port, ledger, THREADS, "--policy", "stall", "--rate", "1000", "--smb-size",
                    Integer.toString(64 * 1024));
            Await.until("every writer has written 1000 packets",
                    () -> Arrays.stream(readLedger(ledger)).allMatch(n -> n >= 1000));
            for (int i = 0; i < 3; i++) {
                assertTrue(session.flush(Duration.ofSeconds(20)), "flush " + i + " acknowledged");
            }
            session.stop();
            port.close();
            long[][] report = report(peer);
            long[] attempted = readLedger(ledger);

            Map<Integer, List<Event>> events = events(session);
            assertEquals(THREADS, events.size(), "every writer's packets are in the trace");
            long large = 0;
            for (int w = 0; w < THREADS; w++) {
                List<Event> written = events.get(w);
                assertEquals(report[w][0], attempted[w], "the ledger counts what the writer attempted");
                assertEquals(0, report[w][1], "no packet dropped under stall");
                assertEquals(attempted[w], written.size(), "writer " + w + "'s packets all in the trace");
                for (int i = 0; i < written.size(); i++) {
                    Event event = written.get(i);
                    assertEquals(i, event.counter(), "writer " + w + "'s packets in order");
                    assertTrue(event.checksumRight(), "checksum of " + event);
                    assertEquals(i == written.size() - 1, event.last(), "only the last packet is marked last");
                    assertEquals(0, event.previousDropped());
                    assertEquals(written.getFirst().sequenceId(), event.sequenceId(), "one sequence a writer");
                    large += event.payloadBytes() >= 2048 ? 1 : 0;
                }
            }
            assertTrue(large >= 50, large + " large packets");
            assertTrue(session.stats().getFirst().patchesSucceeded() > 0, "size fields left behind were patched");
            assertNoViolations(session, port);
            session.close();
        } finally {
            if (peer != null) {
                peer.process().destroyForcibly();
            }
        }
    }

    @Test
    void underDropEveryGapIsAnnouncedAndTheCountsAgree(@TempDir Path dir) throws Exception {
        Path ledger = ledger(dir);
        long perWriter = 3000;
        Peers.Peer peer = null;
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address())) {
            TracingSession session = service.startSession(config());
            // Sixteen chunks for four writers as fast as they go, and packets of up to 17
            // chunks. Each writer holds its commits for its first 2,100 packets, over 30 KiB
            // however small: nothing it holds comes back, so each one drops.
            peer = startProducer(port, ledger, "--policy", "drop", "--packets-per-writer", Long.toString(perWriter),
                    "--sizes", "small:50,medium:30,large:20", "--smb-size", Integer.toString(16 * 1024),
                    "--hold-commits", "2100");
            awaitAttempted(ledger, perWriter);
            assertTrue(session.flush(Duration.ofSeconds(20)), "flush acknowledged");
            session.stop();
            port.close();
            long[][] report = report(peer);
            checkDrops(events(session), report, perWriter);
            for (int w = 0; w < THREADS; w++) {
                assertTrue(report[w][1] > 0, "writer " + w + " dropped while it held its commits");
            }
            assertNoViolations(session, port);
            session.close();
        } finally {
            if (peer != null) {
                peer.process().destroyForcibly();
            }
        }
    }

    /**
     * Also with the producer built with ASan and UBSan: the writer's abandoned packet, its
     * drop-packet size and the patches it leaves, under them.
     */
    @ParameterizedTest(name = "sanitized: {0}")
    @ValueSource(booleans = {false, true})
    void aPacketAbandonedMidWayIsAnnouncedOnTheWritersNextPacket(boolean sanitized, @TempDir Path dir) throws Exception {
        Path program = sanitized ? CPrograms.sanitized("ffmtrace-stress-producer")
                : CPrograms.program("ffmtrace-stress-producer");
        Path ledger = ledger(dir, 1);
        long perWriter = 40;
        Peers.Peer peer = null;
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address())) {
            TracingSession session = service.startSession(config());
            // One writer, packets of 2-16 KiB, sixteen chunks of 1 KiB and its commits held for
            // its first 20 packets: nothing else takes or frees a chunk, so the run is the same
            // every time. The chunks run out inside a packet, which is abandoned; after the
            // release the writer waits for chunks, and its next packet carries the loss.
            peer = startProducer(program, port, ledger, 1, "--policy", "drop", "--packets-per-writer",
                    Long.toString(perWriter), "--sizes", "large:1", "--smb-size", Integer.toString(16 * 1024),
                    "--hold-commits", "20");
            awaitAttempted(ledger, perWriter);
            assertTrue(session.flush(Duration.ofSeconds(20)), "flush acknowledged");
            session.stop();
            port.close();
            long[][] report = report(peer, 1);
            long abandoned = checkDrops(events(session), report, perWriter);
            assertTrue(report[0][1] > 0, "the writer dropped while it held its commits");
            assertTrue(abandoned > 0, "a packet abandoned mid-way is announced as the writer's abort");
            assertNoViolations(session, port);
            session.close();
        } finally {
            if (peer != null) {
                peer.process().destroyForcibly();
            }
        }
    }

    @Test
    void aProducerKilledBetweenCompletingAChunkAndCommittingItLosesNoFinishedPacket(@TempDir Path dir)
            throws Exception {
        // One writer of small packets kills itself at its 40th commit of a chunk, before
        // sending it: that chunk, 16 whole packets and the head of one spanning into the
        // next, stays complete in the SMB, never committed. The service takes it when the
        // connection ends (16 packets were lost without), and the scrape the next chunk.
        assertAFinishedPacketLostNoneAfterDeath(dir, "small:1", 40);
    }

    @Test
    void aProducerKilledInAPacketSpanningChunksLosesNoPacketBeforeIt(@TempDir Path dir) throws Exception {
        // Packets of 100 B to 16 KiB; the writer dies at its 40th chunk commit, in the middle
        // of packet 7, whose sizes wait for patches in the chunk where packet 6 ends. The
        // buffer reassembles nothing through a chunk waiting for patches: packet 6 was lost
        // until the service gave up the dead producer's patches.
        assertAFinishedPacketLostNoneAfterDeath(dir, "medium:1,large:1", 40);
    }

    /**
     * Runs one writer of {@code sizes} that kills itself at its {@code dieAt}-th commit of a
     * chunk, before sending it, and checks that every packet it finished is in the trace.
     */
    private static void assertAFinishedPacketLostNoneAfterDeath(Path dir, String sizes, int dieAt) throws Exception {
        Path ledger = ledger(dir, 1);
        Peers.Peer peer = null;
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address())) {
            TracingSession session = service.startSession(config());
            peer = startProducer(port, ledger, 1, "--policy", "stall", "--sizes", sizes,
                    "--die-at-chunk-commit", Integer.toString(dieAt));
            assertEquals(KILLED_BY_SIGKILL, peer.process().waitFor());
            Await.until("the dead producer is closed", () -> port.producerCount() == 0);
            session.stop();
            long attempted = readLedger(ledger)[0];
            List<Event> written = events(session).getOrDefault(0, List.of());
            assertTrue(attempted > 0, "the writer finished packets before it died");
            assertEquals(attempted, written.size(), "every packet the writer finished is in the trace");
            for (int i = 0; i < written.size(); i++) {
                assertEquals(i, written.get(i).counter(), "the packets in order");
                assertTrue(written.get(i).checksumRight(), "checksum of " + written.get(i));
                assertEquals(0, written.get(i).previousDropped(), "no loss announced");
            }
            assertEquals(0, port.violations());
            assertEquals(0, port.abiViolations());
            session.close();
        } finally {
            if (peer != null) {
                peer.process().destroyForcibly();
            }
        }
    }

    private static void awaitAttempted(Path ledger, long perWriter) throws InterruptedException {
        Await.until("every writer has attempted all its packets",
                () -> Arrays.stream(readLedger(ledger)).allMatch(n -> n == perWriter));
    }

    /**
     * Checks each writer's packets in the trace against its report: written = attempted -
     * dropped, in order, checksums right, a gap and only a gap announced, the last packet
     * marked. Returns the packets announced as following one the writer abandoned mid-way.
     */
    private static long checkDrops(Map<Integer, List<Event>> events, long[][] report, long perWriter) {
        long abandoned = 0;
        for (int w = 0; w < report.length; w++) {
            List<Event> written = events.getOrDefault(w, List.of());
            assertEquals(perWriter, report[w][0]);
            assertEquals(perWriter - report[w][1], written.size(), "writer " + w + ": written = attempted - dropped");
            long expected = 0;
            for (Event event : written) {
                assertTrue(event.counter() >= expected, "writer " + w + "'s packets in order");
                assertTrue(event.checksumRight(), "checksum of " + event);
                // The service adds its own causes: WRITER_ABORT for a packet abandoned mid-way.
                assertEquals(event.counter() > expected ? SMB_FULL_LOSS : 0, event.previousDropped() & SMB_FULL_LOSS,
                        "a gap, and only a gap, is announced: " + event);
                abandoned += (event.previousDropped() & WRITER_ABORT) != 0 ? 1 : 0;
                assertEquals(event.counter() == perWriter - 1, event.last());
                expected = event.counter() + 1;
            }
            assertFalse(written.isEmpty());
        }
        return abandoned;
    }
}
