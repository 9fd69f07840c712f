package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.producer.internal.DataSourceHandler;
import dev.ffmtrace.tracing.producer.internal.DataSourceInstance;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * One data source of a producer in another process serves up to 8 sessions at once, as
 * Perfetto's service and SDK allow: each session gets an instance of its own, with its own
 * config and buffer, and a ninth waits until one of them stops.
 */
class DataSourceInstancesTest {
    /** The instances the service started, in order, and the ids of those it stopped. */
    private static final class Instances implements DataSourceHandler {
        final BlockingQueue<DataSourceInstance> started = new LinkedBlockingQueue<>();
        final BlockingQueue<Long> stopped = new LinkedBlockingQueue<>();

        @Override
        public void onStart(DataSourceInstance instance) {
            started.add(instance);
        }

        @Override
        public void onStop(DataSourceInstance instance, Runnable done) {
            stopped.add(instance.id());
            done.run();
        }

        DataSourceInstance next() throws InterruptedException {
            DataSourceInstance instance = started.poll(10, TimeUnit.SECONDS);
            assertNotNull(instance, "the service started an instance");
            return instance;
        }
    }

    @Test
    void eightSessionsGetAnInstanceEachAndANinthGetsTheFirstOneToStop() throws Exception {
        UnixAddress address = UnixAddress.abstractName("ffmtrace-instances-" + System.nanoTime());
        Instances instances = new Instances();
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address);
             ProducerConnection connection = ProducerConnection.connect(
                     ProducerConnection.Options.named("instances").withSocket(address))) {
            assertTrue(connection.awaitConnected(Duration.ofSeconds(10)));
            connection.registerDataSource(DataSourceDescriptor.named("track_event"), instances);
            assertTrue(connection.sync().get(10, TimeUnit.SECONDS), "the registration reached the service");

            List<TracingSession> sessions = new ArrayList<>();
            List<DataSourceInstance> started = new ArrayList<>();
            for (int i = 0; i < DataSource.MAX_INSTANCES; i++) {
                sessions.add(service.startSession(config()));
                DataSourceInstance instance = instances.next();
                started.add(instance);
                write(instance, "session " + i);
                assertEquals(List.of(), sessions.get(i).warnings());
            }
            assertEquals(DataSource.MAX_INSTANCES, started.stream().map(DataSourceInstance::id).distinct().count());
            assertEquals(DataSource.MAX_INSTANCES,
                    started.stream().map(DataSourceInstance::targetBuffer).distinct().count(), "a buffer each");

            TracingSession ninth = service.startSession(config());
            assertEquals(List.of(new DataSourceWarning("track_event", 0,
                    DataSourceWarning.Reason.TAKEN_BY_ANOTHER_SESSION)), ninth.warnings());

            sessions.getFirst().stop();
            assertEquals(started.getFirst().id(), instances.stopped.poll(10, TimeUnit.SECONDS),
                    "the first session's instance stopped, and only it");
            DataSourceInstance ninthInstance = instances.next();
            assertEquals(List.of(), ninth.warnings());
            write(ninthInstance, "session 8");
            sessions.add(ninth);

            for (int i = 0; i < sessions.size(); i++) {
                TracingSession session = sessions.get(i);
                session.stop();
                ByteArrayOutputStream trace = new ByteArrayOutputStream();
                session.writeTrace(trace);
                List<String> names = TracingServiceTest.decode(trace.toByteArray()).stream()
                        .map(TracingServiceTest.Packet::name).filter(name -> name != null).toList();
                assertEquals(List.of("session " + i), names, "each session holds its own instance's packet");
                session.close();
            }
            assertEquals(List.of(), List.copyOf(instances.started), "no instance started for nothing");
            assertEquals(0, port.violations());
        }
    }

    private static SessionConfig config() throws InvalidConfigException {
        return SessionConfig.builder().buffer(64 * 1024, OverwritePolicy.DISCARD).dataSource("track_event").build();
    }

    /** One packet, committed by closing its writer. */
    private static void write(DataSourceInstance instance, String name) {
        try (TraceWriter<TracePacket> writer = instance.newTraceWriter(BufferExhaustedPolicy.STALL)) {
            writer.newTracePacket().setTrackEvent().setName(name);
            writer.finishTracePacket();
        }
    }
}
