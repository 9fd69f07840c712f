package dev.ffmtrace.tracing.service.ipc;

import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.tracing.consumer.ConsumerConnection;
import dev.ffmtrace.tracing.consumer.TraceAssembler;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.ipc.IpcHost;
import dev.ffmtrace.memory.FileDescriptorChannel;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.memory.TcpAddress;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.perfetto.protos.ObservableEvents;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TraceStats;
import dev.ffmtrace.perfetto.protos.TracingServiceState;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.service.DataSource;
import dev.ffmtrace.tracing.service.LocalProducers;
import dev.ffmtrace.tracing.service.Producer;
import dev.ffmtrace.tracing.service.ProducerPackets;
import dev.ffmtrace.tracing.service.ReadbackSink;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.SessionConfigBuilder;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The consumer port over a real Unix socket, driven by {@link ConsumerConnection}. */
class ConsumerPortTest {
    static final long TIMEOUT_MS = 10_000;

    TracingService service;
    ConsumerPort port;
    IpcHost host;
    Producer producer;
    DataSource events;

    @TempDir
    Path dir;

    static UnixAddress newAddress() {
        return UnixAddress.abstractName("ffmtrace-consumer-test-" + UUID.randomUUID());
    }

    @BeforeEach
    void start() {
        service = new TracingService();
        port = new ConsumerPort(service, "ffmtrace test");
        host = IpcHost.listen(newAddress());
        assertTrue(host.exposeService(port.descriptor()));
        producer = LocalProducers.connect(service, "test-producer", 1 << 20);
        events = LocalProducers.register(producer, "track_event");
    }

    @AfterEach
    void stop() {
        host.close();
        port.close();
        service.close();
    }

    @Test
    void aConsumerOverTcpIsRefusedWhateverUidItWouldHave() throws Exception {
        try (IpcHost tcp = IpcHost.listen(TcpAddress.loopback(0))) {
            assertTrue(tcp.exposeService(port.descriptor()));
            try (ConsumerConnection consumer = ConsumerConnection.connect(tcp.address(), TIMEOUT_MS)) {
                // uid 0 to the host, which may act on every session: refused, not trusted.
                assertNull(consumer.queryServiceState(TIMEOUT_MS));
                assertFalse(consumer.enableTracing(config(oneBuffer()), -1).get(TIMEOUT_MS,
                        TimeUnit.MILLISECONDS).ok());
            }
        }
        assertEquals(2, port.refusals());
        assertEquals(0, port.consumerCount());
        try (ConsumerConnection local = connect()) {
            assertNotNull(local.queryServiceState(TIMEOUT_MS), "a Unix socket's consumer is served");
        }
    }

    ConsumerConnection connect() throws InterruptedException {
        return ConsumerConnection.connect(host.address(), TIMEOUT_MS);
    }

    static byte[] config(SessionConfigBuilder builder) throws Exception {
        return builder.build().traceConfig().toArray(ValueLayout.JAVA_BYTE);
    }

    static SessionConfigBuilder oneBuffer() {
        return SessionConfig.builder().buffer(1024, OverwritePolicy.RING_BUFFER).dataSource("track_event");
    }

    /** Writes {@code count} events named "event I", and one of {@code bigSize} bytes named "big". */
    void writeEvents(int count, int bigSize) {
        try (TraceWriter<TracePacket> writer = events.newTraceWriter(BufferExhaustedPolicy.STALL)) {
            for (int i = 0; i < count; i++) {
                TracePacket packet = writer.newTracePacket();
                packet.setTimestamp(i + 1);
                packet.setTrackEvent().setName("event " + i);
                writer.finishTracePacket();
            }
            if (bigSize > 0) {
                TracePacket packet = writer.newTracePacket();
                packet.setTimestamp(count + 1);
                packet.setTrackEvent().setName("big" + "x".repeat(bigSize));
                writer.finishTracePacket();
            }
        }
    }

    /** The track event names in a trace, in order, and its trace_stats packets. */
    record Read(List<String> names, int statsPackets, int packets) {
    }

