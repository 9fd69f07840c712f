package dev.ffmtrace.tracing.service;

import static dev.ffmtrace.perfetto.protos.GetAsyncCommandResponse.CLEAR_INCREMENTAL_STATE_FIELD_NUMBER;
import static dev.ffmtrace.perfetto.protos.GetAsyncCommandResponse.FLUSH_FIELD_NUMBER;
import static dev.ffmtrace.perfetto.protos.GetAsyncCommandResponse.SETUP_DATA_SOURCE_FIELD_NUMBER;
import static dev.ffmtrace.perfetto.protos.GetAsyncCommandResponse.SETUP_TRACING_FIELD_NUMBER;
import static dev.ffmtrace.perfetto.protos.GetAsyncCommandResponse.START_DATA_SOURCE_FIELD_NUMBER;
import static dev.ffmtrace.perfetto.protos.GetAsyncCommandResponse.STOP_DATA_SOURCE_FIELD_NUMBER;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.ipc.BoundService;
import dev.ffmtrace.ipc.IpcClient;
import dev.ffmtrace.memory.MemoryFile;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.memory.testing.OpenDescriptors;
import dev.ffmtrace.perfetto.protos.DataSourceConfig;
import dev.ffmtrace.perfetto.protos.InitializeConnectionRequest;
import dev.ffmtrace.perfetto.protos.InitializeConnectionResponse;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.ProtoDecoder;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/** The producer port over a real socket, with a producer driven message by message. */
class ProducerPortTest {
    /** A config field the service does not know, which must reach the producer as the consumer wrote it. */
    private static final int PRODUCER_ONLY_FIELD = 113;
    private static final byte[] PRODUCER_ONLY_BYTES = {0x0a, 0x03, 'c', 'a', 't'};

    private static UnixAddress address() {
        return UnixAddress.abstractName("ffmtrace-port-test-" + System.nanoTime());
    }

    private static SessionConfig config(String dataSource, int flushTimeoutMs) throws InvalidConfigException {
        HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
        config.get().addBuffers().setSizeKb(1024);
        DataSourceConfig source = config.get().addDataSources().setConfig();
        source.setName(dataSource);
        source.appendBytes(PRODUCER_ONLY_FIELD, PRODUCER_ONLY_BYTES);
        if (flushTimeoutMs > 0) {
            config.get().setFlushTimeoutMs(flushTimeoutMs);
        }
        return SessionConfig.parse(config.toSegment());
    }

    private static void write(TraceWriter<TracePacket> writer, String name) {
        TracePacket packet = writer.newTracePacket();
        packet.setTrackEvent().setName(name);
        writer.finishTracePacket();
    }

    private static List<String> names(TracingSession session) throws IOException {
        ByteArrayOutputStream trace = new ByteArrayOutputStream();
        session.writeTrace(trace);
        List<String> names = new ArrayList<>();
        for (TracingServiceTest.Packet packet : TracingServiceTest.decode(trace.toByteArray())) {
            if (packet.name() != null) {
                names.add(packet.name());
            }
        }
        return names;
    }

