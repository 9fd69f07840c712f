package dev.ffmtrace.tracing.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.perfetto.protos.TrackEventConfig;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.trackevent.Category;
import dev.ffmtrace.tracing.trackevent.InternedName;
import dev.ffmtrace.tracing.trackevent.Track;
import dev.ffmtrace.tracing.trackevent.TrackEventReader;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * The facade as the demo uses it: three categories, one tagged "debug", and three
 * sessions at once, each recording what its track_event_config selects, from platform and
 * virtual threads.
 */
class TrackEventTest {
    private static final Category REQUESTS = new Category("requests");
    private static final Category QUEUE = new Category("queue");
    private static final Category DEMO_DEBUG = new Category("demo.debug", "debug");
    private static final int ITERATIONS = 200;

    @Test
    void eachSessionRecordsTheCategoriesItsConfigSelects() throws Exception {
        TrackEvent.register(REQUESTS, QUEUE, DEMO_DEBUG);
        try (TracingService service = new TracingService()) {
            assertTrue(Tracing.initialize(TracingOptions.named("facade-test").withInProcessBackend(service)));
            try {
                TracingSession plain = service.startSession(config(null));
                TracingSession queueOnly = service.startSession(config(c -> {
                    c.addEnabledCategories("queue");
                    c.addDisabledCategories("*");
                }));
                TracingSession debug = service.startSession(config(c -> c.addEnabledTags("debug")));
                // Each session's instance decides the categories when it starts.
                assertTrue(TrackEvent.awaitSessions(3, Duration.ofMinutes(1)));
                assertEquals(3, Integer.bitCount(QUEUE.sessionMask()), "each session decided queue when it started");

                List<Thread> threads = List.of(Thread.ofPlatform().start(TrackEventTest::work),
                        Thread.ofVirtual().start(TrackEventTest::work));
                for (Thread thread : threads) {
                    thread.join();
                }

                assertEquals(Map.of("requests", 2 * ITERATIONS, "queue", 2 * ITERATIONS), eventsByCategory(plain));
                assertEquals(Map.of("queue", 2 * ITERATIONS), eventsByCategory(queueOnly));
                assertEquals(Map.of("requests", 2 * ITERATIONS, "queue", 2 * ITERATIONS, "demo.debug", 2 * ITERATIONS),
                        eventsByCategory(debug));
                assertEquals(0, TrackEvent.malformedPatterns());
                for (TracingSession session : List.of(plain, queueOnly, debug)) {
                    session.close();
                }
            } finally {
                Tracing.shutdown();
            }
        }
        assertEquals(0, REQUESTS.sessionMask(), "no session left");
    }

    /**
     * The README's three lines: categories never registered are decided at their first
     * event, against every session already running, and again when one comes later.
     */
    @Test
    void aCategoryNeverRegisteredIsDecidedAtItsFirstEvent() throws Exception {
        Category rpc = new Category("test.unregistered");
        Category detail = new Category("test.unregistered.detail", "debug");
        assertEquals(Category.SESSIONS_UNDECIDED, rpc.sessionMask());
        try (TracingService service = new TracingService()) {
            assertTrue(Tracing.initialize(TracingOptions.named("facade-test").withInProcessBackend(service)));
            try {
                TracingSession first = service.startSession(config(null));
                assertTrue(TrackEvent.awaitSessions(1, Duration.ofMinutes(1)));
                for (int i = 0; i < ITERATIONS; i++) {
                    try (var _ = TrackEvent.slice(rpc, "handle request")) {
                        TrackEvent.instant(detail, "detail");
                    }
                }
                TracingSession debug = service.startSession(config(c -> c.addEnabledTags("debug")));
                assertTrue(TrackEvent.awaitSessions(2, Duration.ofMinutes(1)));
                TrackEvent.instant(detail, "detail");

                assertEquals(Map.of("test.unregistered", ITERATIONS), eventsByCategory(first));
                assertEquals(Map.of("test.unregistered.detail", 1), eventsByCategory(debug),
                        "decided again when the debug session started");
                first.close();
                debug.close();
            } finally {
                Tracing.shutdown();
            }
        }
    }