    static Read read(byte[] trace) {
        Trace.Decoder decoder = new Trace.Decoder();
        decoder.reset(MemorySegment.ofArray(trace));
        assertFalse(decoder.hasError());
        RepeatedFieldIterator packets = decoder.packet(new RepeatedFieldIterator());
        TracePacket.Decoder packet = new TracePacket.Decoder();
        TrackEvent.Decoder event = new TrackEvent.Decoder();
        List<String> names = new ArrayList<>();
        int stats = 0;
        int count = 0;
        while (packets.next()) {
            packet.reset(packets.field());
            assertFalse(packet.hasError());
            count++;
            if (packet.trackEvent(event)) {
                names.add(event.name());
            }
            stats += packet.hasTraceStats() ? 1 : 0;
        }
        return new Read(names, stats, count);
    }

    @Test
    void enableFlushStatsReadDisableAndFreeOverTheSocket() throws Exception {
        try (ConsumerConnection consumer = connect()) {
            CompletableFuture<ConsumerConnection.TracingDisabled> disabled =
                    consumer.enableTracing(config(oneBuffer()), -1);
            Await.until("the data source starts", events::isStarted);
            // A packet bigger than a slice and than an IPC frame: it comes in several slices over several replies.
            writeEvents(2000, 300_000);
            assertTrue(consumer.flush(0, TIMEOUT_MS));

            TraceStats.Decoder stats = new TraceStats.Decoder();
            stats.reset(MemorySegment.ofArray(consumer.traceStats(TIMEOUT_MS)));
            assertFalse(stats.hasError());
            TraceStats.BufferStats.Decoder buffer = new TraceStats.BufferStats.Decoder();
            assertEquals(1, stats.bufferStatsCount());
            assertTrue(stats.bufferStats(new RepeatedFieldIterator()).next());

            Read first = read(consumer.readBuffers(TIMEOUT_MS));
            assertEquals(2001, first.names().size());
            for (int i = 0; i < 2000; i++) {
                assertEquals("event " + i, first.names().get(i));
            }
            assertEquals("big" + "x".repeat(300_000), first.names().get(2000));
            assertEquals(1, first.statsPackets());
            assertFalse(disabled.isDone(), "the EnableTracing reply waits until tracing is disabled");

            assertTrue(consumer.disableTracing(TIMEOUT_MS));
            assertTrue(disabled.get(TIMEOUT_MS, TimeUnit.MILLISECONDS).ok());
            assertFalse(events.isStarted());
            Read rest = read(consumer.readBuffers(TIMEOUT_MS));
            assertEquals(List.of(), rest.names(), "what was read is not read again");
            assertEquals(1, port.sessionCount());
            assertTrue(consumer.freeBuffers(TIMEOUT_MS));
            assertEquals(0, port.sessionCount());
            assertNull(consumer.traceStats(TIMEOUT_MS), "no session: GetTraceStats fails");
            assertFalse(consumer.flush(0, TIMEOUT_MS), "no session: Flush fails");
            assertEquals(0, read(consumer.readBuffers(TIMEOUT_MS)).packets(), "no session: ReadBuffers ends at once");

            // The connection can run a second session once the first is freed.
            CompletableFuture<ConsumerConnection.TracingDisabled> second =
                    consumer.enableTracing(config(oneBuffer().durationMs(100)), -1);
            assertTrue(second.get(TIMEOUT_MS, TimeUnit.MILLISECONDS).ok(), "duration_ms disables it");
            assertTrue(read(consumer.readBuffers(TIMEOUT_MS)).statsPackets() > 0);
        }
        assertEquals(0, producer.abiViolations());
    }

