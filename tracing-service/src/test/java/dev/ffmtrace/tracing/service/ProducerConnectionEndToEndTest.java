package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.ipc.IpcHost;
import dev.ffmtrace.ipc.MachineIds;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.memory.TcpAddress;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.producer.internal.DataSourceHandler;
import dev.ffmtrace.tracing.producer.internal.DataSourceInstance;
import dev.ffmtrace.tracing.relay.ThisMachine;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * ffmtrace's producer (ProducerConnection) and ffmtrace's service (ProducerPort) over a
 * real socket, Unix or TCP: each side is tested against Perfetto's own programs
 * elsewhere; here they meet each other.
 */
class ProducerConnectionEndToEndTest {
    private static final int THREADS = 3;
    private static final int PACKETS_PER_THREAD = 2000;

    /** Writers on threads of their own, each writing until told to stop, as an application's threads do. */
    private static final class Workload implements DataSourceHandler {
        /** Counted down by each thread once it holds its writer: a stop after that waits for its packets. */
        final CountDownLatch started = new CountDownLatch(THREADS);
        final Map<String, Integer> written = new ConcurrentHashMap<>();
        final List<Thread> threads = new ArrayList<>();

        @Override
        public void onStart(DataSourceInstance instance) {
            for (int t = 0; t < THREADS; t++) {
                String prefix = "thread-" + t + "-";
                threads.add(Thread.ofPlatform().start(() -> {
                    try (TraceWriter<TracePacket> writer = instance.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                        started.countDown();
                        for (int i = 0; i < PACKETS_PER_THREAD; i++) {
                            TracePacket packet = writer.newTracePacket();
                            // Every 100th packet spans chunks: fragments and patches.
                            packet.setTrackEvent().setName(prefix + i + (i % 100 == 0 ? "-" + "y".repeat(6000) : ""));
                            writer.finishTracePacket();
                            written.merge(prefix, 1, Integer::sum);
                        }
                    }
                }));
            }
        }