    private static long smbMappings() {
        try {
            return Files.readAllLines(Path.of("/proc/self/maps")).stream().filter(l -> l.contains("ffmtrace-smb")).count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Test
    void smbSizesFollowPerfettosRules() {
        assertArrayEquals(new long[] {256 * 1024, 4096}, RemoteProducer.validShmSizes(0, 0), "no hints: defaults");
        assertArrayEquals(new long[] {2 << 20, 32768}, RemoteProducer.validShmSizes(2 << 20, 32768));
        assertArrayEquals(new long[] {32 << 20, 4096}, RemoteProducer.validShmSizes(64 << 20, 4096), "size capped");
        assertArrayEquals(new long[] {1 << 20, 32768}, RemoteProducer.validShmSizes(1 << 20, 65536), "page capped at 32 KiB");
        assertArrayEquals(new long[] {256 * 1024, 4096}, RemoteProducer.validShmSizes(1 << 20, 12288),
                "3 pages of 4 KiB is not a power of two");
        assertArrayEquals(new long[] {256 * 1024, 4096}, RemoteProducer.validShmSizes(5000, 4096), "not whole pages");
        assertArrayEquals(new long[] {256 * 1024, 4096}, RemoteProducer.validShmSizes(8192, 16384), "smaller than a page");
        assertArrayEquals(new long[] {256 * 1024, 4096}, RemoteProducer.validShmSizes(1 << 20, 1000), "page not 4 KiB aligned");
    }

    @Test
    void aProducerIsStartedFlushedAndStoppedAndItsPacketsReachTheTrace() throws Exception {
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address());
             PortProducer producer = PortProducer.connect(port.address(), "app", 1 << 20, 4096)) {
            InitializeConnectionResponse.Decoder init = new InitializeConnectionResponse.Decoder();
            init.reset(MemorySegment.ofArray(producer.initializeReply));
            assertFalse(init.usingShmemProvidedByProducer());
            assertTrue(init.directSmbPatchingSupported());
            producer.registerDataSource("track_event", true, true);

            TracingSession session = service.startSession(config("track_event", 0));
            PortProducer.Command setup = producer.next(SETUP_TRACING_FIELD_NUMBER);
            assertTrue(setup.fd() >= 0, "the service's SMB comes with SetupTracing");
            assertEquals(4, producer.pageSizeKb);
            assertEquals(1 << 20, producer.smb.size());
            PortProducer.Command setupSource = producer.next(SETUP_DATA_SOURCE_FIELD_NUMBER);
            PortProducer.Command start = producer.next(START_DATA_SOURCE_FIELD_NUMBER);
            assertEquals(setupSource.instanceId(), start.instanceId());
            assertArrayEquals(setupSource.config(), start.config());
            DataSourceConfig.Decoder config = new DataSourceConfig.Decoder();
            config.reset(MemorySegment.ofArray(start.config()));
            assertEquals("track_event", config.name());
            assertEquals(session.id(), config.tracingSessionId());
            assertEquals(session.bufferId(0), config.targetBuffer(), "the service's id of the session's buffer");
            ProtoDecoder raw = new ProtoDecoder().reset(MemorySegment.ofArray(start.config()));
            assertTrue(raw.nextWithId(PRODUCER_ONLY_FIELD), "fields the service does not know reach the producer");
            assertArrayEquals(PRODUCER_ONLY_BYTES, raw.field().asBytes());

            // Enough packets for several 4 KiB chunks, and one that spans chunks (patched sizes).
            TraceWriter<TracePacket> writer = producer.newWriter(config.targetBuffer());
            List<String> written = new ArrayList<>();
            for (int i = 0; i < 300; i++) {
                String name = i == 150 ? "big-" + "x".repeat(10_000) : "event-" + i;
                write(writer, name);
                written.add(name);
            }
            assertTrue(session.flush(Duration.ofSeconds(10)));
            PortProducer.Command flush = producer.next(FLUSH_FIELD_NUMBER);
            assertEquals(List.of(start.instanceId()), flush.dataSourceIds());

            session.clearIncrementalState();
            assertEquals(List.of(start.instanceId()), producer.next(CLEAR_INCREMENTAL_STATE_FIELD_NUMBER).dataSourceIds());

            writer.close();
            AtomicBoolean notified = new AtomicBoolean();
            // What the stop saw when it ended: it must end only after the producer said it stopped.
            CompletableFuture<Boolean> stopped = CompletableFuture.runAsync(session::stop).thenApply(v -> notified.get());
            assertEquals(FLUSH_FIELD_NUMBER, producer.next().kind(), "a stop first flushes");
            PortProducer.Command stop = producer.next(STOP_DATA_SOURCE_FIELD_NUMBER);
            assertEquals(start.instanceId(), stop.instanceId());
            notified.set(true);
            producer.notifyStopped(stop.instanceId());
            assertTrue(stopped.get(10, TimeUnit.SECONDS), "the session waits for a data source that will say it stopped");

            assertEquals(written, names(session), "every packet, in order, the fragmented one whole");
            assertEquals(0, port.violations());
            session.close();
        }
    }

    /**
     * A session writing into a file every 100 ms, with a data source of a producer in
     * another process that never acknowledges a flush, and one of a producer here.
     */
    private static final class SilentProducerSession implements AutoCloseable {
        final ByteArrayOutputStream file = new ByteArrayOutputStream();
        final TracingService service = new TracingService();
        final ProducerPort port = ProducerPort.listen(service, address());
        final PortProducer silent = PortProducer.connect(port.address(), "silent", 0, 0);
        final DataSource local;
        final TracingSession session;

