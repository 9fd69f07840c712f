package dev.ffmtrace.tracing.producer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.MemoryFile;
import dev.ffmtrace.memory.Seals;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.memory.testing.OpenDescriptors;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.tracing.producer.internal.DataSourceHandler;
import dev.ffmtrace.tracing.producer.internal.DataSourceInstance;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import perfetto.protos.DataSourceConfigOuterClass.DataSourceConfig;
import perfetto.protos.ProducerPort.GetAsyncCommandResponse;
import perfetto.protos.ProducerPort.InitializeConnectionRequest;
import perfetto.protos.ProducerPort.InitializeConnectionResponse;
import perfetto.protos.ProducerPort.NotifyDataSourceStartedRequest;
import perfetto.protos.ProducerPort.NotifyDataSourceStoppedRequest;
import perfetto.protos.ProducerPort.RegisterDataSourceRequest;
import perfetto.protos.ProducerPort.RegisterTraceWriterRequest;
import perfetto.protos.ProducerPort.UnregisterTraceWriterRequest;
import perfetto.protos.TracePacketOuterClass;

class ProducerConnectionTest {
    private static final String SOURCE = "test.source";
    private static final int SMB_SIZE = 64 * 1024;
    private static final ProducerConnection.RetryDelays FAST_RETRIES = new ProducerConnection.RetryDelays(
            Duration.ofMillis(20), Duration.ofMillis(20), Duration.ofMillis(100), Duration.ofMillis(100));

    /** A data source that records its calls and can hold a stop's {@code done}. */
    static final class Recorder implements DataSourceHandler {
        final LinkedBlockingQueue<String> events = new LinkedBlockingQueue<>();
        final LinkedBlockingQueue<DataSourceInstance> started = new LinkedBlockingQueue<>();
        volatile boolean deferStop;
        volatile Runnable stopDone;

        @Override
        public void onSetup(DataSourceInstance instance) {
            events.add("setup " + instance.id());
        }

        @Override
        public void onStart(DataSourceInstance instance) {
            events.add("start " + instance.id());
            started.add(instance);
        }

        @Override
        public void onStop(DataSourceInstance instance, Runnable done) {
            if (deferStop) {
                stopDone = done;
            }
            events.add("stop " + instance.id());
            if (!deferStop) {
                done.run();
            }
        }

        @Override
        public void onFlush(DataSourceInstance instance) {
            events.add("flush " + instance.id());
        }

        @Override
        public void onClearIncrementalState(DataSourceInstance instance) {
            events.add("clear " + instance.id());
        }

        DataSourceInstance awaitStart() throws InterruptedException {
            DataSourceInstance instance = started.poll(10, TimeUnit.SECONDS);
            if (instance == null) {
                throw new AssertionError("no instance started; events " + events);
            }
            return instance;
        }