    @Test
    void writeIntoFileWritesIntoTheDescriptorSentWithTheRequest() throws Exception {
        Path file = Files.createFile(dir.resolve("trace.pftrace"));
        try (ConsumerConnection consumer = connect();
             FileDescriptorChannel output = FileDescriptorChannel.openForWriting(file)) {
            CompletableFuture<ConsumerConnection.TracingDisabled> disabled =
                    consumer.enableTracing(config(oneBuffer().writeIntoFile(100, 0).flushPeriodMs(100)), output.fd());
            Await.until("the data source starts", events::isStarted);
            writeEvents(500, 0);
            assertTrue(consumer.disableTracing(TIMEOUT_MS));
            assertTrue(disabled.get(TIMEOUT_MS, TimeUnit.MILLISECONDS).ok());
            assertEquals(0, read(consumer.readBuffers(TIMEOUT_MS)).packets(), "a write_into_file session is not read over IPC");
        }
        Read written = read(Files.readAllBytes(file));
        assertEquals(500, written.names().size());
        assertEquals("event 499", written.names().getLast());
    }

    @Test
    void anOutputThatRefusesWritesEndsTracingWithTheError() throws Exception {
        try (ConsumerConnection consumer = connect();
             FileDescriptorChannel full = FileDescriptorChannel.openForWriting(Path.of("/dev/full"))) {
            CompletableFuture<ConsumerConnection.TracingDisabled> disabled =
                    consumer.enableTracing(config(oneBuffer().writeIntoFile(100, 0)), full.fd());
            String error = disabled.get(TIMEOUT_MS, TimeUnit.MILLISECONDS).error();
            assertTrue(error.startsWith("cannot write the trace: write(") && error.contains("ENOSPC"), error);
            assertTrue(consumer.freeBuffers(TIMEOUT_MS));
            assertEquals(0, port.sessionCount());
        }
    }

    @Test
    void cloneSessionCopiesAnotherConsumersSessionWithoutConsumingIt() throws Exception {
        try (ConsumerConnection owner = connect(); ConsumerConnection cloner = connect()) {
            owner.enableTracing(config(oneBuffer()), -1);
            Await.until("the data source starts", events::isStarted);
            writeEvents(300, 0);
            assertEquals("Tracing session not found", cloner.cloneSession(99, TIMEOUT_MS).error());
            ConsumerConnection.Cloned cloned = cloner.cloneSession(1, TIMEOUT_MS);
            assertTrue(cloned.success(), cloned.error());
            assertTrue(cloned.uuidMsb() != 0 || cloned.uuidLsb() != 0);
            Read copy = read(cloner.readBuffers(TIMEOUT_MS));
            assertEquals(300, copy.names().size());
            assertEquals(0, read(cloner.readBuffers(TIMEOUT_MS)).packets(), "a clone is read once");
            assertEquals(300, read(owner.readBuffers(TIMEOUT_MS)).names().size(), "the source's data is still unread");
            assertTrue(events.isStarted(), "the source runs on");
            assertEquals("The consumer is already attached to another tracing session",
                    owner.cloneSession(1, TIMEOUT_MS).error());
            assertTrue(cloner.freeBuffers(TIMEOUT_MS));
        }
    }

    @Test
    void aConsumerThatDisconnectsMidSessionFreesIt() throws Exception {
        ConsumerConnection consumer = connect();
        consumer.enableTracing(config(oneBuffer()), -1);
        Await.until("the data source starts", events::isStarted);
        writeEvents(10, 0);
        // The data source starts inside the service's startSession, before the port records the session.
        Await.until("the port holds the session", () -> port.sessionCount() == 1);
        consumer.close();
        Await.until("the session is freed", () -> port.sessionCount() == 0 && !events.isStarted());
        try (ConsumerConnection next = connect()) {
            CompletableFuture<ConsumerConnection.TracingDisabled> disabled = next.enableTracing(config(oneBuffer()), -1);
            Await.until("the data source is free for the next session", events::isStarted);
            next.disableTracing(TIMEOUT_MS);
            assertTrue(disabled.get(TIMEOUT_MS, TimeUnit.MILLISECONDS).ok());
        }
    }

