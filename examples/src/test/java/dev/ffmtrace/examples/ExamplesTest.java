package dev.ffmtrace.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.tracing.trackevent.TrackEventReader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs every example in this JVM and checks what it wrote by decoding it. */
class ExamplesTest {
    @TempDir
    Path dir;

    /** What OfflineTrackEvent writes, wherever it runs: checked here and by {@link ModulePathTest}. */
    static void checkOfflineTrace(Path file) throws Exception {
        TrackEventReader.Decoded trace = Traces.read(file);
        Map<String, TrackEventReader.TrackInfo> tracks = trace.tracks().values().stream()
                .collect(Collectors.toMap(t -> t.name() != null ? t.name()
                        : t.threadName() != null ? t.threadName() : t.processName(), t -> t));
        assertEquals("offline example", tracks.get("offline example").processName());
        TrackEventReader.TrackInfo main = tracks.get("main");
        TrackEventReader.TrackInfo queue = tracks.get("queue length");
        assertTrue(queue.counter(), "a counter track");
        List<String> onMain = new ArrayList<>();
        List<String> onQueue = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            onMain.addAll(List.of("B:request", "B:step " + i));
            if (i == 1) {
                onMain.add("I:cache miss");
            }
            onMain.addAll(List.of("E", "E"));
            onQueue.add("C:" + (3 - i));
        }
        assertEquals(onMain, Traces.eventsOn(trace, main.uuid()));
        assertEquals(onQueue, Traces.eventsOn(trace, queue.uuid()));
        assertEquals(onMain.size() + onQueue.size(), trace.events().size(), "no event elsewhere");
        assertTrue(trace.events().stream().filter(e -> e.trackUuid() == main.uuid())
                .allMatch(e -> e.categories().equals(e.typeEnum().name().equals("TYPE_SLICE_END") ? List.of() : List.of("app"))),
                "every begin and instant is in category app");
        for (int i = 1; i < trace.events().size(); i++) {
            assertTrue(trace.events().get(i).timestamp() >= trace.events().get(i - 1).timestamp(), "timestamps in order");
        }
    }

    @Test
    void offlineTrackEventWritesScopedSlicesAnInstantACounterAndDynamicNames() throws Exception {
        Path file = dir.resolve("offline.pftrace");
        String out = Traces.stdout(() -> OfflineTrackEvent.main(new String[] {file.toString()}));
        assertEquals("wrote " + file + "\n", out);
        checkOfflineTrace(file);
    }

    @Test
    void traceAServiceWritesTheCategoriesASessionRecordsByDefault() throws Exception {
        Path socket = dir.resolve("producer.sock");
        try (dev.ffmtrace.tracing.service.TracingService service = new dev.ffmtrace.tracing.service.TracingService();
             dev.ffmtrace.tracing.service.ProducerPort port = dev.ffmtrace.tracing.service.ProducerPort.listen(
                     service, dev.ffmtrace.memory.UnixAddress.path(socket))) {
            dev.ffmtrace.tracing.service.TracingSession session = service.startSession(
                    dev.ffmtrace.tracing.service.SessionConfig.builder()
                            .buffer(4096, dev.ffmtrace.tracing.buffer.OverwritePolicy.DISCARD)
                            .dataSource("track_event").build());
            String out = Traces.stdout(() -> TraceAService.main(new String[] {"1", "100", socket.toString()}));
            assertEquals("handled 100 requests\n", out);
            session.stop();
            Path file = dir.resolve("service.pftrace");
            try (java.io.OutputStream trace = java.nio.file.Files.newOutputStream(file)) {
                session.writeTrace(trace);
            }
            Map<String, Long> byName = Traces.read(file).events().stream()
                    .filter(e -> e.name() != null)
                    .collect(Collectors.groupingBy(TrackEventReader.Event::name, Collectors.counting()));
            assertEquals(Map.of("request", 100L, "dequeue", 100L), byName, "no demo.debug: the debug tag is off");
            long counters = Traces.read(file).events().stream().filter(e -> e.counterValue() != null).count();
            assertEquals(100, counters);
            session.close();
            assertEquals(0, port.violations());
        }
    }

    @Test
    void sdkDataSourceWritesItsTicksIntoTheSession() throws Exception {
        Path file = dir.resolve("sdk.pftrace");
        String out = Traces.stdout(() -> SdkDataSource.main(new String[] {file.toString()}));
        assertTrue(out.matches("wrote \\d+ bytes to " + java.util.regex.Pattern.quote(file.toString()) + "\n"), out);
        List<String> names = Traces.read(file).events().stream().map(TrackEventReader.Event::name).toList();
        assertEquals(5, names.size(), names.toString());
        for (int i = 0; i < 5; i++) {
            assertTrue(names.get(i).matches("instance \\d+: tick " + i), names.get(i));
        }
    }

    @Test
    void inProcessSessionTracesEveryThreadOnItsOwnTrack() throws Exception {
        Path file = dir.resolve("session.pftrace");
        String out = Traces.stdout(() -> InProcessSession.main(new String[] {file.toString()}));
        assertTrue(out.matches("wrote \\d+ bytes to " + java.util.regex.Pattern.quote(file.toString()) + "\n"), out);
        TrackEventReader.Decoded trace = Traces.read(file);
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            expected.addAll(List.of("B:task", "I:item " + i, "E"));
        }
        int threads = 0;
        for (TrackEventReader.TrackInfo track : trace.tracks().values()) {
            if (track.threadName() != null) {
                assertTrue(track.threadName().matches("worker-[0-2]"), track.threadName());
                assertEquals(ProcessHandle.current().pid(), trace.tracks().get(track.parentUuid()).pid(),
                        "under this process's track");
                assertEquals(expected, Traces.eventsOn(trace, track.uuid()), track.threadName());
                threads++;
            }
        }
        assertEquals(3, threads, "one track per worker thread");
        assertEquals(3 * expected.size(), trace.events().size());
    }

    @Test
    void sessionLifecycleStreamsTicksUntilTheServiceStopsTheSession() throws Exception {
        Path file = dir.resolve("lifecycle.pftrace");
        String out = Traces.stdout(() -> SessionLifecycle.main(new String[] {file.toString()}));
        assertEquals("stopped after 300 ms; trace in " + file + "\n", out);
        TrackEventReader.Decoded trace = Traces.read(file);
        TrackEventReader.TrackInfo worker = trace.tracks().values().stream()
                .filter(track -> "worker".equals(track.threadName())).findFirst().orElseThrow();
        List<String> ticks = Traces.eventsOn(trace, worker.uuid());
        assertFalse(ticks.isEmpty(), "the stop waits for the worker's ticks, the first one at least");
        for (int i = 0; i < ticks.size(); i++) {
            assertEquals("I:tick " + i, ticks.get(i), "every tick the service took, in order");
        }
    }

    @Test
    void ringBufferPairReadsBackWhatTheSecondHandleWrote() throws Exception {
        String out = Traces.stdout(() -> RingBufferPair.main(new String[0]));
        assertEquals("read: record 0\nread: record 1\nread: record 2\n", out);
        assertFalse(out.contains("not written"));
    }
}