        SilentProducerSession(int flushPeriodMs, int flushTimeoutMs) throws Exception {
            HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
            config.get().addBuffers().setSizeKb(1024);
            config.get().addDataSources().setConfig().setName("silent_source");
            config.get().addDataSources().setConfig().setName("local_source");
            if (flushPeriodMs > 0) {
                config.get().setFlushPeriodMs(flushPeriodMs);
            }
            config.get().setFlushTimeoutMs(flushTimeoutMs);
            config.get().setWriteIntoFile(true);
            config.get().setFileWritePeriodMs(100);
            silent.onFlush = id -> { };
            silent.registerDataSource("silent_source", false, false);
            Await.until("the silent producer registered",
                    () -> service.registeredDataSources().values().stream().anyMatch(s -> s.contains("silent_source")));
            local = service.connectProducer(ProducerOptions.of("local")).registerDataSource("local_source");
            session = service.startSession(SessionConfig.parse(config.toSegment()),
                    Channels.newChannel(file));
            silent.next(SETUP_TRACING_FIELD_NUMBER);
            silent.next(SETUP_DATA_SOURCE_FIELD_NUMBER);
            silent.next(START_DATA_SOURCE_FIELD_NUMBER);
        }

        /** Writes and commits a packet named {@code name} from the producer here. */
        void writeLocally(String name) {
            try (TraceWriter<TracePacket> writer = local.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                write(writer, name);
                writer.flush();
            }
        }

        /**
         * Waits at most {@code seconds} for the packet named {@code name} to reach the file:
         * a bound the test means (sooner than the flush it proves does not hold the writes
         * up could time out), not only a hang detector as {@link Await}'s.
         */
        void awaitInFile(String name, long seconds, String failure) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            while (!new String(file.toByteArray(), StandardCharsets.ISO_8859_1).contains(name)) {
                assertTrue(System.nanoTime() < deadline, failure);
                Thread.sleep(10);
            }
        }