    @Test
    void badConfigsGetPerfettosErrorRepliesAndTheConnectionCarriesOn() throws Exception {
        try (ConsumerConnection consumer = connect()) {
            assertEquals("TraceConfig has no buffers",
                    consumer.enableTracing(new byte[0], -1).get(TIMEOUT_MS, TimeUnit.MILLISECONDS).error());
            assertTrue(consumer.enableTracing(new byte[] {(byte) 0xff}, -1).get(TIMEOUT_MS, TimeUnit.MILLISECONDS)
                    .error().startsWith("TraceConfig is not a valid protobuf message"));
            assertEquals("When write_into_file==true either a FD needs to be passed or output_path must be populated "
                            + "(but not both)",
                    consumer.enableTracing(config(oneBuffer().writeIntoFile(0, 0)), -1)
                            .get(TIMEOUT_MS, TimeUnit.MILLISECONDS).error());
            assertEquals("Requested too long trace (604800001ms  > 604800000 ms)",
                    consumer.enableTracing(config(oneBuffer().durationMs(7L * 24 * 3600 * 1000 + 1)), -1)
                            .get(TIMEOUT_MS, TimeUnit.MILLISECONDS).error());
            assertEquals(0, port.sessionCount());

            CompletableFuture<ConsumerConnection.TracingDisabled> first = consumer.enableTracing(config(oneBuffer()), -1);
            CompletableFuture<ConsumerConnection.TracingDisabled> second = consumer.enableTracing(config(oneBuffer()), -1);
            assertEquals("A Consumer is trying to EnableTracing() but another tracing session is already active "
                    + "(forgot a call to FreeBuffers() ?)", second.get(TIMEOUT_MS, TimeUnit.MILLISECONDS).error());
            assertTrue(first.get(TIMEOUT_MS, TimeUnit.MILLISECONDS).error().startsWith("EnableTracing IPC request rejected"),
                    "as in Perfetto, the first deferred reply is dropped, hence rejected");
            assertEquals(1, port.sessionCount(), "the first session goes on");
            assertTrue(consumer.flush(0, TIMEOUT_MS));
        }
    }

    @Test
    void anOversizedFrameClosesThatConnectionOnly() throws Exception {
        try (ConsumerConnection consumer = connect()) {
            CompletableFuture<ConsumerConnection.TracingDisabled> disabled = consumer.enableTracing(config(oneBuffer()), -1);
            try (StreamSocket raw = StreamSocket.connect(host.address())) {
                raw.send(new byte[] {0, 0, 4, 0, 1, 2, 3});
                byte[] into = new byte[16];
                assertEquals(0, raw.receive(into, 0).bytes(), "the host closed the connection");
            }
            Await.until("the violation is counted", () -> host.violations() == 1);
            assertTrue(consumer.flush(0, TIMEOUT_MS), "the other consumer's session carries on");
            assertFalse(disabled.isDone());
        }
    }

    @Test
    void queryServiceStateListsProducersDataSourcesAndSessions() throws Exception {
        LocalProducers.register(producer, "counters");
        try (ConsumerConnection consumer = connect()) {
            consumer.enableTracing(config(oneBuffer()), -1);
            Await.until("the data source starts", events::isStarted);
            TracingServiceState.Decoder state = new TracingServiceState.Decoder();
            state.reset(MemorySegment.ofArray(consumer.queryServiceState(TIMEOUT_MS)));
            assertFalse(state.hasError());
            assertEquals("ffmtrace test", state.tracingServiceVersion());
            TracingServiceState.Producer.Decoder p = new TracingServiceState.Producer.Decoder();
            RepeatedFieldIterator producers = state.producers(new RepeatedFieldIterator());
            assertTrue(producers.next());
            p.reset(producers.field());
            assertEquals("test-producer", p.name());
            assertEquals(producer.id(), p.id());
            assertEquals(ProcessHandle.current().pid(), p.pid());
            List<String> dataSources = new ArrayList<>();
            RepeatedFieldIterator sources = state.dataSources(new RepeatedFieldIterator());
            TracingServiceState.DataSource.Decoder source = new TracingServiceState.DataSource.Decoder();
            dev.ffmtrace.perfetto.protos.DataSourceDescriptor.Decoder descriptor =
                    new dev.ffmtrace.perfetto.protos.DataSourceDescriptor.Decoder();
            while (sources.next()) {
                source.reset(sources.field());
                assertTrue(source.dsDescriptor(descriptor));
                assertEquals(producer.id(), source.producerId());
                dataSources.add(descriptor.name());
            }
            assertEquals(List.of("counters", "track_event"), dataSources);
            assertEquals(1, state.numSessions());
            assertEquals(1, state.numSessionsStarted());
        }
    }

