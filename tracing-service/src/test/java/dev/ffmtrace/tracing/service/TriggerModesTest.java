package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.producer.internal.DataSourceHandler;
import dev.ffmtrace.tracing.producer.internal.DataSourceInstance;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.channels.Channels;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The trigger modes end to end, with a producer connected over the producer socket:
 * STOP_TRACING stops {@code stop_delay_ms} after the trigger with the producer's packets
 * and a {@code trigger} packet naming it; START_TRACING starts the data sources on the
 * trigger and records {@code stop_delay_ms}; a session no trigger reached stops at
 * {@code trigger_timeout_ms} with an empty trace, as Perfetto's returns no data; and
 * {@code deferred_start} waits for {@link TracingSession#startTracing()}.
 */
class TriggerModesTest {
    private static final String DATA_SOURCE = "trigger_test";
    private static final ProducerConnection.RetryDelays FAST = new ProducerConnection.RetryDelays(
            Duration.ofMillis(20), Duration.ofMillis(20), Duration.ofMillis(100), Duration.ofMillis(100));

    /** Writes {@code packets} named packets as soon as an instance starts. */
    private static DataSourceHandler writing(int packets, CompletableFuture<Void> written) {
        return new DataSourceHandler() {
            @Override
            public void onStart(DataSourceInstance instance) {
                try (TraceWriter<TracePacket> writer = instance.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                    for (int i = 0; i < packets; i++) {
                        writer.newTracePacket().setTrackEvent().setName("event-" + i);
                        writer.finishTracePacket();
                    }
                }
                written.complete(null);
            }
        };
    }

    /** A service, its producer port, and a producer connected to it, with the data source registered if a handler is given. */
    private record Rig(TracingService service, ProducerPort port, ProducerConnection connection) implements AutoCloseable {
        static Rig connect(String producerName, DataSourceHandler handler) throws Exception {
            UnixAddress address = UnixAddress.abstractName("ffmtrace-trigger-" + System.nanoTime());
            TracingService service = new TracingService();
            ProducerPort port = ProducerPort.listen(service, address);
            ProducerConnection connection = ProducerConnection.connect(
                    ProducerConnection.Options.named(producerName).withSocket(address));
            Rig rig = new Rig(service, port, connection);
            try {
                assertTrue(connection.awaitConnected(Duration.ofSeconds(10)));
                if (handler != null) {
                    connection.registerDataSource(DataSourceDescriptor.named(DATA_SOURCE), handler);
                    assertTrue(connection.sync().get(10, TimeUnit.SECONDS));
                }
                return rig;
            } catch (Exception | AssertionError e) {
                rig.close();
                throw e;
            }
        }

        @Override
        public void close() {
            connection.close();
            port.close();
            service.close();
        }
    }

    private static SessionConfig stopTracing(long timeoutMs, long stopDelayMs) throws InvalidConfigException {
        return SessionConfig.builder().buffer(256, OverwritePolicy.RING_BUFFER).dataSource(DATA_SOURCE)
                .triggerConfig(new TriggerConfig(TriggerConfig.Mode.STOP_TRACING,
                        List.of(new TriggerConfig.Trigger("crash", null, stopDelayMs, 0, 0)), timeoutMs))
                .build();
    }

    private static SessionConfig startTracing(long timeoutMs, long stopDelayMs) throws InvalidConfigException {
        return SessionConfig.builder().buffer(256, OverwritePolicy.RING_BUFFER).dataSource(DATA_SOURCE)
                .triggerConfig(new TriggerConfig(TriggerConfig.Mode.START_TRACING,
                        List.of(new TriggerConfig.Trigger("go", null, stopDelayMs, 0, 0)), timeoutMs))
                .build();
    }

    private static long events(byte[] trace) {
        return TracingServiceTest.decode(trace).stream().filter(p -> p.name() != null).count();
    }

    private static byte[] trace(TracingSession session) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        session.writeTrace(out);
        return out.toByteArray();
    }

    @Test
    void aProducersTriggerStopsTheSessionWithItsDataAndATriggerPacket() throws Exception {
        CompletableFuture<Void> written = new CompletableFuture<>();
        try (Rig rig = Rig.connect("crash-reporter", writing(100, written))) {
            TracingSession session = rig.service().startSession(stopTracing(60_000, 50));
            written.get(10, TimeUnit.SECONDS);
            assertFalse(session.isStopped());

            rig.connection().activateTriggers(List.of("crash"), Duration.ofSeconds(10));
            session.completion().get(10, TimeUnit.SECONDS);

            byte[] trace = trace(session);
            assertEquals(100, TracingServiceTest.decode(trace).stream().filter(p -> p.name() != null).count());
            List<TriggersTest.Seen> triggers = TriggersTest.triggersIn(trace);
            assertEquals(1, triggers.size());
            TriggersTest.Seen trigger = triggers.getFirst();
            assertEquals(List.of("crash", "crash-reporter", Os.uid(), 50L),
                    List.of(trigger.name(), trigger.producer(), trigger.uid(), trigger.stopDelayMs()));
            assertEquals(new TriggerStats(1, 0, 0, 0), rig.service().triggerStats());
            session.close();
        }
    }

    @Test
    void aSessionNoTriggerReachedStopsAtItsTimeoutWithAnEmptyTrace() throws Exception {
        CompletableFuture<Void> written = new CompletableFuture<>();
        try (Rig rig = Rig.connect("quiet", writing(100, written))) {
            TracingSession session = rig.service().startSession(stopTracing(200, 0));
            written.get(10, TimeUnit.SECONDS);
            // A trigger the session does not listen to changes nothing.
            rig.connection().activateTriggers(List.of("other"), Duration.ofSeconds(10));
            assertTrue(rig.connection().sync().get(10, TimeUnit.SECONDS));
            assertEquals(new TriggerStats(1, 1, 0, 0), rig.service().triggerStats());

            session.completion().get(10, TimeUnit.SECONDS);
            assertEquals(0, trace(session).length, "no data at all, not even the service's packets");
            ByteArrayOutputStream snapshot = new ByteArrayOutputStream();
            session.writeSnapshot(snapshot);
            assertEquals(100, TracingServiceTest.decode(snapshot.toByteArray()).stream()
                    .filter(p -> p.name() != null).count(), "a snapshot (a clone, in Perfetto) still reads it");
            session.close();
        }
    }

    @Test
    void aStartTracingSessionStartsItsDataSourcesOnTheTriggerAndRecordsStopDelayMs() throws Exception {
        CompletableFuture<Void> written = new CompletableFuture<>();
        try (Rig rig = Rig.connect("starter", writing(100, written))) {
            TracingSession session = rig.service().startSession(startTracing(60_000, 100));
            assertFalse(session.isStarted());
            assertEquals(0, trace(session).length, "nothing to read before the trigger");

            rig.connection().activateTriggers(List.of("go"), Duration.ofSeconds(10));
            written.get(10, TimeUnit.SECONDS);
            assertTrue(session.isStarted());
            session.completion().get(10, TimeUnit.SECONDS);
            byte[] trace = trace(session);
            assertEquals(100, events(trace));
            assertEquals(List.of("go"), TriggersTest.triggersIn(trace).stream().map(TriggersTest.Seen::name).toList());
            session.close();
        }
    }

    @Test
    void aStartTracingSessionNoTriggerStartedEndsAtItsTimeoutWithoutStartingItsDataSources() throws Exception {
        CompletableFuture<Void> written = new CompletableFuture<>();
        try (Rig rig = Rig.connect("starter", writing(100, written))) {
            TracingSession session = rig.service().startSession(startTracing(200, 0));
            session.completion().get(10, TimeUnit.SECONDS);
            assertFalse(session.isStarted());
            assertEquals(0, trace(session).length);
            // The producer has handled every command the service sent by now: no start among them.
            assertTrue(rig.connection().sync().get(10, TimeUnit.SECONDS));
            assertFalse(written.isDone());
            session.close();
        }
    }

    @Test
    void aDeferredStartWaitsForStartTracing() throws Exception {
        CompletableFuture<Void> written = new CompletableFuture<>();
        try (Rig rig = Rig.connect("deferred", writing(100, written))) {
            TracingSession session = rig.service().startSession(SessionConfig.builder().buffer(256, OverwritePolicy.DISCARD)
                    .dataSource(DATA_SOURCE).deferredStart().build());
            assertFalse(session.isStarted());
            session.startTracing();
            written.get(10, TimeUnit.SECONDS);
            session.stop();
            assertEquals(100, events(trace(session)));
            session.close();
        }
    }

    /**
     * CLONE_SNAPSHOT: consuming reads give nothing; each trigger, stop_delay_ms later, tells
     * whoever clones the session, and a clone made for it holds the data, the
     * clone_snapshot_trigger and the triggers, which move into the clone.
     */
    @Test
    void aCloneSnapshotSessionIsReadOnlyThroughClonesMadeOnItsTriggers() throws Exception {
        CompletableFuture<Void> written = new CompletableFuture<>();
        try (Rig rig = Rig.connect("snapper", writing(100, written))) {
            TracingSession session = rig.service().startSession(SessionConfig.builder()
                    .buffer(256, OverwritePolicy.RING_BUFFER).dataSource(DATA_SOURCE)
                    .triggerConfig(new TriggerConfig(TriggerConfig.Mode.CLONE_SNAPSHOT,
                            List.of(new TriggerConfig.Trigger("snap", null, 20, 0, 0)), 60_000)).build());
            BlockingQueue<TriggerHit> hits = new LinkedBlockingQueue<>();
            session.onCloneTrigger(hits::add);
            written.get(10, TimeUnit.SECONDS);
            session.flush();

            rig.connection().activateTriggers(List.of("snap"), Duration.ofSeconds(10));
            TriggerHit hit = hits.poll(10, TimeUnit.SECONDS);
            assertEquals(List.of("snap", "snapper", 20L), List.of(hit.name(), hit.producerName(), hit.stopDelayMs()));
            assertEquals(0, trace(session).length, "a CLONE_SNAPSHOT session is read through clones only");
            assertFalse(session.isStopped());

            ByteArrayOutputStream clone = new ByteArrayOutputStream();
            try (SessionClone taken = session.cloneSession(hit)) {
                taken.write(Channels.newChannel(clone));
            }
            assertEquals(100, events(clone.toByteArray()));
            assertEquals(List.of("snap"), TriggersTest.triggersIn(clone.toByteArray()).stream()
                    .map(TriggersTest.Seen::name).toList());
            assertEquals(1, cloneSnapshotTriggers(clone.toByteArray()));
            ByteArrayOutputStream again = new ByteArrayOutputStream();
            try (SessionClone taken = session.cloneSession(null)) {
                taken.write(Channels.newChannel(again));
            }
            assertEquals(100, events(again.toByteArray()), "a clone does not consume");
            assertEquals(List.of(), TriggersTest.triggersIn(again.toByteArray()), "the first clone took the triggers");
            assertEquals(0, cloneSnapshotTriggers(again.toByteArray()));
            session.close();
        }
    }

    /**
     * A CLONE_SNAPSHOT trigger sent the moment the data source starts, inside the service's
     * start of the session (its data source's start handler sends it: before the session's
     * timers start, and before startSession returns and the owner can set its listener),
     * still reaches the listener set afterwards.
     */
    @Test
    void aCloneTriggerSentAsTheDataSourceStartsReachesTheListenerSetAfter() throws Exception {
        try (TracingService service = new TracingService()) {
            Producer producer = service.connectProducer(ProducerOptions.of("early"));
            producer.registerDataSource(DATA_SOURCE).onStart(
                    config -> service.activateTriggers("early", 1000, List.of("snap")));
            TracingSession session = service.startSession(SessionConfig.builder()
                    .buffer(64, OverwritePolicy.RING_BUFFER).dataSource(DATA_SOURCE)
                    .triggerConfig(new TriggerConfig(TriggerConfig.Mode.CLONE_SNAPSHOT,
                            List.of(new TriggerConfig.Trigger("snap", null, 0, 0, 0)), 60_000)).build());
            BlockingQueue<TriggerHit> hits = new LinkedBlockingQueue<>();
            session.onCloneTrigger(hits::add);
            TriggerHit hit = hits.poll(10, TimeUnit.SECONDS);
            assertEquals(List.of("snap", "early"), hit == null ? null : List.of(hit.name(), hit.producerName()));
        }
    }

    private static int cloneSnapshotTriggers(byte[] trace) {
        Trace.Decoder decoder = new Trace.Decoder();
        decoder.reset(MemorySegment.ofArray(trace));
        RepeatedFieldIterator packets = decoder.packet(new RepeatedFieldIterator());
        TracePacket.Decoder packet = new TracePacket.Decoder();
        int count = 0;
        while (packets.next()) {
            packet.reset(packets.field());
            if (packet.hasCloneSnapshotTrigger()) {
                count++;
            }
        }
        return count;
    }

    /**
     * A producer that fires 10,000 listened-to and 10,000 unknown triggers as fast as it can:
     * each is counted, the session keeps the first thousand for its trace and counts the
     * rest, and the service answers the producer's Sync after them all.
     */
    @Test
    void aFloodOfTriggersIsCountedAndBounded() throws Exception {
        try (Rig rig = Rig.connect("flood", null)) {
            TracingSession session = rig.service().startSession(SessionConfig.builder().buffer(64, OverwritePolicy.DISCARD)
                    .triggerConfig(new TriggerConfig(TriggerConfig.Mode.UNSPECIFIED,
                            List.of(new TriggerConfig.Trigger("t", null, 0, 0, 0)), 0)).build());
            for (int i = 0; i < 10_000; i++) {
                rig.connection().activateTriggers(List.of("t", "unknown-" + i), Duration.ZERO);
            }
            assertTrue(rig.connection().sync().get(30, TimeUnit.SECONDS));
            assertEquals(new TriggerStats(20_000, 10_000, 0, 0), rig.service().triggerStats());
            assertEquals(10_000 - SessionTriggers.MAX_RECORDED, session.triggersNotRecorded());
            assertEquals(SessionTriggers.MAX_RECORDED, TriggersTest.triggersIn(trace(session)).size());
            assertEquals(0, rig.connection().stats().triggersDropped());
            assertEquals(0, rig.port().violations());
            session.close();
        }
    }

    @Test
    void triggersActivatedBeforeTheServiceIsThereGoOnceItIsWithinTheirTimeToLive() throws Exception {
        UnixAddress address = UnixAddress.abstractName("ffmtrace-trigger-" + System.nanoTime());
        try (TracingService service = new TracingService();
             ProducerConnection connection = ProducerConnection.connect(
                     ProducerConnection.Options.named("early").withSocket(address).withRetryDelays(FAST))) {
            TracingSession session = service.startSession(stopTracing(60_000, 0));
            connection.activateTriggers(List.of("crash"), Duration.ZERO);
            connection.activateTriggers(List.of("crash"), Duration.ofMinutes(1));
            try (ProducerPort port = ProducerPort.listen(service, address)) {
                assertTrue(connection.awaitConnected(Duration.ofSeconds(10)));
                assertTrue(connection.sync().get(10, TimeUnit.SECONDS));
                session.completion().get(10, TimeUnit.SECONDS);
                assertEquals(1, service.triggerStats().activations(), "the expired one was not sent");
                assertEquals(1, connection.stats().triggersDropped());
                assertEquals(1, TriggersTest.triggersIn(trace(session)).size());
                session.close();
            }
        }
    }
}
