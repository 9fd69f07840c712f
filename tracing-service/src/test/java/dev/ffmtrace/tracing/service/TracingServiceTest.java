package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.perfetto.protos.BuiltinClock;
import dev.ffmtrace.perfetto.protos.ClockSnapshot;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TraceStats;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.tracing.buffer.ClientIdentity;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class TracingServiceTest {
    private static final ClientIdentity SELF = ClientIdentity.self();

    static SessionConfig twoNamedBuffers() throws InvalidConfigException {
        return SessionConfig.parse(SessionConfigTest.config(
                List.of(new SessionConfigTest.B(2048, "events"), new SessionConfigTest.B(1024, "counters")),
                List.of(new SessionConfigTest.D("track_event", null, "events"),
                        new SessionConfigTest.D("counters", null, "counters")),
                c -> { }));
    }

    /** A decoded trace packet: the fields the tests look at. */
    record Packet(long timestamp, int sequenceId, int uid, int pid, boolean dropped, String name, boolean stats) {
    }

    static List<Packet> decode(byte[] trace) {
        Trace.Decoder decoder = new Trace.Decoder();
        decoder.reset(MemorySegment.ofArray(trace));
        assertFalse(decoder.hasError(), "the trace file is a valid Trace");
        RepeatedFieldIterator packets = decoder.packet(new RepeatedFieldIterator());
        TracePacket.Decoder packet = new TracePacket.Decoder();
        TrackEvent.Decoder event = new TrackEvent.Decoder();
        List<Packet> out = new ArrayList<>();
        while (packets.next()) {
            packet.reset(packets.field());
            assertFalse(packet.hasError());
            String name = packet.trackEvent(event) ? event.name() : null;
            out.add(new Packet(packet.timestamp(), packet.trustedPacketSequenceId(), packet.trustedUid(),
                    packet.trustedPid(), packet.previousPacketDropped() != 0, name, packet.hasTraceStats()));
        }
        return out;
    }

    @Test
    void writersOnSeveralThreadsWithFlushesWhileTheyWriteMakeAWholeTrace() throws Exception {
        int threads = 4;
        int packetsPerThread = 5000;
        try (TracingService service = new TracingService()) {
            Producer producer = service.connectProducer(ProducerOptions.of("app").withSmbSize(1 << 20));
            DataSource events = producer.registerDataSource("track_event");
            DataSource counters = producer.registerDataSource("counters");
            TracingSession session = service.startSession(twoNamedBuffers());
            assertTrue(events.isStarted() && counters.isStarted());

            ByteArrayOutputStream file = new ByteArrayOutputStream();
            CountDownLatch done = new CountDownLatch(threads);
            AtomicBoolean failed = new AtomicBoolean();
            List<Thread> writers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                DataSource source = t % 2 == 0 ? events : counters;
                int thread = t;
                writers.add(Thread.ofPlatform().start(() -> {
                    try (TraceWriter<TracePacket> writer = source.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                        for (int i = 0; i < packetsPerThread; i++) {
                            TracePacket packet = writer.newTracePacket();
                            packet.setTimestamp(i);
                            packet.setTrackEvent().setName("thread " + thread + " event " + i);
                            writer.finishTracePacket();
                        }
                    } catch (RuntimeException e) {
                        failed.set(true);
                        throw e;
                    } finally {
                        done.countDown();
                    }
                }));
            }
            while (done.getCount() > 0) {
                session.flush();
                session.writeTrace(file);
            }
            for (Thread writer : writers) {
                writer.join();
            }
            session.flush();
            session.writeTrace(file);
            assertFalse(failed.get());

            List<Packet> packets = decode(file.toByteArray());
            Map<Integer, Long> lastTimestamp = new HashMap<>();
            int eventPackets = 0;
            int statsPackets = 0;
            for (Packet packet : packets) {
                if (packet.sequenceId() == TracingSession.SERVICE_SEQUENCE_ID) {
                    statsPackets += packet.stats() ? 1 : 0;
                    continue;
                }
                eventPackets++;
                assertEquals(SELF.uid(), packet.uid());
                assertEquals(SELF.pid(), packet.pid());
                assertFalse(packet.dropped(), "the buffers are large enough: nothing is lost");
                long previous = lastTimestamp.getOrDefault(packet.sequenceId(), -1L);
                assertEquals(previous + 1, packet.timestamp(), "per-sequence order and no gaps on sequence " + packet.sequenceId());
                lastTimestamp.put(packet.sequenceId(), packet.timestamp());
                assertTrue(packet.name().endsWith(" event " + packet.timestamp()));
            }
            assertEquals(threads * packetsPerThread, eventPackets);
            assertEquals(threads, lastTimestamp.size(), "one sequence per writer");
            assertTrue(statsPackets >= 2, "every writeTrace ends with trace_stats");
            assertEquals(0, producer.abiViolations());
            long written = session.stats().stream().mapToLong(s -> s.chunksWritten()).sum();
            assertTrue(written > 0);
            session.close();
            assertFalse(events.isStarted(), "stopping the session stops its data sources");
        }
    }

    @Test
    void theStatsPacketHoldsEveryBuffer() throws Exception {
        try (TracingService service = new TracingService()) {
            Producer producer = service.connectProducer(ProducerOptions.of("app"));
            DataSource events = producer.registerDataSource("track_event");
            TracingSession session = service.startSession(twoNamedBuffers());
            try (TraceWriter<TracePacket> writer = events.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                writer.newTracePacket().setTimestamp(7);
            }
            ByteArrayOutputStream file = new ByteArrayOutputStream();
            assertEquals(1, session.writeTrace(file));
            Trace.Decoder trace = new Trace.Decoder();
            trace.reset(MemorySegment.ofArray(file.toByteArray()));
            RepeatedFieldIterator packets = trace.packet(new RepeatedFieldIterator());
            TracePacket.Decoder packet = new TracePacket.Decoder();
            TraceStats.Decoder stats = new TraceStats.Decoder();
            ClockSnapshot.Decoder snapshot = new ClockSnapshot.Decoder();
            packets.next();
            packet.reset(packets.field());
            assertTrue(packet.clockSnapshot(snapshot), "readback starts with the service's clock snapshot");
            assertEquals(TracingSession.SERVICE_SEQUENCE_ID, packet.trustedPacketSequenceId());
            assertEquals(BuiltinClock.BUILTIN_CLOCK_BOOTTIME, snapshot.primaryTraceClockEnum());
            List<BuiltinClock> clocks = new ArrayList<>();
            RepeatedFieldIterator entries = snapshot.clocks(new RepeatedFieldIterator());
            ClockSnapshot.Clock.Decoder clock = new ClockSnapshot.Clock.Decoder();
            while (entries.next()) {
                clock.reset(entries.field());
                assertTrue(clock.timestamp() > 0);
                clocks.add(BuiltinClock.forNumber(clock.clockId()));
            }
            assertEquals(List.of(BuiltinClock.BUILTIN_CLOCK_BOOTTIME, BuiltinClock.BUILTIN_CLOCK_MONOTONIC,
                    BuiltinClock.BUILTIN_CLOCK_MONOTONIC_RAW, BuiltinClock.BUILTIN_CLOCK_REALTIME,
                    BuiltinClock.BUILTIN_CLOCK_REALTIME_COARSE, BuiltinClock.BUILTIN_CLOCK_MONOTONIC_COARSE), clocks);
            byte[] last = null;
            while (packets.next()) {
                last = packets.field().asBytes();
            }
            packet.reset(MemorySegment.ofArray(last));
            assertTrue(packet.traceStats(stats), "readback ends with the stats");
            assertEquals(TracingSession.SERVICE_SEQUENCE_ID, packet.trustedPacketSequenceId());
            assertEquals(2, stats.bufferStatsCount());
            RepeatedFieldIterator buffers = stats.bufferStats(new RepeatedFieldIterator());
            TraceStats.BufferStats.Decoder buffer = new TraceStats.BufferStats.Decoder();
            buffers.next();
            buffer.reset(buffers.field());
            assertEquals(2048 * 1024, buffer.bufferSize());
            assertEquals(1, buffer.chunksWritten());
            assertEquals(1, buffer.chunksRead());
        }
    }

    @Test
    void aSnapshotLeavesTheSessionRunningAndItsDataUnread() throws Exception {
        try (TracingService service = new TracingService()) {
            Producer producer = service.connectProducer(ProducerOptions.of("app"));
            DataSource events = producer.registerDataSource("track_event");
            TracingSession session = service.startSession(twoNamedBuffers());
            try (TraceWriter<TracePacket> writer = events.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                for (int i = 0; i < 300; i++) {
                    writer.newTracePacket().setTimestamp(i);
                    writer.finishTracePacket();
                }
                session.flush();
                ByteArrayOutputStream snapshot = new ByteArrayOutputStream();
                assertEquals(300, session.writeSnapshot(snapshot));
                List<Packet> snapshotPackets = decode(snapshot.toByteArray());
                assertEquals(300, snapshotPackets.stream()
                        .filter(packet -> packet.sequenceId() != TracingSession.SERVICE_SEQUENCE_ID).count());
                assertTrue(snapshotPackets.getLast().stats(), "a snapshot is a whole trace, with its stats");
                writer.newTracePacket().setTimestamp(300);
                writer.finishTracePacket();
            }
            ByteArrayOutputStream file = new ByteArrayOutputStream();
            assertEquals(301, session.writeTrace(file), "the snapshot consumed nothing; the session kept going");
        }
    }

    @Test
    void aWrappedRingBufferReportsTheOverwriteAsTheCauseOfTheLoss() throws Exception {
        SessionConfig config = SessionConfig.parse(SessionConfigTest.config(List.of(new SessionConfigTest.B(64, "events")),
                List.of(new SessionConfigTest.D("track_event", null, "events")), c -> { }));
        try (TracingService service = new TracingService()) {
            Producer producer = service.connectProducer(ProducerOptions.of("app"));
            DataSource events = producer.registerDataSource("track_event");
            TracingSession session = service.startSession(config);
            try (TraceWriter<TracePacket> writer = events.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                for (int i = 0; i < 2000; i++) {
                    TracePacket packet = writer.newTracePacket();
                    packet.setTimestamp(i);
                    packet.setTrackEvent().setName("event " + i + " ".repeat(200));
                    writer.finishTracePacket();
                    if (i % 50 == 0) {
                        session.flush();
                    }
                }
            }
            session.flush();
            ByteArrayOutputStream file = new ByteArrayOutputStream();
            session.writeTrace(file);
            Trace.Decoder trace = new Trace.Decoder();
            trace.reset(MemorySegment.ofArray(file.toByteArray()));
            RepeatedFieldIterator packets = trace.packet(new RepeatedFieldIterator());
            TracePacket.Decoder packet = new TracePacket.Decoder();
            List<Integer> losses = new ArrayList<>();
            while (packets.next()) {
                packet.reset(packets.field());
                if (packet.previousPacketDropped() != 0) {
                    losses.add(packet.previousPacketDropped());
                }
            }
            int overwrite = TracePacket.DataLossReason.DATA_LOSS_PRESENT.number()
                    | TracePacket.DataLossReason.DATA_LOSS_OVERWRITE.number();
            assertEquals(65, overwrite);
            // 800 KB through a 64 KB ring: the first packet read says what was lost before it, and why.
            assertEquals(List.of(overwrite), losses);
        }
    }

    @Test
    void aDataSourceRegisteredAfterTheSessionStartedIsStartedToo() throws Exception {
        try (TracingService service = new TracingService()) {
            TracingSession session = service.startSession(twoNamedBuffers());
            Producer late = service.connectProducer(ProducerOptions.of("late").withSmbSize(16 * 4096));
            DataSource counters = late.registerDataSource("counters");
            assertTrue(counters.isStarted());
            DataSource unknown = late.registerDataSource("not.in.config");
            assertEquals("data source \"not.in.config\" is not started by any session",
                    assertThrows(IllegalStateException.class, () -> unknown.newTraceWriter(BufferExhaustedPolicy.DROP)).getMessage());
            session.close();
            assertThrows(IllegalStateException.class, session::flush);
        }
    }
}