        @Override
        public void onStop(DataSourceInstance instance, Runnable done) {
            Thread.ofPlatform().start(() -> {
                threads.forEach(thread -> {
                    try {
                        thread.join();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
                done.run();
            });
        }
    }

    @Test
    void aJavaProducerWritesThroughTheProducerPortIntoASession() throws Exception {
        try (TracingService service = new TracingService()) {
            ProducerConnection.Stats stats = writeThroughThePort(service, options -> options);
            assertEquals(0, stats.localCommits());
        }
    }

    /**
     * Over TCP nothing is shared: the producer writes into a buffer of its own and sends
     * each chunk's bytes (shared memory emulation); the same packets, fragments and
     * patches arrive, from a machine named by the producer's boot id, as traced_relay
     * names its machine, whose SystemInfo and clocks the producer sent as a relay does.
     */
    @Test
    void aJavaProducerOverTcpWritesThroughSharedMemoryEmulation() throws Exception {
        try (TracingService service = new TracingService()) {
            byte[] trace = writeThroughThePort(service, TcpAddress.loopback(0), options -> options).trace();
            int machine = MachineIds.of(ThisMachine.bootId().getBytes(StandardCharsets.UTF_8), "127.0.0.1");
            List<String> stamps = trackEventStamps(trace);
            assertEquals(THREADS * PACKETS_PER_THREAD, stamps.size());
            assertEquals(List.of("machine " + machine + " pid " + Os.pid()), stamps.stream().distinct().toList());
            assertEquals(List.of("system_info " + machine, "remote_clock_sync " + machine), machinePackets(trace));
        }
    }

    /**
     * A flush that takes back the chunks of many idle writers at once makes one commit of
     * 256 KiB over TCP: it goes out in parts that each fit Perfetto's 128 KiB IPC frame
     * (a larger frame would cost the connection), and nothing is lost.
     */
    @Test
    void aCommitLargerThanAnIpcFrameGoesInParts() throws Exception {
        int writers = 64;
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, TcpAddress.loopback(0));
             ProducerConnection connection = ProducerConnection.connect(
                     ProducerConnection.Options.named("many-writers").withSocket(port.address()))) {
            assertTrue(connection.awaitConnected(Duration.ofSeconds(10)));
            CountDownLatch held = new CountDownLatch(1);
            List<TraceWriter<TracePacket>> open = new ArrayList<>();
            connection.registerDataSource(new DataSourceDescriptor("track_event", false, false, false, false),
                    new DataSourceHandler() {
                        @Override
                        public void onStart(DataSourceInstance instance) {
                            // Each writer keeps the chunk its packet went into until the flush takes it.
                            for (int w = 0; w < writers; w++) {
                                TraceWriter<TracePacket> writer = instance.newTraceWriter(BufferExhaustedPolicy.DROP);
                                writer.newTracePacket().setTrackEvent().setName("writer-" + w + "-" + "z".repeat(3000));
                                writer.finishTracePacket();
                                open.add(writer);
                            }
                            held.countDown();
                        }
                    });
            assertTrue(connection.sync().get(10, TimeUnit.SECONDS), "the registration reached the service");
            TracingSession session = service.startSession(SessionConfig.builder()
                    .buffer(4 * 1024, dev.ffmtrace.tracing.buffer.OverwritePolicy.DISCARD)
                    .dataSource("track_event").traceAllMachines().build());
            assertTrue(held.await(10, TimeUnit.SECONDS), "the writers hold their chunks");
            assertTrue(session.flush(Duration.ofSeconds(10)));
            ByteArrayOutputStream trace = new ByteArrayOutputStream();
            session.writeTrace(trace);
            List<String> names = new ArrayList<>();
            for (TracingServiceTest.Packet packet : TracingServiceTest.decode(trace.toByteArray())) {
                if (packet.name() != null) {
                    names.add(packet.name().substring(0, packet.name().indexOf('-', "writer-".length())));
                }
            }
            List<String> expected = new ArrayList<>();
            for (int w = 0; w < writers; w++) {
                expected.add("writer-" + w);
            }
            assertEquals(expected, names.stream().sorted(java.util.Comparator.comparingInt(
                    name -> Integer.parseInt(name.substring("writer-".length())))).toList());
            assertTrue(connection.isConnected(), "no frame was too large for the service");
            assertEquals(0, port.violations());
            assertEquals(0, connection.stats().commitsDropped());
            session.close();
        }
    }

    /** The packets that describe another machine: its SystemInfo and clock exchanges, with its id. */
    private static List<String> machinePackets(byte[] trace) {
        Trace.Decoder decoder = new Trace.Decoder();
        decoder.reset(MemorySegment.ofArray(trace));
        RepeatedFieldIterator packets = decoder.packet(new RepeatedFieldIterator());
        TracePacket.Decoder packet = new TracePacket.Decoder();
        List<String> found = new ArrayList<>();
        while (packets.next()) {
            packet.reset(packets.field());
            if (packet.hasMachineId() && packet.hasSystemInfo()) {
                found.add("system_info " + packet.machineId());
            }
            if (packet.hasRemoteClockSync()) {
                found.add("remote_clock_sync " + packet.machineId());
            }
        }
        return found;
    }

    /** Each TrackEvent packet's machine id and trusted pid, as text. */
    private static List<String> trackEventStamps(byte[] trace) {
        Trace.Decoder decoder = new Trace.Decoder();
        decoder.reset(MemorySegment.ofArray(trace));
        RepeatedFieldIterator packets = decoder.packet(new RepeatedFieldIterator());
        TracePacket.Decoder packet = new TracePacket.Decoder();
        TrackEvent.Decoder event = new TrackEvent.Decoder();
        List<String> stamps = new ArrayList<>();
        while (packets.next()) {
            packet.reset(packets.field());
            if (packet.trackEvent(event)) {
                stamps.add("machine " + (packet.hasMachineId() ? packet.machineId() : 0) + " pid " + packet.trustedPid());
            }
        }
        return stamps;
    }

