package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.perfetto.protos.SystemInfo;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TraceUuid;
import dev.ffmtrace.perfetto.protos.TracingServiceEvent;
import dev.ffmtrace.perfetto.protos.Utsname;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.buffer.TraceBufferStats;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.Pipe;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The session's lifecycle as the service runs it (duration, flush, file write and idle
 * sweep timers, stop, completion), the service's own packets in the trace, and readback
 * that does not hold the producers' lock while it writes.
 */
class SessionLifecycleTest {
    /** A packet body the blocking output below waits on. */
    private static final byte[] MARKER = "ffmtrace-marker-0123456789".getBytes();

    @TempDir
    Path dir;

    private static SessionConfigBuilder oneBuffer() {
        return SessionConfig.builder().buffer("main", 1024, OverwritePolicy.RING_BUFFER).dataSource("track_event");
    }

    /** Writes packets with increasing timestamps until the session stops; returns how many. */
    private static Thread writeUntilStopped(DataSource events, TracingSession session, long[] written) {
        return Thread.ofPlatform().start(() -> {
            try (TraceWriter<TracePacket> writer = events.newTraceWriter(BufferExhaustedPolicy.DROP)) {
                long n = 0;
                while (!session.isStopped()) {
                    writer.newTracePacket().setTimestamp(++n);
                    writer.finishTracePacket();
                    if (n % 64 == 0) {
                        Thread.sleep(1);
                    }
                }
                written[0] = n;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
    }

    @Test
    void theServiceStopsTheSessionAfterItsDurationWhateverTheFlushPeriod() throws Exception {
        try (TracingService service = new TracingService()) {
            service.connectProducer(ProducerOptions.of("app")).registerDataSource("track_event");
            long start = System.nanoTime();
            // An hour's flush period: a stop it held back would not complete before the deadline.
            TracingSession session = service.startSession(oneBuffer().durationMs(300).flushPeriodMs(3_600_000).build());
            assertSame(session, session.completion().get(60, TimeUnit.SECONDS));
            long elapsedMs = (System.nanoTime() - start) / 1_000_000;
            assertTrue(elapsedMs >= 300, "stopped after " + elapsedMs + " ms");
            assertTrue(session.isStopped());
            assertFalse(session.isClosed(), "a stopped session's buffers stay readable");
            session.close();
        }
    }

    @Test
    void aSessionWhoseFileNobodyReadsDelaysNoOtherSessionsTimers() throws Exception {
        Pipe pipe = Pipe.open();
        // Closed first however the test ends, so that a stuck write cannot hang the service's close.
        try (TracingService service = new TracingService(); Pipe.SourceChannel unread = pipe.source()) {
            DataSource events = service.connectProducer(ProducerOptions.of("app").withSmbSize(1 << 20))
                    .registerDataSource("track_event");
            TracingSession stuck = service.startSession(oneBuffer().writeIntoFile(20, 0).build(), pipe.sink());
            // Four times what the pipe holds: the stuck session's next file write blocks for as
            // long as nobody reads the pipe, which is before the other session's stop is due.
            try (TraceWriter<TracePacket> writer = events.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                for (int i = 0; i < 256; i++) {
                    writer.newTracePacket().appendBytes(900, new byte[1000]);
                    writer.finishTracePacket();
                }
            }
            stuck.flush();
            TracingSession other = service.startSession(SessionConfig.builder()
                    .buffer("other", 64, OverwritePolicy.RING_BUFFER).durationMs(300).build());
            assertSame(other, other.completion().get(30, TimeUnit.SECONDS), "the other session's duration stops it");
            other.close();
            // Nobody will ever read: the blocked write fails, and the stuck session stops with it.
            unread.close();
            CompletableFuture<TracingSession> stopped = stuck.completion();
            assertThrows(ExecutionException.class, () -> stopped.get(30, TimeUnit.SECONDS));
            stuck.close();
        }
    }

    @Test
    void closeWaitsForAStopUnderWayOnAnotherThread() throws Exception {
        try (TracingService service = new TracingService()) {
            DataSource source = service.connectProducer(ProducerOptions.of("app")).registerDataSource("track_event");
            CountDownLatch stopping = new CountDownLatch(1);
            AtomicReference<Runnable> release = new AtomicReference<>();
            source.onStop(done -> {
                release.set(done);
                stopping.countDown();
            });
            TracingSession session = service.startSession(oneBuffer().durationMs(100).build());
            TraceWriter<TracePacket> writer = source.newTraceWriter(BufferExhaustedPolicy.STALL);
            for (int i = 1; i <= 10; i++) {
                writer.newTracePacket().setTimestamp(i);
                writer.finishTracePacket();
            }
            assertTrue(stopping.await(10, TimeUnit.SECONDS), "the duration timer stops the session");
            AtomicBoolean released = new AtomicBoolean();
            CompletableFuture<Boolean> closed = CompletableFuture.runAsync(session::close).thenApply(v -> released.get());
            writer.close();
            released.set(true);
            release.get().run();
            assertTrue(closed.get(10, TimeUnit.SECONDS),
                    "close waits for the timer's stop, which still takes the writers' chunks");
            assertTrue(session.isClosed());
            assertTrue(session.stats().get(0).bytesWritten() > 0, "the stop's last flush reached the buffer");
        }
    }

    @Test
    void writeIntoFileStreamsTheTraceWhileTheSessionRunsAndTheRestWhenItStops() throws Exception {
        Path file = dir.resolve("trace.pftrace");
        try (TracingService service = new TracingService();
             FileChannel out = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            DataSource events = service.connectProducer(ProducerOptions.of("app").withSmbSize(1 << 20))
                    .registerDataSource("track_event");
            TracingSession session = service.startSession(
                    oneBuffer().flushPeriodMs(50).writeIntoFile(100, 0).build(), out);
            long[] written = new long[1];
            Thread writer = writeUntilStopped(events, session, written);
            // Two periodic readbacks and two of the writer's packets in the file while the
            // session runs, then the stop's.
            Await.until("the service writes into the file while the session runs",
                    () -> packetsIn(file, true) >= 2 && packetsIn(file, false) >= 2);
            assertFalse(session.isStopped(), "only the test stops this session");
            session.stop();
            writer.join();
            session.close();

            byte[] trace = Files.readAllBytes(file);
            List<TracePacket.Decoder> packets = decoded(trace);
            long readbacks = packets.stream().filter(TracePacket.Decoder::hasTraceStats).count();
            assertTrue(readbacks >= 3, "periodic writes and the last one: " + readbacks);
            List<Long> timestamps = ProducerRemoteWriterTest.producerPackets(trace).stream()
                    .map(raw -> packet(raw).timestamp()).toList();
            // Every readback appended to the same file: one sequence, in order, none twice.
            assertTrue(timestamps.size() >= 2, "waited for above: " + timestamps.size());
            for (int i = 1; i < timestamps.size(); i++) {
                assertTrue(timestamps.get(i) > timestamps.get(i - 1), "packet " + i + " of " + written[0]);
            }
            assertEquals(List.of(TracingServiceEvent.TRACING_STARTED_FIELD_NUMBER,
                    TracingServiceEvent.ALL_DATA_SOURCES_STARTED_FIELD_NUMBER), events(packets).subList(0, 2));
            assertTrue(events(packets).contains(TracingServiceEvent.TRACING_DISABLED_FIELD_NUMBER));
            assertTrue(packets.getLast().hasTraceStats(), "the file ends with the stats");
        }
    }

    /**
     * The readbacks a file being written holds so far: its whole packets with stats, which end
     * each readback (a packet still being written ends the walk).
     */
    /**
     * The readbacks (their stats packets) in a file the session is writing, or with
     * {@code readbacks} false the producers' packets; a packet cut short by a write in
     * progress ends the count.
     */
    private static long packetsIn(Path file, boolean readbacks) throws IOException {
        Trace.Decoder trace = new Trace.Decoder();
        trace.reset(MemorySegment.ofArray(Files.readAllBytes(file)));
        RepeatedFieldIterator packets = trace.packet(new RepeatedFieldIterator());
        long count = 0;
        while (packets.next()) {
            TracePacket.Decoder packet = packet(packets.field().asBytes());
            if (readbacks ? packet.hasTraceStats()
                    : packet.trustedPacketSequenceId() != TracingSession.SERVICE_SEQUENCE_ID) {
                count++;
            }
        }
        return count;
    }

    @Test
    void theSessionStopsBeforeTheFileReachesMaxFileSizeBytes() throws Exception {
        Path file = dir.resolve("capped.pftrace");
        long max = 64 << 10;
        try (TracingService service = new TracingService();
             FileChannel out = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            DataSource events = service.connectProducer(ProducerOptions.of("app").withSmbSize(1 << 20))
                    .registerDataSource("track_event");
            TracingSession session = service.startSession(
                    oneBuffer().flushPeriodMs(20).writeIntoFile(100, max).build(), out);
            Thread writer = writeUntilStopped(events, session, new long[1]);
            session.completion().get(30, TimeUnit.SECONDS);
            writer.join();
            assertTrue(session.isStopped(), "a full file stops the session, as in Perfetto");
            long size = Files.size(file);
            assertTrue(size > 0 && size < max, "file of " + size + " bytes");
            decoded(Files.readAllBytes(file));
            session.close();
        }
    }

    @Test
    void theServiceFlushesEveryFlushPeriodAndSweepsIdleWriters() throws Exception {
        try (TracingService service = new TracingService()) {
            DataSource events = service.connectProducer(ProducerOptions.of("app")).registerDataSource("track_event");
            TracingSession session = service.startSession(oneBuffer().flushPeriodMs(50).build());
            try (TraceWriter<TracePacket> writer = events.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                writer.newTracePacket().setTimestamp(1);
                writer.finishTracePacket();
                // Nobody calls flush: the service's timer takes the finished packet.
                long[] packets = new long[1];
                Await.until("the periodic flush took the packet", () -> {
                    packets[0] = session.writeTrace(new ByteArrayOutputStream());
                    return packets[0] != 0;
                });
                assertEquals(1, packets[0]);
            }
            session.close();
        }
        try (TracingService service = new TracingService()) {
            DataSource events = service.connectProducer(ProducerOptions.of("app")).registerDataSource("track_event");
            TracingSession session = service.startSession(oneBuffer().build());
            try (TraceWriter<TracePacket> writer = events.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                writer.newTracePacket().setTimestamp(1);
                writer.finishTracePacket();
                // No flush period either: the idle writer's chunk comes back by the service's sweep.
                Await.until("the idle writer's chunk was committed", () -> session.stats().getFirst().chunksWritten() != 0);
                assertEquals(1, session.stats().getFirst().chunksWritten(), "the idle writer's chunk, once");
            }
            session.close();
        }
    }

    @Test
    void aSlowOutputDoesNotStallTheProducersCommits() throws Exception {
        try (TracingService service = new TracingService()) {
            DataSource events = service.connectProducer(ProducerOptions.of("app").withSmbSize(64 << 10))
                    .registerDataSource("track_event");
            TracingSession session = service.startSession(oneBuffer().build());
            try (TraceWriter<TracePacket> writer = events.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                writer.newTracePacket().appendBytes(900, MARKER);
                writer.finishTracePacket();
                session.flush();
                BlockingOutput output = new BlockingOutput();
                Thread reader = Thread.ofPlatform().start(() -> {
                    try {
                        session.writeTrace(output);
                    } catch (IOException e) {
                        throw new RuntimeException(e);
                    }
                });
                assertTrue(output.blocked.await(10, TimeUnit.SECONDS), "the readback reached the packet");
                // The output blocks with the packet in hand; producers still commit into the buffer.
                Thread committer = Thread.ofPlatform().start(() -> {
                    try (TraceWriter<TracePacket> other = events.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                        for (int i = 0; i < 5000; i++) {
                            other.newTracePacket().setTimestamp(i);
                            other.finishTracePacket();
                        }
                    }
                    session.flush();
                });
                boolean committed = committer.join(Duration.ofSeconds(20));
                output.release.countDown();
                reader.join();
                committer.join();
                assertTrue(committed, "a commit waited for the slow output");
            }
            assertTrue(session.stats().getFirst().chunksWritten() > 1);
            session.close();
        }
    }

    @Test
    void theFirstTraceHasTheServicePacketsPerfettoWritesAndTheNextOnlyTheirClocksAndStats() throws Exception {
        try (TracingService service = new TracingService()) {
            DataSource events = service.connectProducer(ProducerOptions.of("app")).registerDataSource("track_event");
            SessionConfig config = oneBuffer().build();
            TracingSession session = service.startSession(config);
            try (TraceWriter<TracePacket> writer = events.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                writer.newTracePacket().setTimestamp(1);
            }
            session.flush();
            ByteArrayOutputStream first = new ByteArrayOutputStream();
            assertEquals(1, session.writeTrace(first));
            List<TracePacket.Decoder> packets = decoded(first.toByteArray());
            for (TracePacket.Decoder packet : packets) {
                if (!packet.hasTrackEvent() && packet.trustedPacketSequenceId() != TracingSession.SERVICE_SEQUENCE_ID) {
                    assertEquals(1, packet.timestamp(), "the producer's packet");
                }
            }
            assertTrue(packets.get(0).hasClockSnapshot() && packets.get(1).hasClockSnapshot(),
                    "the snapshot from the start of the session, then the one of this readback");
            TracePacket.Decoder traceConfig = only(packets, TracePacket.TRACE_CONFIG_FIELD_NUMBER);
            assertArrayEquals(config.traceConfig().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE),
                    traceConfig.field(TracePacket.TRACE_CONFIG_FIELD_NUMBER).asBytes());
            TraceUuid.Decoder uuid = new TraceUuid.Decoder();
            assertTrue(only(packets, TracePacket.TRACE_UUID_FIELD_NUMBER).traceUuid(uuid));
            assertNotEquals(0, uuid.msb() | uuid.lsb());
            SystemInfo.Decoder info = new SystemInfo.Decoder();
            assertTrue(only(packets, TracePacket.SYSTEM_INFO_FIELD_NUMBER).systemInfo(info));
            Utsname.Decoder utsname = new Utsname.Decoder();
            assertTrue(info.utsname(utsname));
            assertEquals("Linux", utsname.sysname());
            assertFalse(utsname.release().isEmpty());
            assertFalse(utsname.machine().isEmpty());
            assertEquals(Os.pageSize(), info.pageSize());
            assertTrue(info.numCpus() >= 1);
            assertEquals(List.of(TracingServiceEvent.TRACING_STARTED_FIELD_NUMBER,
                    TracingServiceEvent.ALL_DATA_SOURCES_STARTED_FIELD_NUMBER,
                    TracingServiceEvent.ALL_DATA_SOURCES_FLUSHED_FIELD_NUMBER,
                    TracingServiceEvent.READ_TRACING_BUFFERS_COMPLETED_FIELD_NUMBER), events(packets));
            for (TracePacket.Decoder packet : packets) {
                if (packet.trustedPacketSequenceId() == TracingSession.SERVICE_SEQUENCE_ID) {
                    assertEquals(Os.uid(), packet.trustedUid());
                }
            }
            assertTrue(packets.getLast().hasTraceStats());

            session.stop();
            ByteArrayOutputStream second = new ByteArrayOutputStream();
            assertEquals(0, session.writeTrace(second));
            List<TracePacket.Decoder> next = decoded(second.toByteArray());
            assertTrue(next.getFirst().hasClockSnapshot());
            assertEquals(0, next.stream().filter(p -> p.hasTraceConfig() || p.hasSystemInfo() || p.hasTraceUuid()).count(),
                    "the config, uuid and system info come once");
            assertEquals(List.of(TracingServiceEvent.TRACING_DISABLED_FIELD_NUMBER,
                    TracingServiceEvent.READ_TRACING_BUFFERS_COMPLETED_FIELD_NUMBER), events(next));
            assertTrue(next.getLast().hasTraceStats());
            session.close();
        }
    }

    @Test
    void aSnapshotIsAWholeTraceWithTheStatsTakenWhenItCloned() throws Exception {
        try (TracingService service = new TracingService()) {
            DataSource events = service.connectProducer(ProducerOptions.of("app")).registerDataSource("track_event");
            TracingSession session = service.startSession(oneBuffer().build());
            try (TraceWriter<TracePacket> writer = events.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                writer.newTracePacket().setTimestamp(1);
            }
            session.flush();
            TraceBufferStats atClone = session.stats().getFirst();
            SlowOutput output = new SlowOutput(() -> {
                // Written between the clone and the end of the snapshot: not in its stats.
                try (TraceWriter<TracePacket> late = events.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                    late.newTracePacket().setTimestamp(2);
                }
                session.flush();
            });
            assertEquals(1, session.writeSnapshot(output));
            List<TracePacket.Decoder> packets = decoded(output.bytes.toByteArray());
            assertEquals(1, packets.stream().filter(TracePacket.Decoder::hasTraceConfig).count());
            assertEquals(1, packets.stream().filter(TracePacket.Decoder::hasSystemInfo).count());
            dev.ffmtrace.perfetto.protos.TraceStats.Decoder stats = new dev.ffmtrace.perfetto.protos.TraceStats.Decoder();
            assertTrue(packets.getLast().traceStats(stats));
            dev.ffmtrace.perfetto.protos.TraceStats.BufferStats.Decoder buffer =
                    new dev.ffmtrace.perfetto.protos.TraceStats.BufferStats.Decoder();
            dev.ffmtrace.protozero.RepeatedFieldIterator buffers =
                    stats.bufferStats(new dev.ffmtrace.protozero.RepeatedFieldIterator());
            assertTrue(buffers.next());
            buffer.reset(buffers.field());
            assertEquals(atClone.chunksWritten(), buffer.chunksWritten());
            assertTrue(session.stats().getFirst().chunksWritten() > atClone.chunksWritten());
            session.close();
        }
    }

    @Test
    void aWriteIntoFileConfigNeedsAnOutputAndNothingIsAllocatedWithout() throws Exception {
        try (TracingService service = new TracingService()) {
            SessionConfig config = oneBuffer().writeIntoFile(0, 0).build();
            assertEquals("the config says write_into_file: start the session with an output",
                    assertThrows(IllegalArgumentException.class, () -> service.startSession(config)).getMessage());
            // The refused start took no buffer: a session now gets the first buffer id.
            TracingSession session = service.startSession(oneBuffer().build());
            assertEquals(1, session.bufferId(0));
            session.close();
        }
    }

    private static TracePacket.Decoder packet(byte[] packet) {
        TracePacket.Decoder decoder = new TracePacket.Decoder();
        decoder.reset(MemorySegment.ofArray(packet));
        assertFalse(decoder.hasError());
        return decoder;
    }

    private static List<TracePacket.Decoder> decoded(byte[] trace) {
        List<TracePacket.Decoder> out = new ArrayList<>();
        for (byte[] raw : ProducerRemoteWriterTest.rawPackets(trace)) {
            out.add(packet(raw));
        }
        return out;
    }

    private static TracePacket.Decoder only(List<TracePacket.Decoder> packets, int field) {
        List<TracePacket.Decoder> with = packets.stream().filter(packet -> packet.has(field)).toList();
        assertEquals(1, with.size(), "packets with field " + field);
        assertEquals(TracingSession.SERVICE_SEQUENCE_ID, with.getFirst().trustedPacketSequenceId());
        return with.getFirst();
    }

    /** The {@code service_event} fields of the trace's packets, in order. */
    private static List<Integer> events(List<TracePacket.Decoder> packets) {
        List<Integer> out = new ArrayList<>();
        TracingServiceEvent.Decoder event = new TracingServiceEvent.Decoder();
        int[] fields = {TracingServiceEvent.TRACING_STARTED_FIELD_NUMBER,
                TracingServiceEvent.ALL_DATA_SOURCES_STARTED_FIELD_NUMBER,
                TracingServiceEvent.ALL_DATA_SOURCES_FLUSHED_FIELD_NUMBER,
                TracingServiceEvent.READ_TRACING_BUFFERS_COMPLETED_FIELD_NUMBER,
                TracingServiceEvent.TRACING_DISABLED_FIELD_NUMBER};
        for (TracePacket.Decoder packet : packets) {
            if (packet.serviceEvent(event)) {
                assertTrue(packet.timestamp() > 0, "a service event has its time");
                for (int field : fields) {
                    if (event.has(field)) {
                        out.add(field);
                    }
                }
            }
        }
        return out;
    }

    /** An output that blocks on the write that carries {@link #MARKER} until released. */
    private static final class BlockingOutput implements WritableByteChannel {
        final CountDownLatch blocked = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);

        @Override
        public int write(ByteBuffer src) {
            byte[] bytes = new byte[src.remaining()];
            src.get(bytes);
            if (indexOf(bytes, MARKER) >= 0) {
                blocked.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return bytes.length;
        }

        private static int indexOf(byte[] haystack, byte[] needle) {
            for (int i = 0; i + needle.length <= haystack.length; i++) {
                if (Arrays.equals(haystack, i, i + needle.length, needle, 0, needle.length)) {
                    return i;
                }
            }
            return -1;
        }

        @Override
        public boolean isOpen() {
            return true;
        }

        @Override
        public void close() {
        }
    }

    /** An output that runs {@code onFirstWrite} once, before it keeps the first bytes. */
    private static final class SlowOutput implements WritableByteChannel {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        private Runnable onFirstWrite;

        SlowOutput(Runnable onFirstWrite) {
            this.onFirstWrite = onFirstWrite;
        }

        @Override
        public int write(ByteBuffer src) {
            if (onFirstWrite != null) {
                Runnable run = onFirstWrite;
                onFirstWrite = null;
                run.run();
            }
            int n = src.remaining();
            byte[] copy = new byte[n];
            src.get(copy);
            bytes.writeBytes(copy);
            return n;
        }

        @Override
        public boolean isOpen() {
            return true;
        }

        @Override
        public void close() {
        }
    }
}
