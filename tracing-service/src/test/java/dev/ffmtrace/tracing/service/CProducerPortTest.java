package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.memory.testing.CPrograms;
import dev.ffmtrace.memory.testing.Peers;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.buffer.TraceBufferStats;
import dev.ffmtrace.tracing.trackevent.TrackEventReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The C producer ({@code native/src/c_producer.c}) through a {@link ProducerPort}: Perfetto's
 * producer IPC between two processes, with packets fragmented over chunks whose size fields
 * come as patches, flushes and stops the producer acknowledges, and a producer killed by
 * SIGKILL in the middle of a session.
 */
class CProducerPortTest {
    /** What a process killed by signal 9 exits with, as Java reports it. */
    private static final int KILLED_BY_SIGKILL = 128 + 9;
    private static final Pattern REPORT = Pattern.compile("D (\\d+) (\\d+)\n");
    /** One iteration of the C producer's workload, as events on its thread and counter tracks. */
    private static final List<String> ITERATION = List.of("B c work", "B c step", "E", "I c tick", "E", "C");
    /**
     * The "c tick" instant's annotation: more than a 1,024-byte chunk holds, so every tick
     * packet crosses a chunk boundary inside its open TrackEvent and every iteration sends a
     * size field as a patch, whatever sizes the other packets happen to have.
     */
    private static final String TICK_BYTES = "1200";
    /** Long enough that a flush or stop that ends sooner was acknowledged, not timed out. */
    private static final int ACK_TIMEOUT_MS = 60_000;