        void await(String event) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (true) {
                String next = events.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                if (next == null) {
                    throw new AssertionError("no " + event);
                }
                if (next.equals(event)) {
                    return;
                }
            }
        }
    }

    private static ProducerConnection.Options options(ScriptedService service) {
        return ProducerConnection.Options.named("test-producer").withSocket(service.address).withRetryDelays(FAST_RETRIES);
    }

    /** Connects, registers {@link #SOURCE}, sets up tracing and starts instance {@code id} into buffer 7. */
    private static DataSourceInstance start(ScriptedService service, ProducerConnection producer, Recorder recorder,
                                            long id) throws InterruptedException {
        producer.registerDataSource(DataSourceDescriptor.named(SOURCE), recorder);
        service.next("RegisterDataSource");
        service.setupTracing(SMB_SIZE, 4);
        service.setupAndStart(id, ScriptedService.config(SOURCE, 7));
        return recorder.awaitStart();
    }

    private static void writeEvents(TraceWriter<TracePacket> writer, int from, int count) {
        for (int i = from; i < from + count; i++) {
            TracePacket packet = writer.newTracePacket();
            packet.setTimestamp(i);
            packet.setTrackEvent().setName("event " + i);
            writer.finishTracePacket();
        }
    }

    private static void assertEvents(List<byte[]> packets, int from, int count) throws IOException {
        assertEquals(count, packets.size());
        for (int i = 0; i < count; i++) {
            TracePacketOuterClass.TracePacket packet = TracePacketOuterClass.TracePacket.parseFrom(packets.get(i));
            assertEquals(from + i, packet.getTimestamp());
            assertEquals("event " + (from + i), packet.getTrackEvent().getName());
        }
    }

    @Test
    void joinsTheServiceAsTracedExpectsAndCommitsWhatItWrites() throws Exception {
        Recorder recorder = new Recorder();
        try (ScriptedService service = new ScriptedService();
             ProducerConnection producer = ProducerConnection.connect(options(service))) {
            producer.registerDataSource(new DataSourceDescriptor(SOURCE, true, true, true, false), recorder);
            InitializeConnectionRequest init = InitializeConnectionRequest.parseFrom(
                    service.next("InitializeConnection").args());
            assertEquals("test-producer", init.getProducerName());
            assertEquals(InitializeConnectionRequest.ProducerSMBScrapingMode.SMB_SCRAPING_ENABLED, init.getSmbScrapingMode());
            assertEquals("ffmtrace", init.getSdkVersion());
            assertFalse(init.getProducerProvidedShmem());
            assertFalse(init.hasSharedMemorySizeHintBytes());
            service.next("GetAsyncCommand");
            RegisterDataSourceRequest register = RegisterDataSourceRequest.parseFrom(service.next("RegisterDataSource").args());
            assertEquals(SOURCE, register.getDataSourceDescriptor().getName());
            assertTrue(register.getDataSourceDescriptor().getWillNotifyOnStart());
            assertTrue(register.getDataSourceDescriptor().getWillNotifyOnStop());
            assertTrue(register.getDataSourceDescriptor().getHandlesIncrementalStateClear());
            assertFalse(register.getDataSourceDescriptor().hasNoFlush());
            assertTrue(producer.awaitConnected(Duration.ofSeconds(10)));

            service.setupTracing(SMB_SIZE, 4);
            DataSourceConfig config = DataSourceConfig.newBuilder().setName(SOURCE).setTargetBuffer(7)
                    .setTraceDurationMs(1234).build();
            service.setupAndStart(5, config);
            DataSourceInstance instance = recorder.awaitStart();
            assertEquals(5, instance.id());
            assertEquals(SOURCE, instance.name());
            assertEquals(7, instance.targetBuffer());
            assertArrayEquals(config.toByteArray(), instance.config());
            assertTrue(instance.isRunning());
            assertEquals(5, NotifyDataSourceStartedRequest.parseFrom(service.next("NotifyDataSourceStarted").args())
                    .getDataSourceId());

            TraceWriter<TracePacket> writer = instance.newTraceWriter(BufferExhaustedPolicy.STALL);
            RegisterTraceWriterRequest registered = RegisterTraceWriterRequest.parseFrom(
                    service.next("RegisterTraceWriter").args());
            assertEquals(writer.writerId(), registered.getTraceWriterId());
            assertEquals(7, registered.getTargetBuffer());
            writeEvents(writer, 0, 300);
            service.flush(42, 5);
            service.awaitCommitLog("flush 42");
            assertEvents(service.packetsOf(writer.writerId()), 0, 300);
            // The ack comes after every chunk the flush committed.
            List<String> log = List.copyOf(service.commitLog);
            assertEquals(log.size() - 1, log.indexOf("flush 42"), log.toString());
            assertTrue(log.stream().filter(entry -> entry.startsWith("move ")).count() >= 2, log.toString());
            service.chunksOf(writer.writerId()).forEach(chunk -> assertEquals(7, chunk.targetBuffer()));
            assertEquals(List.of("setup 5", "start 5", "flush 5"), List.copyOf(recorder.events));

            assertTrue(producer.sync().get(10, TimeUnit.SECONDS));
            writer.close();
            assertEquals(writer.writerId(), UnregisterTraceWriterRequest.parseFrom(
                    service.next("UnregisterTraceWriter").args()).getTraceWriterId());
            assertEquals(0, producer.stats().commandsRejected());
        }
    }

    /**
     * A data source whose start, flush and stop each hand the instance to a thread of the
     * application and wait for it: that thread makes and closes a writer, which takes the
     * connection's state lock. Told under that lock, the handler would wait forever.
     */
    static final class HandsOffToAThread implements DataSourceHandler {
        final LinkedBlockingQueue<String> written = new LinkedBlockingQueue<>();

        private void onAnotherThread(DataSourceInstance instance, String event) {
            try {
                Thread.ofPlatform().start(() -> {
                    TraceWriter<TracePacket> writer = instance.newTraceWriter(BufferExhaustedPolicy.STALL);
                    boolean open = writer.isOpen();
                    writer.newTracePacket().setTrackEvent().setName(event);
                    writer.finishTracePacket();
                    writer.close();
                    written.add(event + (open ? " written" : " refused"));
                }).join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public void onStart(DataSourceInstance instance) {
            onAnotherThread(instance, "start");
        }

        @Override
        public void onFlush(DataSourceInstance instance) {
            onAnotherThread(instance, "flush");
        }

        @Override
        public void onStop(DataSourceInstance instance, Runnable done) {
            onAnotherThread(instance, "stop");
            done.run();
        }
    }

    @Test
    void handlersAreToldWithoutTheConnectionsLockSoTheirThreadsMayMakeWriters() throws Exception {
        HandsOffToAThread handler = new HandsOffToAThread();
        try (ScriptedService service = new ScriptedService();
             ProducerConnection producer = ProducerConnection.connect(options(service))) {
            producer.registerDataSource(DataSourceDescriptor.named(SOURCE), handler);
            service.next("RegisterDataSource");
            service.setupTracing(SMB_SIZE, 4);
            service.setupAndStart(9, ScriptedService.config(SOURCE, 7));
            assertEquals("start written", handler.written.poll(10, TimeUnit.SECONDS));
            service.flush(43, 9);
            service.awaitCommitLog("flush 43");
            assertEquals("flush written", handler.written.poll(10, TimeUnit.SECONDS));
            service.stop(9);
            assertEquals(9, NotifyDataSourceStoppedRequest.parseFrom(service.next("NotifyDataSourceStopped").args())
                    .getDataSourceId());
            assertEquals("stop written", handler.written.poll(10, TimeUnit.SECONDS));
            assertEquals(0, producer.stats().commandsRejected());
        }
    }

    @Test
    void fragmentedPacketsArriveWholeWithTheirPatches() throws Exception {
        Recorder recorder = new Recorder();
        try (ScriptedService service = new ScriptedService();
             ProducerConnection producer = ProducerConnection.connect(options(service))) {
            DataSourceInstance instance = start(service, producer, recorder, 1);
            TraceWriter<TracePacket> writer = instance.newTraceWriter(BufferExhaustedPolicy.STALL);
            List<String> names = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                // Pages of 4 KiB: every other packet spans three chunks, its TrackEvent's
                // size field left behind in the first and patched.
                String name = (i % 2 == 0 ? "x" : "long ").repeat(i % 2 == 0 ? 10 : 2000) + i;
                names.add(name);
                TracePacket packet = writer.newTracePacket();
                packet.setTimestamp(i);
                packet.setTrackEvent().setName(name);
                writer.finishTracePacket();
            }
            service.flush(1, 1);
            service.awaitCommitLog("flush 1");
            List<byte[]> packets = service.packetsOf(writer.writerId());
            assertEquals(names.size(), packets.size());
            for (int i = 0; i < names.size(); i++) {
                TracePacketOuterClass.TracePacket packet = TracePacketOuterClass.TracePacket.parseFrom(packets.get(i));
                assertEquals(i, packet.getTimestamp());
                assertEquals(names.get(i), packet.getTrackEvent().getName());
            }
            assertTrue(service.commitLog.stream().anyMatch(entry -> entry.startsWith("patch ")), service.commitLog.toString());
        }
    }

    @Test
    void stopWaitsForTheHandlersLateDoneThenCommitsAndNotifies() throws Exception {
        Recorder recorder = new Recorder();
        recorder.deferStop = true;
        try (ScriptedService service = new ScriptedService();
             ProducerConnection producer = ProducerConnection.connect(options(service))) {
            DataSourceInstance instance = start(service, producer, recorder, 3);
            TraceWriter<TracePacket> writer = instance.newTraceWriter(BufferExhaustedPolicy.STALL);
            writeEvents(writer, 0, 10);
            service.stop(3);
            recorder.await("stop 3");
            // Sync's reply comes after the service took everything sent before it.
            assertTrue(producer.sync().get(10, TimeUnit.SECONDS));
            assertTrue(service.calls.stream().noneMatch(call -> call.method().equals("NotifyDataSourceStopped")));
            assertTrue(writer.isOpen());
            // The application finishes later, on a thread of its own.
            Thread.ofPlatform().start(recorder.stopDone).join();
            assertEquals(3, NotifyDataSourceStoppedRequest.parseFrom(service.next("NotifyDataSourceStopped").args())
                    .getDataSourceId());
            // The host reads one client's frames in order: the writer's chunk came first.
            assertEvents(service.packetsOf(writer.writerId()), 0, 10);
            assertFalse(writer.isOpen());
            assertFalse(instance.isRunning());
            assertFalse(instance.newTraceWriter(BufferExhaustedPolicy.DROP).isOpen());
            // The done of a stop counts once.
            recorder.stopDone.run();
            assertTrue(producer.sync().get(10, TimeUnit.SECONDS));
            assertTrue(service.calls.stream().noneMatch(call -> call.method().equals("NotifyDataSourceStopped")));
        }
    }

    @Test
    void closeRightAfterAStopIsDoneStillDeliversItsCommitsAndNotification() throws Exception {
        // The race is the sender's poll against close(): repeat it.
        for (int round = 0; round < 20; round++) {
            Recorder recorder = new Recorder();
            recorder.deferStop = true;
            try (ScriptedService service = new ScriptedService()) {
                TraceWriter<TracePacket> writer;
                try (ProducerConnection producer = ProducerConnection.connect(options(service))) {
                    DataSourceInstance instance = start(service, producer, recorder, 3);
                    writer = instance.newTraceWriter(BufferExhaustedPolicy.STALL);
                    writeEvents(writer, 0, 10);
                    service.stop(3);
                    recorder.await("stop 3");
                    recorder.stopDone.run();
                }
                assertEquals(3, NotifyDataSourceStoppedRequest.parseFrom(service.next("NotifyDataSourceStopped").args())
                        .getDataSourceId(), "round " + round);
                assertEvents(service.packetsOf(writer.writerId()), 0, 10);
            }
        }
    }

    @Test
    void closeCommitsWhatRunningWritersHoldBeforeDisconnecting() throws Exception {
        Recorder recorder = new Recorder();
        try (ScriptedService service = new ScriptedService()) {
            TraceWriter<TracePacket> writer;
            ProducerConnection.Stats stats;
            try (ProducerConnection producer = ProducerConnection.connect(options(service))) {
                DataSourceInstance instance = start(service, producer, recorder, 4);
                writer = instance.newTraceWriter(BufferExhaustedPolicy.STALL);
                writeEvents(writer, 0, 25);
                producer.close();
                stats = producer.stats();
                assertFalse(writer.isOpen());
                assertFalse(instance.isRunning());
            }
            recorder.await("stop 4");
            assertEquals(writer.writerId(), UnregisterTraceWriterRequest.parseFrom(
                    service.next("UnregisterTraceWriter").args()).getTraceWriterId());
            assertEvents(service.packetsOf(writer.writerId()), 0, 25);
            assertEquals(0, stats.writersClosedByDisconnect());
            assertEquals(0, stats.commitsDropped());
        }
    }

    @Test
    void closeGivesUpOnAServiceThatStopsReading() throws Exception {
        Recorder recorder = new Recorder();
        CompletableFuture<Void> gate = new CompletableFuture<>();
        try (ScriptedService service = new ScriptedService()) {
            ProducerConnection producer = ProducerConnection.connect(options(service));
            try {
                DataSourceInstance instance = start(service, producer, recorder, 1);
                service.holdCommits(gate);
                // The first commit stops the service reading; the writers' register and
                // unregister messages behind it fill the socket until the sender blocks.
                for (int i = 0; i < 20_000; i++) {
                    TraceWriter<TracePacket> writer = instance.newTraceWriter(BufferExhaustedPolicy.DROP);
                    writeEvents(writer, i, 1);
                    writer.close();
                }
                Thread closing = Thread.ofPlatform().start(producer::close);
                closing.join(TimeUnit.SECONDS.toMillis(20));
                assertFalse(closing.isAlive(), "close() waited for a service that does not read");
            } finally {
                gate.complete(null);
                producer.close();
            }
        }
    }

    @Test
    void clearIncrementalStateMovesTheInstancesCounter() throws Exception {
        Recorder recorder = new Recorder();
        try (ScriptedService service = new ScriptedService();
             ProducerConnection producer = ProducerConnection.connect(options(service))) {
            DataSourceInstance instance = start(service, producer, recorder, 4);
            assertEquals(0, instance.incrementalStateClears());
            service.clearIncrementalState(4, 99);
            recorder.await("clear 4");
            assertEquals(1, instance.incrementalStateClears());
            service.clearIncrementalState(4);
            recorder.await("clear 4");
            assertEquals(2, instance.incrementalStateClears());
            assertEquals(0, producer.stats().commandsRejected());
        }
    }

    @Test
    void aServiceThatGoesAwayClosesTheWritersAndTheConnectionComesBack() throws Exception {
        Recorder recorder = new Recorder();
        UnixAddress address = UnixAddress.abstractName("ffmtrace-producer-test-" + UUID.randomUUID());
        ScriptedService first = new ScriptedService(address);
        try (ProducerConnection producer = ProducerConnection.connect(options(first))) {
            DataSourceInstance instance = start(first, producer, recorder, 1);
            TraceWriter<TracePacket> writer = instance.newTraceWriter(BufferExhaustedPolicy.STALL);
            writeEvents(writer, 0, 5);
            first.close();
            recorder.await("stop 1");
            Await.until("the writer closed", () -> !writer.isOpen());
            assertFalse(instance.isRunning());
            assertFalse(instance.newTraceWriter(BufferExhaustedPolicy.STALL).isOpen());
            Await.until("the disconnection counted", () -> producer.stats().disconnections() == 1);
            assertEquals(1, producer.stats().writersClosedByDisconnect());
            assertFalse(producer.isConnected());

            try (ScriptedService second = new ScriptedService(address)) {
                second.next("InitializeConnection");
                assertEquals(SOURCE, RegisterDataSourceRequest.parseFrom(second.next("RegisterDataSource").args())
                        .getDataSourceDescriptor().getName());
                assertTrue(producer.awaitConnected(Duration.ofSeconds(10)));
                second.setupTracing(SMB_SIZE, 4);
                second.setupAndStart(2, ScriptedService.config(SOURCE, 3));
                DataSourceInstance again = recorder.awaitStart();
                TraceWriter<TracePacket> newWriter = again.newTraceWriter(BufferExhaustedPolicy.STALL);
                writeEvents(newWriter, 100, 20);
                second.flush(9, 2);
                second.awaitCommitLog("flush 9");
                assertEvents(second.packetsOf(newWriter.writerId()), 100, 20);
                assertEquals(2, producer.stats().connections());
            }
        } finally {
            first.close();
        }
    }

    @Test
    void hostileCommandsAreCountedAndIgnored() throws Exception {
        Recorder recorder = new Recorder();
        Path plainFile = Files.createTempFile("ffmtrace-not-a-memfd", ".bin");
        try (ScriptedService service = new ScriptedService();
             ProducerConnection producer = ProducerConnection.connect(options(service))) {
            Files.write(plainFile, new byte[SMB_SIZE]);
            producer.registerDataSource(DataSourceDescriptor.named(SOURCE), recorder);
            service.next("RegisterDataSource");
            byte[] setupTracing = GetAsyncCommandResponse.newBuilder().setSetupTracing(
                    GetAsyncCommandResponse.SetupTracing.newBuilder().setSharedBufferPageSizeKb(4)).build().toByteArray();
            int expected = 0;
            // Not a message at all.
            service.send(new byte[] {0x0a, (byte) 0xff, (byte) 0xff, 0x01}, -1);
            expected++;
            // A command this producer does not know (an empty response).
            service.send(new byte[0], -1);
            expected++;
            // SetupTracing without a buffer.
            service.send(setupTracing, -1);
            expected++;
            // A plain file, not a sealed memfd.
            try (MemoryFile file = MemoryFile.open(plainFile, Seals.NOT_REQUIRED)) {
                service.send(setupTracing, file.fd());
            }
            expected++;
            // A sealed memfd that is not a whole number of pages.
            try (MemoryFile file = MemoryFile.create("perfetto:shmem", 6000)) {
                service.send(setupTracing, file.fd());
            }
            expected++;
            // A page size of 0.
            try (MemoryFile file = MemoryFile.create("perfetto:shmem", SMB_SIZE)) {
                service.send(GetAsyncCommandResponse.newBuilder().setSetupTracing(
                        GetAsyncCommandResponse.SetupTracing.newBuilder().setSharedBufferPageSizeKb(0)).build()
                        .toByteArray(), file.fd());
            }
            expected++;
            // A start before SetupTracing.
            service.setupAndStart(1, ScriptedService.config(SOURCE, 1));
            expected++;
            service.setupTracing(SMB_SIZE, 4);
            // A second SetupTracing.
            try (MemoryFile file = MemoryFile.create("perfetto:shmem", SMB_SIZE)) {
                service.send(setupTracing, file.fd());
            }
            expected++;
            // A config without a target buffer: setup and start both refused.
            service.setupAndStart(2, DataSourceConfig.newBuilder().setName(SOURCE).build());
            expected += 2;
            // A data source never registered.
            service.setupAndStart(3, ScriptedService.config("not.registered", 1));
            expected += 2;
            // A target buffer beyond Perfetto's 16-bit buffer ids.
            service.setupAndStart(4, ScriptedService.config(SOURCE, 70000));
            expected += 2;
            // An instance never started.
            service.stop(77);
            expected++;
            // A descriptor on a command other than SetupTracing.
            try (MemoryFile file = MemoryFile.create("perfetto:shmem", SMB_SIZE)) {
                service.send(GetAsyncCommandResponse.newBuilder().setStopDataSource(
                        GetAsyncCommandResponse.StopDataSource.newBuilder().setInstanceId(1)).build().toByteArray(), file.fd());
            }
            expected++;

            service.setupAndStart(5, ScriptedService.config(SOURCE, 2));
            DataSourceInstance instance = recorder.awaitStart();
            assertEquals(5, instance.id());
            // Starting it twice.
            service.send(GetAsyncCommandResponse.newBuilder().setStartDataSource(
                    GetAsyncCommandResponse.StartDataSource.newBuilder().setNewInstanceId(5)
                            .setConfig(ScriptedService.config(SOURCE, 2))).build());
            expected++;
            TraceWriter<TracePacket> writer = instance.newTraceWriter(BufferExhaustedPolicy.STALL);
            writeEvents(writer, 0, 50);
            service.flush(3, 5);
            service.awaitCommitLog("flush 3");
            assertEvents(service.packetsOf(writer.writerId()), 0, 50);
            assertEquals(expected, producer.stats().commandsRejected());
            assertTrue(producer.isConnected());
            assertEquals(1, producer.stats().connections());
        } finally {
            Files.deleteIfExists(plainFile);
        }
    }

    @Test
    void producerProvidedBufferIsOfferedAndUsed() throws Exception {
        Recorder recorder = new Recorder();
        try (ScriptedService service = new ScriptedService()) {
            service.answerInitializeWith(InitializeConnectionResponse.newBuilder().setUsingShmemProvidedByProducer(true).build());
            try (ProducerConnection producer = ProducerConnection.connect(options(service).withProducerProvidedSmb(SMB_SIZE))) {
                producer.registerDataSource(DataSourceDescriptor.named(SOURCE), recorder);
                ScriptedService.Call initCall = service.next("InitializeConnection");
                InitializeConnectionRequest init = InitializeConnectionRequest.parseFrom(initCall.args());
                assertTrue(initCall.hadFd());
                assertTrue(init.getProducerProvidedShmem());
                assertEquals(SMB_SIZE, init.getSharedMemorySizeHintBytes());
                service.next("RegisterDataSource");
                service.setupTracingOnProducerSmb(4);
                service.setupAndStart(1, ScriptedService.config(SOURCE, 1));
                TraceWriter<TracePacket> writer = recorder.awaitStart().newTraceWriter(BufferExhaustedPolicy.STALL);
                writeEvents(writer, 0, 100);
                service.flush(5, 1);
                service.awaitCommitLog("flush 5");
                assertEvents(service.packetsOf(writer.writerId()), 0, 100);
                assertEquals(0, producer.stats().commandsRejected());
            }
        }
    }

    @Test
    void writersNeverWaitForTheSocket() throws Exception {
        Recorder recorder = new Recorder();
        CompletableFuture<Void> gate = new CompletableFuture<>();
        try (ScriptedService service = new ScriptedService();
             ProducerConnection producer = ProducerConnection.connect(options(service))) {
            DataSourceInstance instance = start(service, producer, recorder, 1);
            // The service stops reading: its first CommitData never returns.
            service.holdCommits(gate);
            TraceWriter<TracePacket> writer = instance.newTraceWriter(BufferExhaustedPolicy.DROP);
            Thread app = Thread.ofPlatform().start(() -> {
                for (int i = 0; i < 200_000; i++) {
                    TracePacket packet = writer.newTracePacket();
                    packet.setTimestamp(i);
                    packet.setTrackEvent().setName("a name long enough to fill chunks quickly " + i);
                    writer.finishTracePacket();
                }
            });
            app.join(TimeUnit.SECONDS.toMillis(30));
            assertFalse(app.isAlive(), "the writing thread waited for the service");
            assertTrue(writer.packetsDropped() > 0);
            gate.complete(null);
            service.flush(8, 1);
            service.awaitCommitLog("flush 8");
            assertTrue(producer.isConnected());
        }
    }

    @Test
    void retriesWithPerfettosBackOff() {
        long delay = 0;
        List<Long> seconds = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            delay = ProducerConnection.RetryDelays.PERFETTO.next(delay);
            seconds.add(TimeUnit.NANOSECONDS.toSeconds(delay));
        }
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L, 10L, 30L, 30L), seconds);
    }

    @Test
    void connectsOnceTheServiceAppears() throws Exception {
        Recorder recorder = new Recorder();
        UnixAddress address = UnixAddress.abstractName("ffmtrace-producer-test-" + UUID.randomUUID());
        try (ProducerConnection producer = ProducerConnection.connect(ProducerConnection.Options.named("late")
                .withSocket(address).withRetryDelays(FAST_RETRIES))) {
            producer.registerDataSource(DataSourceDescriptor.named(SOURCE), recorder);
            Await.until("a failed attempt", () -> producer.stats().connectFailures() > 0);
            assertFalse(producer.isConnected());
            assertFalse(producer.sync().get(10, TimeUnit.SECONDS));
            try (ScriptedService service = new ScriptedService(address)) {
                assertEquals("late", InitializeConnectionRequest.parseFrom(service.next("InitializeConnection").args())
                        .getProducerName());
                service.next("RegisterDataSource");
                assertTrue(producer.awaitConnected(Duration.ofSeconds(10)));
                assertTrue(producer.sync().get(10, TimeUnit.SECONDS));
            }
        }
    }

    @Test
    void connectAndCloseLeakNoDescriptorMappingOrThread() throws Exception {
        cycle();
        OpenDescriptors fds = OpenDescriptors.snapshot();
        long smbMappings = smbMappings();
        for (int i = 0; i < 5; i++) {
            cycle();
        }
        assertEquals(List.of(), fds.openedSince(), "descriptors left open");
        assertEquals(smbMappings, smbMappings(), "SMB mappings left");
        assertTrue(Thread.getAllStackTraces().keySet().stream().noneMatch(
                thread -> thread.getName().startsWith("perfetto-producer")), "a connection thread left running");
    }

    private static void cycle() throws Exception {
        Recorder recorder = new Recorder();
        try (ScriptedService service = new ScriptedService();
             ProducerConnection producer = ProducerConnection.connect(options(service))) {
            DataSourceInstance instance = start(service, producer, recorder, 1);
            writeEvents(instance.newTraceWriter(BufferExhaustedPolicy.STALL), 0, 10);
            service.flush(1, 1);
            service.awaitCommitLog("flush 1");
        }
    }

    private static long smbMappings() throws IOException {
        return Files.readAllLines(Path.of("/proc/self/maps")).stream().filter(line -> line.contains("perfetto:shmem")).count();
    }
}
