package dev.ffmtrace.tracing.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.protozero.ProtoDecoder;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.service.InvalidConfigException;
import dev.ffmtrace.tracing.service.ProducerPort;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.service.TriggerConfig;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * One data source, written once, traced from platform and virtual threads into the
 * sessions of an in-process service, of a "system" one (a service of its own on a socket,
 * as {@code ffmtrace serve} is), and of both at once.
 */
class TracingTest {
    private static final int EVENTS = 500;

    /** Counts instances started, handing each session's instance state out in order. */
    private static final class Instances implements DataSourceCallbacks<String> {
        final BlockingQueue<String> started = new LinkedBlockingQueue<>();

        @Override
        public String onSetup(InstanceSetup setup) {
            return setup.backend() + "#" + setup.targetBuffer();
        }

        @Override
        public void onStart(String state) {
            started.add(state);
        }

        String next() throws InterruptedException {
            String state = started.poll(10, TimeUnit.SECONDS);
            assertNotNull(state, "an instance started");
            return state;
        }
    }

    @Test
    void twoSessionsOfTheInProcessServiceEachGetEveryEventOfEveryThread() throws Exception {
        Instances instances = new Instances();
        DataSource<String> source = DataSource.register(DataSourceDescriptor.named("sdk.two-sessions"), instances,
                BufferExhaustedPolicy.STALL);
        try (TracingService service = new TracingService()) {
            assertTrue(Tracing.initialize(TracingOptions.named("sdk-test").withInProcessBackend(service)));
            try {
                assertFalse(Tracing.initialize(TracingOptions.named("again")), "initialized once");
                TracingSession first = service.startSession(config("sdk.two-sessions"));
                TracingSession second = service.startSession(config("sdk.two-sessions"));
                List<String> states = List.of(instances.next(), instances.next());
                assertTrue(source.isEnabled());

                writeFromThreads(source);

                for (TracingSession session : List.of(first, second)) {
                    Map<String, Integer> events = events(stopAndRead(session));
                    assertEquals(expectedEvents(), events, "every event of every thread once, in " + session);
                    session.close();
                }
                assertEquals(2, states.stream().distinct().count(), "each instance has its own state");
                assertFalse(backendThreads().isEmpty(), "the backend runs threads, which shutdown must end");
                assertEquals(0, source.callbackFailures());
            } finally {
                Tracing.shutdown();
            }
        }
        assertFalse(source.isEnabled(), "shut down: no instance left");
        Await.until("the backends' threads ended", () -> backendThreads().isEmpty(), () -> backendThreads().toString());
    }

    /** Threads of the producer connection, its IPC client, and the in-process port's host and command sender. */
    private static List<String> backendThreads() {
        return Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
                .filter(name -> name.startsWith("perfetto-producer sdk-test") || name.startsWith("ipc-client")
                        || name.startsWith("ipc-host") || name.startsWith("ffmtrace-producer-commands sdk-test"))
                .toList();
    }

    @Test
    void aDataSourceRunsOnBothBackendsAtOnce() throws Exception {
        Instances instances = new Instances();
        DataSource<String> source = DataSource.register(DataSourceDescriptor.named("sdk.both"), instances,
                BufferExhaustedPolicy.STALL);
        UnixAddress systemSocket = UnixAddress.abstractName("ffmtrace-sdk-system-" + System.nanoTime());
        try (TracingService inProcess = new TracingService();
             TracingService system = new TracingService();
             ProducerPort systemPort = ProducerPort.listen(system, systemSocket)) {
            assertTrue(Tracing.initialize(TracingOptions.named("sdk-test")
                    .withInProcessBackend(inProcess).withSystemBackend(systemSocket)));
            try {
                TracingSession local = inProcess.startSession(config("sdk.both"));
                TracingSession remote = system.startSession(config("sdk.both"));
                List<String> states = List.of(instances.next(), instances.next());
                assertEquals(2, states.stream().map(state -> state.substring(0, state.indexOf('#'))).distinct().count(),
                        "one instance on each backend: " + states);

                writeFromThreads(source);

                assertEquals(expectedEvents(), events(stopAndRead(local)));
                assertEquals(expectedEvents(), events(stopAndRead(remote)));
                local.close();
                remote.close();
                assertEquals(0, systemPort.violations());
            } finally {
                Tracing.shutdown();
            }
        }
    }

    /** Tracing.activateTrigger reaches the STOP_TRACING sessions of both backends, which stop with what was written. */
    @Test
    void aTriggerStopsTheSessionsThatListenToItOnEveryBackend() throws Exception {
        Instances instances = new Instances();
        DataSource<String> source = DataSource.register(DataSourceDescriptor.named("sdk.trigger"), instances,
                BufferExhaustedPolicy.STALL);
        UnixAddress systemSocket = UnixAddress.abstractName("ffmtrace-sdk-system-" + System.nanoTime());
        try (TracingService inProcess = new TracingService();
             TracingService system = new TracingService();
             ProducerPort systemPort = ProducerPort.listen(system, systemSocket)) {
            assertTrue(Tracing.initialize(TracingOptions.named("sdk-test")
                    .withInProcessBackend(inProcess).withSystemBackend(systemSocket)));
            try {
                SessionConfig config = SessionConfig.builder().buffer(4096, OverwritePolicy.DISCARD)
                        .dataSource("sdk.trigger").triggerConfig(new TriggerConfig(TriggerConfig.Mode.STOP_TRACING,
                                List.of(new TriggerConfig.Trigger("anomaly", null, 0, 0, 0)), 60_000)).build();
                TracingSession local = inProcess.startSession(config);
                TracingSession remote = system.startSession(config);
                instances.next();
                instances.next();
                writeFromThreads(source);

                Tracing.activateTrigger(null);      // dropped, not thrown
                Tracing.activateTrigger("anomaly");
                local.completion().get(10, TimeUnit.SECONDS);
                remote.completion().get(10, TimeUnit.SECONDS);
                assertEquals(expectedEvents(), events(read(local)));
                assertEquals(expectedEvents(), events(read(remote)));
                local.close();
                remote.close();
            } finally {
                Tracing.shutdown();
            }
        }
    }