    private static UnixAddress address() {
        return UnixAddress.abstractName("ffmtrace-c-port-test-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
    }

    private static SessionConfig config() throws InvalidConfigException {
        HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
        config.get().addBuffers().setSizeKb(16 * 1024);
        config.get().addDataSources().setConfig().setName("track_event");
        config.get().setFlushTimeoutMs(ACK_TIMEOUT_MS);
        config.get().setDataSourceStopTimeoutMs(ACK_TIMEOUT_MS);
        return SessionConfig.parse(config.toSegment());
    }

    private static Peers.Peer startProducer(ProducerPort port, String name, String... options) {
        return startProducer(CPrograms.program("ffmtrace-c-producer"), port, name, options);
    }

    private static Peers.Peer startProducer(Path program, ProducerPort port, String name, String... options) {
        List<String> args = new ArrayList<>(List.of("--name", name, "--page-size", "4096",
                "--smb-size", Integer.toString(1 << 20)));
        args.addAll(List.of(options));
        args.add(port.address().toString());
        return Peers.startNative(program, args.toArray(String[]::new));
    }

    private static byte[] trace(TracingSession session) throws IOException {
        ByteArrayOutputStream trace = new ByteArrayOutputStream();
        session.writeTrace(trace);
        return trace.toByteArray();
    }

    /** The packets the trace holds from process {@code pid}. */
    private static long packetsOf(byte[] trace, long pid) {
        TracePacket.Decoder packet = new TracePacket.Decoder();
        long count = 0;
        for (byte[] bytes : ProducerRemoteWriterTest.rawPackets(trace)) {
            packet.reset(MemorySegment.ofArray(bytes));
            if (packet.trustedPid() == pid) {
                count++;
            }
        }
        return count;
    }

    /** The events of process {@code pid}'s thread and counter tracks, in trace order, one word each. */
    private static List<String> eventsOf(byte[] trace, long pid) {
        TrackEventReader.Decoded decoded = TrackEventReader.read(MemorySegment.ofArray(trace));
        assertEquals(0, decoded.undecodable());
        Map<Long, TrackEventReader.TrackInfo> tracks = decoded.tracks();
        List<String> events = new ArrayList<>();
        for (TrackEventReader.Event event : decoded.events()) {
            TrackEventReader.TrackInfo track = tracks.get(event.trackUuid());
            TrackEventReader.TrackInfo owner = track == null ? null
                    : track.pid() != 0 ? track : tracks.get(track.parentUuid());
            if (owner == null || owner.pid() != pid) {
                continue;
            }
            events.add(switch (event.typeEnum()) {
                case TYPE_SLICE_BEGIN -> "B " + event.name();
                case TYPE_SLICE_END -> "E";
                case TYPE_INSTANT -> "I " + event.name();
                case TYPE_COUNTER -> "C";
                case null, default -> "? " + event.type();
            });
        }
        return events;
    }

    /** Checks that {@code events} are whole iterations, in order; returns how many. */
    private static int wholeIterations(List<String> events) {
        assertEquals(0, events.size() % ITERATION.size(), "whole iterations only");
        for (int i = 0; i < events.size(); i++) {
            if (!events.get(i).equals(ITERATION.get(i % ITERATION.size()))) {
                throw new AssertionError("event " + i + " is " + events.get(i) + ", not "
                        + ITERATION.get(i % ITERATION.size()) + ": " + events.subList(Math.max(0, i - 6), i + 1));
            }
        }
        return events.size() / ITERATION.size();
    }

    private static long[] report(Peers.Peer peer) {
        Matcher report = REPORT.matcher(peer.awaitSuccess());
        assertTrue(report.matches(), "the C producer's report");
        return new long[] {Long.parseLong(report.group(1)), Long.parseLong(report.group(2))};
    }

    /**
     * Also with the producer built with ASan and UBSan, whose findings end it with
     * {@link CPrograms#SANITIZER_FINDING} (its report then fails on that status): the
     * producer's whole path, the service's commands decoded, packets written across chunks
     * and patched, flushes and the stop, under the sanitizers.
     */
    @ParameterizedTest(name = "sanitized: {0}")
    @ValueSource(booleans = {false, true})
    void fragmentedPatchedPacketsFlushesAndTheStopAllArriveWhole(boolean sanitized) throws Exception {
        Path program = sanitized ? CPrograms.sanitized("ffmtrace-c-producer") : CPrograms.program("ffmtrace-c-producer");
        Peers.Peer peer = null;
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address())) {
            TracingSession session = service.startSession(config());
            peer = startProducer(program, port, "c-port-test", "--tick-bytes", TICK_BYTES);
            Await.until("the C producer has committed 100 chunks", () -> port.chunksMoved() >= 100);
            for (int i = 0; i < 3; i++) {
                assertTrue(session.flush(Duration.ofSeconds(20)), "flush " + i + " acknowledged before its timeout");
            }
            long stopStarted = System.nanoTime();
            session.stop();
            // A stop left to its timeout takes all of it: this one ended when the producer said it stopped.
            assertTrue(System.nanoTime() - stopStarted < TimeUnit.MILLISECONDS.toNanos(ACK_TIMEOUT_MS),
                    "the producer said it stopped, before the stop timeout");
            port.close();
            long[] report = report(peer);

            byte[] trace = trace(session);
            long pid = peer.process().pid();
            assertEquals(report[0], packetsOf(trace, pid), "every packet the producer wrote is in the trace");
            int iterations = wholeIterations(eventsOf(trace, pid));
            // 100 full chunks hold about 100 KB, and an iteration takes under 1.5 KB of them.
            assertTrue(iterations >= 50, iterations + " iterations");
            TraceBufferStats stats = session.stats().getFirst();
            assertTrue(stats.patchesSucceeded() >= iterations,
                    "every tick crossed a chunk with its TrackEvent's size open, so was patched: " + stats);
            assertEquals(0, stats.patchesFailed());
            assertEquals(0, stats.abiViolations());
            assertEquals(0, stats.chunksDiscarded());
            assertEquals(0, port.violations());
            assertEquals(0, port.abiViolations());
            session.close();
        } finally {
            if (peer != null) {
                peer.process().destroyForcibly();
            }
        }
    }

    @Test
    void aCProducerKilledMidSessionLeavesWholeIterationsAndTheOtherLosesNothing() throws Exception {
        Peers.Peer doomed = null;
        Peers.Peer survivor = null;
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address())) {
            TracingSession session = service.startSession(config());
            // The doomed producer alone commits 10 full chunks (over 40 iterations of about
            // 220 bytes), then the survivor joins.
            doomed = startProducer(port, "c-doomed");
            Await.until("the doomed producer has committed 10 chunks", () -> port.chunksMoved() >= 10);
            survivor = startProducer(port, "c-survivor");
            long doomedAlone = port.chunksMoved();
            Await.until("both producers write", () -> port.producerCount() == 2 && port.chunksMoved() >= doomedAlone + 20,
                    () -> port.producerCount() + " producers, " + port.chunksMoved() + " chunks");
            doomed.process().destroyForcibly();
            assertEquals(KILLED_BY_SIGKILL, doomed.process().waitFor());
            Await.until("the killed producer is closed", () -> port.producerCount() == 1);
            long moved = port.chunksMoved();
            Await.until("the other producer goes on", () -> port.chunksMoved() >= moved + 20);
            assertTrue(session.flush(Duration.ofSeconds(20)), "the survivor acknowledges flushes");
            session.stop();
            port.close();
            long[] report = report(survivor);

            byte[] trace = trace(session);
            long survivorPid = survivor.process().pid();
            assertEquals(report[0], packetsOf(trace, survivorPid), "the survivor lost nothing");
            assertTrue(wholeIterations(eventsOf(trace, survivorPid)) >= 20);
            List<String> doomedEvents = eventsOf(trace, doomed.process().pid());
            assertTrue(doomedEvents.size() >= ITERATION.size() * 20, "what the killed producer committed is there");
            // Whole iterations, then at most the start of one: the end of the chunk it held
            // (the packet a scrape cannot know is finished) and what it had not written.
            int whole = doomedEvents.size() / ITERATION.size() * ITERATION.size();
            wholeIterations(doomedEvents.subList(0, whole));
            assertEquals(ITERATION.subList(0, doomedEvents.size() - whole), doomedEvents.subList(whole, doomedEvents.size()));
            TraceBufferStats stats = session.stats().getFirst();
            assertEquals(0, stats.patchesFailed());
            assertEquals(0, stats.abiViolations());
            assertEquals(0, port.abiViolations());
            // The chunk it held when killed, if it had a packet in it, is the session's
            // chunks_discarded (ProducerPortTest has the exact case).
            assertTrue(session.chunksDiscarded() <= 1, "chunks discarded: " + session.chunksDiscarded());
            session.close();
        } finally {
            for (Peers.Peer peer : new Peers.Peer[] {doomed, survivor}) {
                if (peer != null) {
                    peer.process().destroyForcibly();
                }
            }
        }
    }

    /**
     * The C producer registers a ProtoVM program (--protovm-program): once the session's
     * small ring buffer overwrites its packets, the trace's protovms packet holds the
     * program, the producer and a state merged from what was overwritten.
     */
    @Test
    void aCProducersProtoVmProgramRunsOnItsOverwrittenPackets(@TempDir Path dir) throws Exception {
        Path program = Files.write(dir.resolve("program.bin"), SessionProtoVmTest.MERGE_ALL);
        Peers.Peer peer = null;
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address())) {
            // The session first: the producer's registration is a late one, which must set up its VM too.
            TracingSession session = service.startSession(SessionConfig.builder()
                    .buffer(64, OverwritePolicy.RING_BUFFER).dataSourceWithProtoVm("track_event", 0, 256).build());
            peer = startProducer(port, "c-protovm", "--protovm-program", program.toString());
            Await.until("the ring overwrote 10 chunks", () -> session.stats().getFirst().chunksOverwritten() >= 10);
            session.stop();
            port.close();
            report(peer);

            SessionProtoVmTest.Decoded trace = SessionProtoVmTest.decode(trace(session));
            assertEquals(1, trace.programs().size(), "one VM");
            assertArrayEquals(SessionProtoVmTest.MERGE_ALL, trace.programs().getFirst());
            assertEquals(256, trace.limits().getFirst());
            assertEquals(1, trace.producers().getFirst().length);
            assertTrue(!trace.states().getFirst().endsWith(" -"), "the state holds a merged TrackEvent: "
                    + trace.states().getFirst());
            assertEquals(0, port.violations());
            session.close();
        } finally {
            if (peer != null) {
                peer.process().destroyForcibly();
            }
        }
    }
}