    @Test
    void observeEventsTellsWhenAllDataSourcesStartedAndEachInstance() throws Exception {
        try (ConsumerConnection consumer = connect()) {
            LinkedBlockingQueue<byte[]> received = new LinkedBlockingQueue<>();
            consumer.observeEvents(List.of(ObservableEvents.Type.TYPE_ALL_DATA_SOURCES_STARTED,
                    ObservableEvents.Type.TYPE_DATA_SOURCES_INSTANCES), received::add);
            CompletableFuture<ConsumerConnection.TracingDisabled> disabled =
                    consumer.enableTracing(config(oneBuffer().dataSource("late")), -1);
            // Answered after EnableTracing and ObserveEvents, on the same connection: an
            // event those sent would have come first.
            assertNotNull(consumer.traceStats(TIMEOUT_MS));
            assertNull(received.poll(), "\"late\" is not registered yet");
            LocalProducers.register(LocalProducers.connect(service, "late-producer"), "late");
            ObservableEvents.Decoder started = new ObservableEvents.Decoder();
            byte[] event = received.poll(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            assertNotNull(event);
            started.reset(MemorySegment.ofArray(event));
            assertTrue(started.allDataSourcesStarted());

            consumer.disableTracing(TIMEOUT_MS);
            assertTrue(disabled.get(TIMEOUT_MS, TimeUnit.MILLISECONDS).ok());
            ObservableEvents.Decoder stopped = new ObservableEvents.Decoder();
            stopped.reset(MemorySegment.ofArray(received.poll(TIMEOUT_MS, TimeUnit.MILLISECONDS)));
            List<String> instances = new ArrayList<>();
            RepeatedFieldIterator changes = stopped.instanceStateChanges(new RepeatedFieldIterator());
            ObservableEvents.DataSourceInstanceStateChange.Decoder change =
                    new ObservableEvents.DataSourceInstanceStateChange.Decoder();
            while (changes.next()) {
                change.reset(changes.field());
                assertEquals(ObservableEvents.DataSourceInstanceState.DATA_SOURCE_INSTANCE_STATE_STOPPED.number(),
                        change.state());
                instances.add(change.producerName() + "/" + change.dataSourceName());
            }
            instances.sort(null);
            assertEquals(List.of("late-producer/late", "test-producer/track_event"), instances);
        }
    }

    @Test
    void slicesGlueBackIntoTheSameTrace() {
        byte[] big = new byte[200_000];
        Arrays.fill(big, (byte) 7);
        dev.ffmtrace.protozero.HeapBuffered<Trace> trace = new dev.ffmtrace.protozero.HeapBuffered<>(Trace.FACTORY);
        trace.get().addPacket().setTimestamp(1);
        trace.get().addPacket().appendBytes(TracePacket.FOR_TESTING_FIELD_NUMBER, big);
        trace.get().addPacket().setTimestamp(3);
        byte[] bytes = trace.toByteArray();
        List<byte[]> expected = packets(bytes);

        // The service's own packets, framed as a Trace.
        List<Integer> replyLengths = new ArrayList<>();
        TraceAssembler glued = new TraceAssembler();
        ReadBuffersReplies replies = new ReadBuffersReplies();
        replies.begin(gluingInto(glued, replyLengths));
        replies.appendFramed(bytes, 0, bytes.length);
        replies.finish();
        assertEquals(3, replyLengths.size(), "the big packet's 64 KiB slices spread over three replies");
        // ProtoZero writes a nested message's size in a fixed 4-byte varint; glued packets get the shortest one.
        assertEquals(toHex(expected), toHex(packets(glued.toByteArray())));

        // A producer's packets, read from a buffer in fragments, with the service's trailer
        // (trusted uid 0, sequence 5, pid 0): the same instance, reused, cuts them anywhere a
        // slice ends.
        byte[] trailer = {0x18, 0x00, 0x50, 0x05, (byte) 0xf8, 0x04, 0x00};
        TraceAssembler fromFragments = new TraceAssembler();
        replies.begin(gluingInto(fromFragments, new ArrayList<>()));
        List<byte[]> withTrailers = new ArrayList<>();
        for (byte[] packet : expected) {
            MemorySegment buffer = MemorySegment.ofArray(packet);
            long[] offsets = {0, packet.length / 3, packet.length / 2};
            int[] sizes = {packet.length / 3, packet.length / 2 - packet.length / 3, packet.length - packet.length / 2};
            assertEquals(ReadbackSink.Appended.TAKEN, replies.append(ProducerPackets.of(
                    dev.ffmtrace.tracing.buffer.TracePacketView.ofFragments(buffer, offsets, sizes), 5, 0)));
            replies.flush();
            byte[] whole = Arrays.copyOf(packet, packet.length + trailer.length);
            System.arraycopy(trailer, 0, whole, packet.length, trailer.length);
            withTrailers.add(whole);
        }
        replies.finish();
        assertEquals(toHex(withTrailers), toHex(packets(fromFragments.toByteArray())));
    }

    @Test
    void anInvalidPacketIsNoSliceAndAShorterOneGetsTheShortestHead() {
        TraceAssembler glued = new TraceAssembler();
        ReadBuffersReplies replies = new ReadBuffersReplies();
        replies.begin(gluingInto(glued, new ArrayList<>()));
        byte[] forged = java.util.HexFormat.of().parseHex("40011800");
        assertEquals(ReadbackSink.Appended.INVALID, replies.append(ProducerPackets.of(
                dev.ffmtrace.tracing.buffer.TracePacketView.ofFragments(MemorySegment.ofArray(forged),
                        new long[] {0}, new int[] {forged.length}), 5, 0)));
        assertEquals(0, replies.pending());

        // 127 bytes with the trusted fields and a loss of 3; 128 had the producer written SMB_FULL.
        String payload = "5a73" + "00".repeat(115);
        byte[] bytes = java.util.HexFormat.of().parseHex(payload);
        assertEquals(ReadbackSink.Appended.TAKEN, replies.append(ProducerPackets.of(
                dev.ffmtrace.tracing.buffer.TracePacketView.ofFragments(MemorySegment.ofArray(bytes),
                        new long[] {0}, new int[] {bytes.length}), 5, 3)));
        replies.finish();
        assertEquals(List.of(payload + "1800" + "5005" + "f80400" + "d00203"), toHex(packets(glued.toByteArray())));
    }

    private static ReadBuffersReplies.ReplyTarget gluingInto(TraceAssembler glued, List<Integer> lengths) {
        return (reply, length, last) -> {
            assertTrue(length <= ConsumerPort.MAX_READ_REPLY, "each reply fits an IPC frame");
            lengths.add(length);
            dev.ffmtrace.perfetto.protos.ReadBuffersResponse.Decoder response =
                    new dev.ffmtrace.perfetto.protos.ReadBuffersResponse.Decoder();
            response.reset(MemorySegment.ofArray(reply).asSlice(0, length));
            assertFalse(response.hasError());
            glued.append(response);
        };
    }

    private static List<String> toHex(List<byte[]> packets) {
        return packets.stream().map(java.util.HexFormat.of()::formatHex).toList();
    }

    static List<byte[]> packets(byte[] trace) {
        Trace.Decoder decoder = new Trace.Decoder();
        decoder.reset(MemorySegment.ofArray(trace));
        RepeatedFieldIterator packets = decoder.packet(new RepeatedFieldIterator());
        List<byte[]> out = new ArrayList<>();
        while (packets.next()) {
            out.add(packets.field().asBytes());
        }
        return out;
    }
}
