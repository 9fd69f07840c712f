package dev.ffmtrace.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.sdk.DataSource;
import dev.ffmtrace.tracing.sdk.TrackEvent;
import dev.ffmtrace.tracing.sdk.Tracing;
import dev.ffmtrace.tracing.sdk.TracingOptions;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.trackevent.Category;
import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The live {@code jvm} data source in a session of an in-process service, beside the
 * application's own TrackEvents: JFR's events land on the application's threads, line up
 * with its slices within 100 µs once the trace's clock snapshot moves them onto the same
 * clock, a virtual thread's events share its TrackEvents' track, and the heap profile
 * written at the stop is in the trace.
 */
class JvmDataSourceTest {
    private static final Category APP = new Category("app");
    private static final long ALIGNMENT_NANOS = 100_000;
    private static final int SLEEPS = 10;

    @Test
    void jfrEventsLineUpWithTheApplicationsSlicesOnItsThreads() throws Exception {
        DataSource<?> jvm = JvmDataSource.register();
        TrackEvent.register(APP);
        byte[] trace;
        AtomicLong appTid = new AtomicLong();
        try (TracingService service = new TracingService()) {
            assertTrue(Tracing.initialize(TracingOptions.named("jvm-test").withInProcessBackend(service)));
            try {
                TracingSession session = service.startSession(config("jdk.ThreadSleep#threshold=0ms"));
                assertTrue(TrackEvent.awaitSessions(1, Duration.ofSeconds(10)));
                assertTrue(jvm.isEnabled());
                Thread app = Thread.ofPlatform().name("jvm-test-app").start(() -> {
                    appTid.set(Os.tid());
                    try (var _ = TrackEvent.slice(APP, "gc")) {
                        System.gc();
                    }
                    for (int i = 0; i < SLEEPS; i++) {
                        try (var _ = TrackEvent.slice(APP, "sleep")) {
                            Thread.sleep(5);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                    allocate();
                });
                app.join();
                Thread.ofVirtual().name("jvm-test-virtual").start(() -> {
                    try (var _ = TrackEvent.slice(APP, "virtual sleep")) {
                        Thread.sleep(5);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }).join();
                session.stop();
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                session.writeTrace(out);
                trace = out.toByteArray();
                session.close();
            } finally {
                Tracing.shutdown();
            }
        }
        assertEquals(0, JvmDataSource.failures());
        assertEquals(0, jvm.callbackFailures());
        JvmTraceContent content = JvmTraceContent.decode(trace);
        long offset = JvmTraceContent.realtimeMinusMonotonic(trace);

        JvmTraceContent.Slice gc = named(content.slicesOn("jvm-test-app"), "gc");
        List<JvmTraceContent.Slice> collections = content.slices().stream()
                .filter(s -> s.annotations().contains("cause=System.gc()")).toList();
        assertEquals(1, collections.size(), collections::toString);
        JvmTraceContent.Slice collection = collections.getFirst();
        assertTrue(collection.start() - offset >= gc.start() - ALIGNMENT_NANOS
                        && collection.end() - offset <= gc.end() + ALIGNMENT_NANOS,
                "the collection " + (collection.start() - offset) + ".." + (collection.end() - offset)
                        + " lies in the application's slice " + gc.start() + ".." + gc.end());

        // Each sleep: JFR's slice inside the application's; the two clocks agree when the
        // best-matched pair (the one the scheduler disturbed least) is within 100 us at both ends.
        List<JvmTraceContent.Slice> sleeps = named(content.slicesOn("jvm-test-app"), "sleep", SLEEPS);
        List<JvmTraceContent.Slice> jfrSleeps = named(content.slicesOn("jvm-test-app"), "Thread sleep", SLEEPS);
        long best = Long.MAX_VALUE;
        for (int i = 0; i < SLEEPS; i++) {
            JvmTraceContent.Slice app = sleeps.get(i);
            JvmTraceContent.Slice jfr = jfrSleeps.get(i);
            assertEquals(appTid.get(), content.track(jfr.trackUuid()).tid(), "on the application thread's tid");
            long startGap = jfr.start() - offset - app.start();
            long endGap = app.end() - (jfr.end() - offset);
            assertTrue(startGap >= -ALIGNMENT_NANOS && endGap >= -ALIGNMENT_NANOS,
                    "JFR's sleep lies in the application's: gaps " + startGap + " and " + endGap + " ns");
            best = Math.min(best, Math.max(Math.abs(startGap), Math.abs(endGap)));
        }
        assertTrue(best <= ALIGNMENT_NANOS, "the closest sleeps are " + best + " ns apart");

        // A virtual thread's JFR events and its TrackEvents share one track.
        JvmTraceContent.Slice virtualSleep = named(content.slices(), "virtual sleep");
        List<JvmTraceContent.Slice> jfrVirtualSleeps = content.slices().stream()
                .filter(s -> s.name().equals("Thread sleep") && s.trackUuid() == virtualSleep.trackUuid()).toList();
        assertEquals(1, jfrVirtualSleeps.size(), () -> "JFR's sleep on the virtual thread's track, among "
                + content.slices().stream().filter(s -> s.name().equals("Thread sleep")).toList());
        assertEquals("jvm-test-virtual", content.track(virtualSleep.trackUuid()).name());

        assertFalse(content.heapBytesByLeaf().isEmpty(), "the heap profile written at the stop");
        assertEquals(0, content.events().undecodable());
    }

    private static JvmTraceContent.Slice named(List<JvmTraceContent.Slice> slices, String name) {
        return named(slices, name, 1).getFirst();
    }

    /** The {@code count} slices named {@code name}, in time order. */
    private static List<JvmTraceContent.Slice> named(List<JvmTraceContent.Slice> slices, String name, int count) {
        List<JvmTraceContent.Slice> named = slices.stream().filter(s -> s.name().equals(name))
                .sorted(java.util.Comparator.comparingLong(JvmTraceContent.Slice::start)).toList();
        assertEquals(count, named.size(), () -> name + " in " + slices);
        return named;
    }

    /** Enough allocation for JFR's allocation sampler to take some samples. */
    private static void allocate() {
        long sum = 0;
        for (int i = 0; i < 200_000; i++) {
            sum += new long[16].length;
        }
        assertTrue(sum > 0);
    }

    private static SessionConfig config(String jvmConfig) throws Exception {
        HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
        config.get().addBuffers().setSizeKb(8192);
        // The stop waits for JFR to hand over its last chunk and for the heap profile: on a
        // loaded machine that takes longer than the default 5 s, and the session would read
        // the trace without them.
        config.get().setDataSourceStopTimeoutMs(60_000);
        var jvm = config.get().addDataSources().setConfig();
        jvm.setName(JvmDataSource.NAME);
        jvm.setLegacyConfig(jvmConfig);
        config.get().addDataSources().setConfig().setName(TrackEvent.DATA_SOURCE_NAME);
        return SessionConfig.parse(config.toSegment());
    }
}