    /** An observer hears each session's start, after its categories are decided, and its stop, before they are undone. */
    @Test
    void observersHearEachSessionStartAndStop() throws Exception {
        Category observed = new Category("test.observed");
        TrackEvent.register(observed);
        List<String> heard = new java.util.concurrent.CopyOnWriteArrayList<>();
        TrackEvent.SessionObserver observer = new TrackEvent.SessionObserver() {
            @Override
            public void onStart(InstanceSetup instance) {
                heard.add("start " + instance.instanceId() + " mask " + observed.sessionMask());
            }

            @Override
            public void onStop(TrackEvent.SessionStop stop) {
                heard.add("stop " + stop.instance().instanceId() + " mask " + observed.sessionMask());
            }
        };
        withObserver(observer, service -> {
            TracingSession session = service.startSession(config(null));
            assertTrue(TrackEvent.awaitSessions(1, Duration.ofMinutes(1)));
            session.close();
            Await.until("the stop heard", () -> heard.size() == 2, heard::toString);
            assertTrue(heard.getFirst().startsWith("start ") && heard.getFirst().endsWith(" mask 1"), heard.toString());
            assertEquals(heard.getFirst().replace("start", "stop"), heard.get(1),
                    "the same instance, still recording when its observers hear of the stop");
            Await.until("the session's categories undone after its observers heard", () -> observed.sessionMask() == 0);
        });
    }

    /** What a test does with the SDK's in-process backend on a service of its own. */
    @FunctionalInterface
    private interface WithService {
        void run(TracingService service) throws Exception;
    }

    /** Runs {@code body} with {@code observer} added and the SDK on a fresh in-process service; undoes both. */
    private static void withObserver(TrackEvent.SessionObserver observer, WithService body) throws Exception {
        TrackEvent.addSessionObserver(observer);
        try (TracingService service = new TracingService()) {
            assertTrue(Tracing.initialize(TracingOptions.named("facade-test").withInProcessBackend(service)));
            try {
                body.run(service);
            } finally {
                Tracing.shutdown();
            }
        } finally {
            TrackEvent.removeSessionObserver(observer);
        }
    }

    /** An observer that holds the stop keeps the session recording until it lets go: its threads' last events go in. */
    @Test
    void anObserverThatHoldsTheStopGetsItsLastEventsIn() throws Exception {
        Category held = new Category("test.held");
        TrackEvent.register(held);
        CompletableFuture<Runnable> holding = new CompletableFuture<>();
        TrackEvent.SessionObserver observer = new TrackEvent.SessionObserver() {
            @Override
            public void onStop(TrackEvent.SessionStop stop) {
                holding.complete(stop.handleStopAsynchronously());
            }
        };
        withObserver(observer, service -> {
            TracingSession session = service.startSession(config(null));
            assertTrue(TrackEvent.awaitSessions(1, Duration.ofMinutes(1)));
            Thread stopping = Thread.ofPlatform().start(session::stop);
            Runnable letGo = holding.get(1, TimeUnit.MINUTES);
            assertEquals(1, held.sessionMask(), "still recording while the stop is held");
            Thread.ofPlatform().start(() -> TrackEvent.instant(held, "last")).join();
            letGo.run();
            letGo.run();
            stopping.join();
            Await.until("the session's categories undone once the stop is let go", () -> held.sessionMask() == 0);
            assertEquals(Map.of("test.held", 1), eventsByCategory(session));
            session.close();
        });
    }

    /** Once awaitRegistrations returns true, a session started on the in-process service finds every data source. */
    @Test
    void aSessionStartedAfterTheRegistrationsFindsItsDataSources() throws Exception {
        try (TracingService service = new TracingService()) {
            assertTrue(Tracing.initialize(TracingOptions.named("facade-test").withInProcessBackend(service)));
            try {
                assertTrue(Tracing.awaitRegistrations(Duration.ofMinutes(1)));
                TracingSession session = service.startSession(config(null));
                assertEquals(List.of(), session.warnings());
                assertEquals(0, session.dataSourcesNotStarted());
                session.close();
            } finally {
                Tracing.shutdown();
            }
        }
        assertFalse(Tracing.awaitRegistrations(Duration.ZERO), "no backends: nothing to wait for, and not done");
    }