    @Test
    void aDataSourceRegisteredAfterInitializeIsOfferedToo() throws Exception {
        try (TracingService service = new TracingService()) {
            assertTrue(Tracing.initialize(TracingOptions.named("sdk-test").withInProcessBackend(service)));
            try {
                Instances instances = new Instances();
                DataSource<String> late = DataSource.register(DataSourceDescriptor.named("sdk.late"), instances,
                        BufferExhaustedPolicy.STALL);
                TracingSession session = service.startSession(config("sdk.late"));
                instances.next();
                late.trace(ctx -> ctx.newTracePacket().setTrackEvent().setName("late"));
                assertEquals(Map.of("late", 1), events(stopAndRead(session)));
                session.close();
            } finally {
                Tracing.shutdown();
            }
        }
    }

    @Test
    void theWritersOfEndedThreadsAreClosedOnceTheThreadsAreCollected() throws Exception {
        Instances instances = new Instances();
        DataSource<String> source = DataSource.register(DataSourceDescriptor.named("sdk.thread-ends"), instances,
                BufferExhaustedPolicy.STALL);
        try (TracingService service = new TracingService()) {
            assertTrue(Tracing.initialize(TracingOptions.named("sdk-test").withInProcessBackend(service)));
            try {
                TracingSession session = service.startSession(config("sdk.thread-ends"));
                instances.next();
                for (int t = 0; t < 20; t++) {
                    String name = "ended-" + t;
                    Thread.ofPlatform().start(() -> source.trace(ctx -> ctx.newTracePacket().setTrackEvent().setName(name)))
                            .join();
                }
                Await.until("the ended threads' writers closed", () -> {
                    System.gc();
                    return source.writersOfEndedThreads() == 20;
                }, () -> source.writersOfEndedThreads() + " of 20");
                Map<String, Integer> events = events(stopAndRead(session));
                for (int t = 0; t < 20; t++) {
                    assertEquals(1, events.get("ended-" + t), "ended-" + t);
                }
                session.close();
            } finally {
                Tracing.shutdown();
            }
        }
    }

    /** Two platform and two virtual threads, each writing {@link #EVENTS} named events into every instance. */
    private static void writeFromThreads(DataSource<String> source) throws InterruptedException {
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            String prefix = (t < 2 ? "platform-" : "virtual-") + t + "-";
            Runnable work = () -> {
                for (int i = 0; i < EVENTS; i++) {
                    String name = prefix + i;
                    source.trace(ctx -> {
                        TracePacket packet = ctx.newTracePacket();
                        packet.setTrackEvent().setName(name);
                        ctx.finishTracePacket();
                    });
                }
            };
            threads.add(t < 2 ? Thread.ofPlatform().start(work) : Thread.ofVirtual().start(work));
        }
        for (Thread thread : threads) {
            thread.join();
        }
    }

    private static Map<String, Integer> expectedEvents() {
        Map<String, Integer> expected = new HashMap<>();
        for (int t = 0; t < 4; t++) {
            for (int i = 0; i < EVENTS; i++) {
                expected.put((t < 2 ? "platform-" : "virtual-") + t + "-" + i, 1);
            }
        }
        return expected;
    }

    private static SessionConfig config(String dataSource) throws InvalidConfigException {
        return SessionConfig.builder().buffer(4096, OverwritePolicy.DISCARD).dataSource(dataSource).build();
    }

    private static byte[] stopAndRead(TracingSession session) throws IOException {
        session.stop();
        return read(session);
    }

    private static byte[] read(TracingSession session) throws IOException {
        ByteArrayOutputStream trace = new ByteArrayOutputStream();
        session.writeTrace(trace);
        return trace.toByteArray();
    }

    /** How many times each track event name occurs in the trace. */
    private static Map<String, Integer> events(byte[] trace) {
        Map<String, Integer> names = new HashMap<>();
        ProtoDecoder packets = new ProtoDecoder().reset(MemorySegment.ofArray(trace));
        TracePacket.Decoder packet = new TracePacket.Decoder();
        TrackEvent.Decoder event = new TrackEvent.Decoder();
        while (packets.next()) {
            if (packets.field().id() != Trace.PACKET_FIELD_NUMBER) {
                continue;
            }
            packet.reset(packets.field());
            if (packet.trackEvent(event) && event.hasName()) {
                names.merge(event.name(), 1, Integer::sum);
            }
        }
        return names;
    }
}