        @Override
        public void close() {
            // A stop's own flush is answered at once.
            silent.onFlush = null;
            session.close();
            silent.close();
            port.close();
            service.close();
        }
    }

    @Test
    void aProducerThatNeverAcknowledgesAFlushDoesNotHoldUpTheFileWrites() throws Exception {
        try (SilentProducerSession fixture = new SilentProducerSession(100, 30_000)) {
            fixture.silent.next(FLUSH_FIELD_NUMBER);
            // The first periodic flush now waits up to 30 s for the silent producer; the
            // file writes every 100 ms go on meanwhile.
            fixture.writeLocally("written while a flush waits");
            fixture.awaitInFile("written while a flush waits", 20,
                    "the packet did not reach the file while a flush waited");
        }
    }

    @Test
    void theFileWritesGoOnWhileAStopWaitsForAProducer() throws Exception {
        try (SilentProducerSession fixture = new SilentProducerSession(0, (int) Guardrails.MAX_FLUSH_TIMEOUT_MS)) {
            CompletableFuture<Void> stopped = CompletableFuture.runAsync(fixture.session::stop);
            long flush = fixture.silent.next(FLUSH_FIELD_NUMBER).flushRequestId();
            // The stop now waits for the silent producer (up to a minute); a writer still writes.
            fixture.writeLocally("written while the stop waits");
            fixture.awaitInFile("written while the stop waits", 30,
                    "the packet did not reach the file while the stop waited");
            assertFalse(stopped.isDone(), "the stop still waits for the silent producer");
            fixture.silent.acknowledgeFlush(flush);
            stopped.get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void aProducerThatStopsReadingItsCommandsIsDroppedAndTheServiceGoesOn() throws Exception {
        CountDownLatch reading = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address());
             PortProducer producer = PortProducer.connect(port.address(), "deaf", 0, 0);
             AutoCloseable _ = release::countDown) {
            // Its flush handler runs on its only reading thread and never returns: from the
            // first flush on, the producer reads nothing the service sends.
            producer.onFlush = id -> {
                reading.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            };
            producer.registerDataSource("deaf_source", false, true);
            TracingSession session = service.startSession(config("deaf_source", (int) Guardrails.MAX_FLUSH_TIMEOUT_MS));
            producer.awaitStarted();
            assertFalse(session.flush(Duration.ZERO));
            assertTrue(reading.await(20, TimeUnit.SECONDS));
            // Commands pile up in its socket, then in its queue; the one that overflows the
            // queue drops the producer, and every call returns.
            CompletableFuture.runAsync(() -> {
                while (port.producerCount() > 0) {
                    session.clearIncrementalState();
                }
            }).get(30, TimeUnit.SECONDS);
            assertTrue(port.violations() > 0, "the overflow is counted");
            // The service answers everyone else.
            service.connectProducer(ProducerOptions.of("local")).registerDataSource("other_source");
            TracingSession other = service.startSession(config("other_source", 0));
            other.stop();
            other.close();
            session.close();
        }
    }

    @Test
    void aFlushWaitsForTheAcknowledgementAtMostTheFlushTimeout() throws Exception {
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address());
             PortProducer producer = PortProducer.connect(port.address(), "slow", 0, 0)) {
            producer.onFlush = id -> { };
            producer.registerDataSource("slow_source", false, false);
            TracingSession session = service.startSession(config("slow_source", 30_000));
            producer.next(SETUP_TRACING_FIELD_NUMBER);
            producer.next(SETUP_DATA_SOURCE_FIELD_NUMBER);
            producer.next(START_DATA_SOURCE_FIELD_NUMBER);

            AtomicBoolean acknowledged = new AtomicBoolean();
            CompletableFuture<Boolean> flushed = CompletableFuture.runAsync(session::flush)
                    .thenApply(v -> acknowledged.get());
            long requestId = producer.next(FLUSH_FIELD_NUMBER).flushRequestId();
            acknowledged.set(true);
            producer.acknowledgeFlush(requestId);
            assertTrue(flushed.get(10, TimeUnit.SECONDS), "the flush waits for the producer's CommitData");
            producer.onFlush = null;
            session.close();
        }
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address());
             PortProducer producer = PortProducer.connect(port.address(), "silent", 0, 0)) {
            producer.onFlush = id -> { };
            producer.registerDataSource("silent_source", false, false);
            TracingSession session = service.startSession(config("silent_source", 300));
            long started = System.nanoTime();
            session.flush();
            assertTrue(System.nanoTime() - started >= TimeUnit.MILLISECONDS.toNanos(300),
                    "a producer that never answers costs the flush its timeout");
            session.close();
        }
    }

    @Test
    void scrapingTakesWhatAWriterHoldsUnlessTheProducerOptsOut() throws Exception {
        for (int mode : new int[] {0, InitializeConnectionRequest.ProducerSMBScrapingMode.SMB_SCRAPING_DISABLED.number()}) {
            try (TracingService service = new TracingService();
                 ProducerPort port = ProducerPort.listen(service, address());
                 PortProducer producer = PortProducer.connect(port.address(), "scraped", 0, 0, -1, mode)) {
                producer.reclaimOnFlush = false;
                producer.registerDataSource("track_event", false, false);
                TracingSession session = service.startSession(config("track_event", 0));
                int target = producer.awaitStarted();
                TraceWriter<TracePacket> writer = producer.newWriter(target);
                for (int i = 0; i < 5; i++) {
                    write(writer, "held-" + i);
                }
                session.flush();
                List<String> expected = mode == 0 ? List.of("held-0", "held-1", "held-2", "held-3") : List.of();
                assertEquals(expected, names(session),
                        "a scrape shows the finished packets but the chunk's last, which may still change");
                writer.close();
                session.close();
            }
        }
    }

    @Test
    void aProducerThatGoesAwayMidChunkLeavesWhatItFinishedAndACountedLoss() throws Exception {
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address())) {
            TracingSession session = service.startSession(config("track_event", 0));
            PortProducer producer = PortProducer.connect(port.address(), "killed", 0, 0);
            producer.registerDataSource("track_event", false, false);
            int target = producer.awaitStarted();
            TraceWriter<TracePacket> writer = producer.newWriter(target);
            for (int i = 0; i < 5; i++) {
                write(writer, "before-" + i);
            }
            producer.call("Sync", new byte[0]);
            // Gone without committing: its chunk is still being written.
            producer.client.close();
            Await.until("the producer is closed", () -> port.producerCount() == 0);
            assertEquals(List.of("before-0", "before-1", "before-2", "before-3"), names(session),
                    "the scrape at its close takes the finished packets but the last");
            assertEquals(1, session.chunksDiscarded(), "the chunk it was writing is counted as discarded");
            producer.smb.close();
            session.close();
        }
    }

    @Test
    void aSealedSmbFromTheProducerIsUsedAndAnyOtherFileRefused() throws Exception {
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address());
             SharedMemory own = SharedMemory.create("ffmtrace-smb-own", 128 * 1024)) {
            int fd = MemoryFile.duplicate(own.fd());
            try (PortProducer producer = PortProducer.connect(port.address(), "own", 128 * 1024, 4096, fd, 0)) {
                InitializeConnectionResponse.Decoder init = new InitializeConnectionResponse.Decoder();
                init.reset(MemorySegment.ofArray(producer.initializeReply));
                assertTrue(init.usingShmemProvidedByProducer());
                assertEquals(-1, producer.next(SETUP_TRACING_FIELD_NUMBER).fd(), "no SMB sent back");
            } finally {
                Os.closeFd(fd);
            }
            Path plain = Files.createTempFile("ffmtrace-not-sealed", ".bin");
            Files.write(plain, new byte[128 * 1024]);
            int unsealed = Os.openReadOnly(plain);
            try (PortProducer producer = PortProducer.connect(port.address(), "unsealed", 128 * 1024, 4096, unsealed, 0)) {
                InitializeConnectionResponse.Decoder init = new InitializeConnectionResponse.Decoder();
                init.reset(MemorySegment.ofArray(producer.initializeReply));
                assertFalse(init.usingShmemProvidedByProducer(), "a file that is not sealed is refused");
                assertTrue(producer.next(SETUP_TRACING_FIELD_NUMBER).fd() >= 0, "the service's SMB instead");
            } finally {
                Os.closeFd(unsealed);
                Files.delete(plain);
            }
        }
    }

    @Test
    void methodsBeforeInitializeConnectionAndASecondOneFail() throws Exception {
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address());
             IpcClient client = IpcClient.connect(port.address())) {
            BoundService bound = client.bindService(ProducerPort.SERVICE_NAME).get(5, TimeUnit.SECONDS);
            assertEquals(List.of("InitializeConnection", "RegisterDataSource", "UnregisterDataSource", "CommitData",
                    "GetAsyncCommand", "RegisterTraceWriter", "UnregisterTraceWriter", "NotifyDataSourceStarted",
                    "NotifyDataSourceStopped", "ActivateTriggers", "Sync", "UpdateDataSource"),
                    bound.methodIds().entrySet().stream().sorted(java.util.Map.Entry.comparingByValue())
                            .map(java.util.Map.Entry::getKey).toList(), "Perfetto's method ids");
            assertFalse(client.invoke(bound, "Sync", new byte[0]).get(5, TimeUnit.SECONDS).success());
            HeapBuffered<InitializeConnectionRequest> init = new HeapBuffered<>(InitializeConnectionRequest.FACTORY);
            init.get().setProducerName("twice");
            assertTrue(client.invoke(bound, "InitializeConnection", init.toByteArray()).get(5, TimeUnit.SECONDS).success());
            assertFalse(client.invoke(bound, "InitializeConnection", init.toByteArray()).get(5, TimeUnit.SECONDS).success());
            assertTrue(client.invoke(bound, "Sync", new byte[0]).get(5, TimeUnit.SECONDS).success());
            assertEquals(1, port.producerCount());
        }
    }

    @Test
    void aHundredProducersComeAndGoDuringASessionAndLeaveNothingBehind() throws Exception {
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address())) {
            TracingSession session = service.startSession(config("track_event", 0));
            OpenDescriptors fds = OpenDescriptors.snapshot();
            long mappings = smbMappings();
            for (int i = 0; i < 100; i++) {
                try (PortProducer producer = PortProducer.connect(port.address(), "short-lived-" + i, 64 * 1024, 4096)) {
                    producer.registerDataSource("track_event", false, false);
                    int target = producer.awaitStarted();
                    try (TraceWriter<TracePacket> writer = producer.newWriter(target)) {
                        write(writer, "from-" + i);
                    }
                    producer.call("Sync", new byte[0]);
                }
                Await.until("producer " + i + " is gone", () -> port.producerCount() == 0);
            }
            List<String> names = names(session);
            assertEquals(100, names.size());
            assertEquals(100, new HashSet<>(names).size());
            assertEquals(List.of(), fds.openedSince(), "no descriptor left behind");
            assertEquals(mappings, smbMappings(), "no SMB left mapped");
            session.close();
        }
    }

    @Test
    void garbageRequestsAreRefusedAndCountedWhileAnotherProducerCarriesOn() throws Exception {
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address());
             PortProducer good = PortProducer.connect(port.address(), "good", 0, 0)) {
            good.registerDataSource("track_event", false, false);
            TracingSession session = service.startSession(config("track_event", 1000));
            int target = good.awaitStarted();
            OpenDescriptors fds = OpenDescriptors.snapshot();
            Random random = new Random(17);
            List<String> methods = List.of("RegisterDataSource", "UnregisterDataSource", "CommitData",
                    "RegisterTraceWriter", "UnregisterTraceWriter", "NotifyDataSourceStarted",
                    "NotifyDataSourceStopped", "ActivateTriggers", "Sync", "UpdateDataSource");
            for (int round = 0; round < 20; round++) {
                try (PortProducer hostile = PortProducer.connect(port.address(), "hostile-" + round, 0, 0)) {
                    for (int i = 0; i < 50; i++) {
                        byte[] garbage = new byte[random.nextInt(64)];
                        random.nextBytes(garbage);
                        hostile.client.invoke(hostile.port, methods.get(random.nextInt(methods.size())), garbage);
                    }
                    // A commit of chunks that are not the producer's to commit, and of shared memory emulation.
                    HeapBuffered<dev.ffmtrace.perfetto.protos.CommitDataRequest> commit =
                            new HeapBuffered<>(dev.ffmtrace.perfetto.protos.CommitDataRequest.FACTORY);
                    var move = commit.get().addChunksToMove();
                    move.setPage(random.nextInt(1 << 20));
                    move.setChunk(3);
                    move.setTargetBuffer(target);
                    var emulated = commit.get().addChunksToMove();
                    emulated.setTargetBuffer(target);
                    emulated.setData(new byte[] {1, 2, 3});
                    var patch = commit.get().addChunksToPatch();
                    patch.setTargetBuffer(target);
                    patch.addPatches().setData(new byte[] {1, 2, 3, 4, 5});
                    hostile.call("CommitData", commit.toByteArray());
                    assertTrue(hostile.call("Sync", new byte[0]).success(), "the port still serves the hostile producer");
                }
                Await.until("the hostile producer is gone", () -> port.producerCount() == 1);
            }
            assertTrue(port.violations() >= 20 * 3, "refused requests are counted: " + port.violations());
            try (TraceWriter<TracePacket> writer = good.newWriter(target)) {
                write(writer, "still-here");
            }
            good.call("Sync", new byte[0]);
            assertEquals(List.of("still-here"), names(session));
            assertEquals(List.of(), fds.openedSince(), "no descriptor left behind");
            session.close();
        }
    }

    @Test
    void aProducerThatStopsReadingItsCommandsIsDisconnected() throws Exception {
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address());
             IpcClient client = IpcClient.connect(port.address())) {
            BoundService bound = client.bindService(ProducerPort.SERVICE_NAME).get(5, TimeUnit.SECONDS);
            HeapBuffered<InitializeConnectionRequest> init = new HeapBuffered<>(InitializeConnectionRequest.FACTORY);
            init.get().setProducerName("deaf");
            assertTrue(client.invoke(bound, "InitializeConnection", init.toByteArray()).get(5, TimeUnit.SECONDS).success());
            // Never asks for its commands: they pile up in the port until it gives up on the producer.
            var descriptor = new HeapBuffered<>(dev.ffmtrace.perfetto.protos.RegisterDataSourceRequest.FACTORY);
            descriptor.get().setDataSourceDescriptor().setName("deaf_source");
            assertTrue(client.invoke(bound, "RegisterDataSource", descriptor.toByteArray()).get(5, TimeUnit.SECONDS).success());
            TracingSession session = service.startSession(config("deaf_source", 1));
            for (int i = 0; i < RemoteProducer.MAX_QUEUED_COMMANDS && client.isConnected(); i++) {
                session.flush();
            }
            Await.until("the port hangs up on the producer", () -> !client.isConnected());
            Await.until("the producer is closed", () -> port.producerCount() == 0);
            assertTrue(port.violations() >= 1);
            session.close();
        }
    }

    @Test
    void instanceIdsAreUniqueAcrossSessions() throws Exception {
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address());
             PortProducer producer = PortProducer.connect(port.address(), "again", 0, 0)) {
            producer.registerDataSource("track_event", false, false);
            Set<Long> ids = new HashSet<>();
            producer.next(SETUP_TRACING_FIELD_NUMBER);
            for (int i = 0; i < 3; i++) {
                TracingSession session = service.startSession(config("track_event", 0));
                producer.next(SETUP_DATA_SOURCE_FIELD_NUMBER);
                long id = producer.next(START_DATA_SOURCE_FIELD_NUMBER).instanceId();
                assertTrue(ids.add(id), "instance " + id + " is new");
                session.close();
                assertEquals(FLUSH_FIELD_NUMBER, producer.next().kind());
                assertEquals(id, producer.next(STOP_DATA_SOURCE_FIELD_NUMBER).instanceId());
            }
            assertEquals(3, ids.size());
            assertTrue(Arrays.stream(ids.toArray(new Long[0])).allMatch(id -> id > 0));
        }
    }
}