    @Test
    void aScopeClosedOutOfOrderThrowsAndTheOthersStillEnd() throws Exception {
        Category nested = new Category("test.nested");
        TrackEvent.register(nested);
        try (TracingService service = new TracingService()) {
            assertTrue(Tracing.initialize(TracingOptions.named("facade-test").withInProcessBackend(service)));
            try {
                TracingSession session = service.startSession(config(null));
                assertTrue(TrackEvent.awaitSessions(1, Duration.ofMinutes(1)));
                assertTrue(nested.sessionMask() > 0);
                TrackEvent.Scope outer = TrackEvent.slice(nested, "outer");
                TrackEvent.Scope inner = TrackEvent.slice(nested, "inner");
                assertThrows(IllegalStateException.class, outer::close);
                inner.close();
                outer.close();
                assertEquals(Map.of("test.nested", 2), eventsByCategory(session));
                session.close();
            } finally {
                Tracing.shutdown();
            }
        }
    }

    @Test
    void namesArgumentsFlowsAndTracksAsTheWriterWritesThem() throws Exception {
        Category rich = new Category("test.rich");
        InternedName handle = InternedName.of("handle");
        InternedName bytes = InternedName.of("bytes");
        TrackEvent.register(rich);
        try (TracingService service = new TracingService()) {
            assertTrue(Tracing.initialize(TracingOptions.named("facade-test").withInProcessBackend(service)));
            try {
                TracingSession session = service.startSession(config(null));
                assertTrue(TrackEvent.awaitSessions(1, Duration.ofMinutes(1)));
                Track queue = Track.named(TrackEvent.processTrack(), "queue");
                Runnable work = () -> {
                    try (var _ = TrackEvent.slice(rich, handle, bytes, 512)) {
                        try (var _ = TrackEvent.slice(rich, handle, 7, 0)) {
                            TrackEvent.instant(rich, handle);
                        }
                    }
                    try (var _ = TrackEvent.slice(rich, queue, "dequeue")) {
                        TrackEvent.instant(rich, queue, "picked");
                    }
                };
                Thread.ofPlatform().name("platform worker").start(work).join();
                Thread.ofVirtual().name("virtual worker").start(work).join();
                Map<String, List<String>> byTrack = eventsByTrack(session, event ->
                        event.typeEnum().name().replace("TYPE_", "") + (event.name() != null ? ":" + event.name() : "")
                                + (event.debugAnnotations().isEmpty() ? "" : event.debugAnnotations())
                                + (event.flowIds().isEmpty() ? "" : " flow " + event.flowIds()));
                List<String> thread = List.of("SLICE_BEGIN:handle[bytes=512]", "SLICE_BEGIN:handle flow [7]",
                        "INSTANT:handle", "SLICE_END", "SLICE_END");
                List<String> onQueue = List.of("SLICE_BEGIN:dequeue", "INSTANT:picked", "SLICE_END");
                assertEquals(Map.of("platform worker", thread, "virtual worker", thread,
                        "queue", concat(onQueue, onQueue)), byTrack);
                session.close();
            } finally {
                Tracing.shutdown();
            }
        }
    }

