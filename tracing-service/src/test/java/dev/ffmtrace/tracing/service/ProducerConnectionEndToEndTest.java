package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.producer.DataSourceHandler;
import dev.ffmtrace.tracing.producer.DataSourceInstance;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.ByteArrayOutputStream;
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
 * real socket: each side is tested against Perfetto's own programs elsewhere; here they
 * meet each other.
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

    private static ProducerConnection.Stats writeThroughThePort(
            TracingService service, UnaryOperator<ProducerConnection.Options> options) throws Exception {
        UnixAddress address = UnixAddress.abstractName("ffmtrace-e2e-" + System.nanoTime());
        Workload workload = new Workload();
        try (ProducerPort port = ProducerPort.listen(service, address);
             ProducerConnection connection = ProducerConnection.connect(options.apply(
                     ProducerConnection.Options.named("e2e").withSocket(address).withSmbHints(1 << 20, 4096)))) {
            assertTrue(connection.awaitConnected(Duration.ofSeconds(10)));
            connection.registerDataSource(
                    new DataSourceDescriptor("track_event", false, true, false, false), workload);
            assertTrue(connection.sync().get(10, TimeUnit.SECONDS), "the registration reached the service");

            TracingSession session = service.startSession(SessionConfig.builder()
                    .buffer(16 * 1024, dev.ffmtrace.tracing.buffer.OverwritePolicy.DISCARD)
                    .dataSource("track_event").flushPeriodMs(50).build());
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
            return connection.stats();
        }
    }
}