    /**
     * A producer in the service's own process commits by calls (what the SDK's in-process
     * backend does): the same packets, fragments and patches arrive, and the flushes and
     * the stop, which still go over the socket, come after the chunks they cover.
     */
    @Test
    void aProducerInTheServicesProcessCommitsByCalls() throws Exception {
        try (TracingService service = new TracingService()) {
            ProducerConnection.Stats stats = writeThroughThePort(service,
                    options -> options.withLocalCommits(service::localCommitTransport));
            assertTrue(stats.localCommits() > 0, "commits by call: " + stats);
            assertEquals(0, stats.commitsDropped());
        }
    }

    /** Another service in the process has no producer with this SMB: the commits go over the socket. */
    @Test
    void aServiceWithoutTheProducersSmbLeavesItsCommitsOnTheSocket() throws Exception {
        try (TracingService service = new TracingService(); TracingService other = new TracingService()) {
            ProducerConnection.Stats stats = writeThroughThePort(service,
                    options -> options.withLocalCommits(other::localCommitTransport));
            assertEquals(0, stats.localCommits());
        }
    }

    private record Written(ProducerConnection.Stats stats, byte[] trace) {
    }

    private static ProducerConnection.Stats writeThroughThePort(
            TracingService service, UnaryOperator<ProducerConnection.Options> options) throws Exception {
        return writeThroughThePort(service, UnixAddress.abstractName("ffmtrace-e2e-" + System.nanoTime()), options)
                .stats();
    }

    private static Written writeThroughThePort(TracingService service, StreamAddress listenOn,
                                               UnaryOperator<ProducerConnection.Options> options) throws Exception {
        Workload workload = new Workload();
        IpcHost host = IpcHost.listen(listenOn);
        try (ProducerPort port = ProducerPort.expose(service, host);
             ProducerConnection connection = ProducerConnection.connect(options.apply(ProducerConnection.Options
                     .named("e2e").withSocket(host.address()).withSmbHints(1 << 20, 4096)))) {
            RelayPort.expose(service, host);
            assertTrue(connection.awaitConnected(Duration.ofSeconds(10)));
            assertTrue(connection.awaitClockSync(Duration.ofSeconds(10)), "a host on TCP has the machine's clocks");
            connection.registerDataSource(
                    new DataSourceDescriptor("track_event", false, true, false, false), workload);
            assertTrue(connection.sync().get(10, TimeUnit.SECONDS), "the registration reached the service");

            TracingSession session = service.startSession(SessionConfig.builder()
                    .buffer(16 * 1024, dev.ffmtrace.tracing.buffer.OverwritePolicy.DISCARD)
                    .dataSource("track_event").flushPeriodMs(50).traceAllMachines().build());
            // Stopped once every thread holds its writer (a writer asked for after the stop
            // would be a closed one); the handler's stop then waits for all their packets.
            assertTrue(workload.started.await(10, TimeUnit.SECONDS), "the producer's threads hold their writers");
            session.stop();
            ByteArrayOutputStream trace = new ByteArrayOutputStream();
            session.writeTrace(trace);

            Map<String, List<Integer>> read = new ConcurrentHashMap<>();
            for (TracingServiceTest.Packet packet : TracingServiceTest.decode(trace.toByteArray())) {
                if (packet.name() != null) {
                    String name = packet.name();
                    int dash = name.indexOf('-', "thread-".length());
                    String prefix = name.substring(0, dash + 1);
                    int end = name.indexOf('-', dash + 1);
                    read.computeIfAbsent(prefix, p -> new ArrayList<>())
                            .add(Integer.parseInt(name.substring(dash + 1, end < 0 ? name.length() : end)));
                }
            }
            assertEquals(THREADS, read.size());
            List<Integer> all = new ArrayList<>();
            for (int i = 0; i < PACKETS_PER_THREAD; i++) {
                all.add(i);
            }
            for (Map.Entry<String, List<Integer>> sequence : read.entrySet()) {
                assertEquals(all, sequence.getValue(), sequence.getKey() + ": every packet once, in order");
            }
            assertEquals(Map.of(), workload.written.entrySet().stream()
                    .filter(e -> e.getValue() != PACKETS_PER_THREAD)
                    .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue)), "no writer dropped");
            assertEquals(0, port.violations());
            assertEquals(0, connection.stats().commandsRejected());
            session.close();
            return new Written(connection.stats(), trace.toByteArray());
        }
    }
}