    /**
     * begin/end pair per thread with the scopes around them, whatever a category's state:
     * the end of an unrecorded begin does not end the scope that holds it.
     */
    @Test
    void beginAndEndPairPerThreadWhateverTheCategory() throws Exception {
        Category recorded = new Category("test.begin");
        Category unrecorded = new Category("test.begin.debug", "debug");
        InternedName inner = InternedName.of("inner");
        TrackEvent.register(recorded, unrecorded);
        try (TracingService service = new TracingService()) {
            assertTrue(Tracing.initialize(TracingOptions.named("facade-test").withInProcessBackend(service)));
            try {
                TracingSession session = service.startSession(config(null));
                assertTrue(TrackEvent.awaitSessions(1, Duration.ofMinutes(1)));
                Runnable work = () -> {
                    TrackEvent.begin(recorded, "outer");
                    try (var _ = TrackEvent.slice(recorded, "scoped")) {
                        TrackEvent.begin(unrecorded, "not recorded");
                        TrackEvent.begin(recorded, inner);
                        TrackEvent.end();
                        TrackEvent.end();
                    }
                    TrackEvent.end();
                };
                Thread.ofPlatform().name("platform worker").start(work).join();
                Thread.ofVirtual().name("virtual worker").start(work).join();

                long unmatched = TrackEvent.unmatchedEnds();
                Thread.ofPlatform().start(TrackEvent::end).join();
                assertEquals(unmatched + 1, TrackEvent.unmatchedEnds(), "an end with no begin is counted");
                try (var _ = TrackEvent.slice(recorded, "a scope")) {
                    assertThrows(IllegalStateException.class, TrackEvent::end, "an end cannot close a scope");
                }

                Map<String, List<String>> byTrack = eventsByTrack(session, event ->
                        event.typeEnum().name().replace("TYPE_SLICE_", "") + (event.name() != null ? ":" + event.name() : ""));
                List<String> expected = List.of("BEGIN:outer", "BEGIN:scoped", "BEGIN:inner", "END", "END", "END");
                assertEquals(expected, byTrack.get("platform worker"));
                assertEquals(expected, byTrack.get("virtual worker"));
                session.close();
            } finally {
                Tracing.shutdown();
            }
        }
    }

    /** Stops the session and lists its events, as {@code describe} says them, by the name of their (thread's) track. */
    private static Map<String, List<String>> eventsByTrack(TracingSession session,
                                                           Function<TrackEventReader.Event, String> describe)
            throws Exception {
        session.stop();
        ByteArrayOutputStream bytesOut = new ByteArrayOutputStream();
        session.writeTrace(bytesOut);
        TrackEventReader.Decoded trace = TrackEventReader.read(MemorySegment.ofArray(bytesOut.toByteArray()));
        Map<String, List<String>> byTrack = new TreeMap<>();
        for (TrackEventReader.Event event : trace.events()) {
            TrackEventReader.TrackInfo track = trace.tracks().get(event.trackUuid());
            String trackName = track.threadName() != null ? track.threadName() : track.name();
            byTrack.computeIfAbsent(trackName, k -> new ArrayList<>()).add(describe.apply(event));
        }
        return byTrack;
    }

    private static List<String> concat(List<String> a, List<String> b) {
        List<String> all = new ArrayList<>(a);
        all.addAll(b);
        return all;
    }

    @Test
    void aCategoryNoSessionRecordsGivesTheSharedNoOpScope() {
        Category nobody = new Category("test.nobody");
        TrackEvent.register(nobody);
        assertEquals(0, nobody.sessionMask());
        try (TrackEvent.Scope scope = TrackEvent.slice(nobody, "x")) {
            assertTrue(scope == TrackEvent.slice(nobody, "y"), "one shared scope, nothing allocated");
        }
    }

    /** One slice in requests holding an instant in queue and one in demo.debug, ITERATIONS times. */
    private static void work() {
        for (int i = 0; i < ITERATIONS; i++) {
            try (var _ = TrackEvent.slice(REQUESTS, "request " + i)) {
                TrackEvent.instant(QUEUE, "dequeue");
                TrackEvent.instant(DEMO_DEBUG, "detail");
            }
        }
    }

    private static SessionConfig config(Consumer<TrackEventConfig> categories) throws Exception {
        HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
        config.get().addBuffers().setSizeKb(4096);
        var dataSource = config.get().addDataSources().setConfig();
        dataSource.setName(TrackEvent.DATA_SOURCE_NAME);
        if (categories != null) {
            categories.accept(dataSource.setTrackEventConfig());
        }
        return SessionConfig.parse(config.toSegment());
    }

    /** Begin and instant events by category (ends carry none). */
    private static Map<String, Integer> eventsByCategory(TracingSession session) throws Exception {
        session.stop();
        ByteArrayOutputStream trace = new ByteArrayOutputStream();
        session.writeTrace(trace);
        TrackEventReader.Decoded decoded = TrackEventReader.read(MemorySegment.ofArray(trace.toByteArray()));
        Map<String, Integer> counts = new TreeMap<>();
        for (TrackEventReader.Event event : decoded.events()) {
            for (String category : event.categories()) {
                counts.merge(category, 1, Integer::sum);
            }
        }
        assertEquals(0, decoded.lossMarkers());
        return counts;
    }
}
