package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ffmtrace.tracing.trackevent.Category;
import dev.ffmtrace.tracing.trackevent.InternedName;
import dev.ffmtrace.tracing.trackevent.TraceClock;
import dev.ffmtrace.tracing.trackevent.TraceFileWriter;
import dev.ffmtrace.tracing.trackevent.Track;
import dev.ffmtrace.tracing.trackevent.TrackEventReader;
import dev.ffmtrace.tracing.trackevent.TrackEventWriter;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every example of the TrackEvent seed (synthetic TrackEvent traces, in
 * {@code src/test/resources/seed-examples}) written twice: as text through
 * {@code convert}, and through the TrackEvent API into a {@link TraceFileWriter}, with
 * absolute and with incremental timestamps. Both must decode, as the trace processor
 * resolves them, to the same tracks and events; and each converted example must dump back
 * to the same bytes.
 */
class SeedExamplesTest {
    private static final Category NONE = Category.NONE;
    private static final int SEQUENCE = 3903809;

    @TempDir
    Path dir;

    static Stream<Arguments> examples() {
        return Stream.of(
                Arguments.of("thread_scoped", (Consumer<TrackEventWriter>) SeedExamplesTest::threadScoped),
                Arguments.of("process_scoped", (Consumer<TrackEventWriter>) SeedExamplesTest::processScoped),
                Arguments.of("custom_scoped", (Consumer<TrackEventWriter>) SeedExamplesTest::customScoped),
                Arguments.of("lexicographic_ordering", (Consumer<TrackEventWriter>) SeedExamplesTest::lexicographic),
                Arguments.of("chronological_ordering", (Consumer<TrackEventWriter>) SeedExamplesTest::chronological),
                Arguments.of("explicit_ordering", (Consumer<TrackEventWriter>) SeedExamplesTest::explicit),
                Arguments.of("flows", (Consumer<TrackEventWriter>) SeedExamplesTest::flows),
                Arguments.of("counters", (Consumer<TrackEventWriter>) SeedExamplesTest::counters),
                Arguments.of("interning", (Consumer<TrackEventWriter>) SeedExamplesTest::interning));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("examples")
    void theApiAndConvertWriteTheSameTrace(String example, Consumer<TrackEventWriter> replay) throws Exception {
        Path text = Path.of("src/test/resources/seed-examples", example + ".pbtxt");
        Path binary = dir.resolve(example + ".pftrace");
        ConvertAndDumpTest.Run converted = ConvertAndDumpTest.run("convert", text.toString(), binary.toString());
        assertEquals(0, converted.exit(), converted.err());
        TrackEventReader.Decoded expected = TrackEventReader.read(MemorySegment.ofArray(Files.readAllBytes(binary)));
        if (example.equals("chronological_ordering")) {
            expected = withoutTrack(expected, 60000);
        }
        assertEquals(0, expected.undecodable());
        assertFalse(expected.tracks().isEmpty());

        for (boolean incremental : new boolean[] {false, true}) {
            ByteArrayOutputStream file = new ByteArrayOutputStream();
            try (TrackEventWriter writer = new TrackEventWriter(new TraceFileWriter(file, SEQUENCE),
                    new TrackEventWriter.Config(null, TraceClock.BOOTTIME, incremental))) {
                replay.accept(writer);
            }
            TrackEventReader.Decoded actual = TrackEventReader.read(MemorySegment.ofArray(file.toByteArray()));
            String mode = incremental ? "incremental timestamps" : "absolute timestamps";
            assertEquals(0, actual.undecodable(), mode);
            assertEquals(expected.tracks(), actual.tracks(), mode);
            assertEquals(expected.events(), actual.events(), mode);
        }

        ConvertAndDumpTest.Run dumped = ConvertAndDumpTest.run("dump", binary.toString());
        assertEquals(0, dumped.exit(), dumped.err());
        Path dumpedText = dir.resolve(example + ".dumped.pbtxt");
        Files.writeString(dumpedText, dumped.out());
        Path again = dir.resolve(example + ".again.pftrace");
        assertEquals(0, ConvertAndDumpTest.run("convert", dumpedText.toString(), again.toString()).exit());
        assertArrayEquals(Files.readAllBytes(binary), Files.readAllBytes(again), "dumps back to the same trace");
    }

    /**
     * The seed's chronological example ends slice "A1" on track 60000, which it never
     * describes and on which nothing began: the API refuses that end (see
     * {@link #chronological}), so it is left out of what the two must agree on.
     */
    private static TrackEventReader.Decoded withoutTrack(TrackEventReader.Decoded trace, long uuid) {
        List<TrackEventReader.Event> events = trace.events().stream().filter(e -> e.trackUuid() != uuid).toList();
        assertEquals(trace.events().size() - 1, events.size());
        return new TrackEventReader.Decoded(trace.tracks(), events, trace.lossMarkers(), trace.undecodable());
    }

    private static InternedName name(String name) {
        return InternedName.of(name);
    }

    static void threadScoped(TrackEventWriter w) {
        Track process = Track.process(1234, "My process name").withUuid(894893984L);
        Track thread = Track.thread(process, 5678, "My thread name").withUuid(49083589894L);
        long parent = w.atTimestamp(200).beginSlice(NONE, thread, name("My special parent"));
        long child = w.atTimestamp(250).beginSlice(NONE, thread, name("My special child"));
        w.atTimestamp(285).instant(NONE, thread);
        w.atTimestamp(290).endSlice(thread, child);
        w.atTimestamp(300).endSlice(thread, parent);
    }

    static void processScoped(TrackEventWriter w) {
        Track first = Track.process(1234, "My process name").withTrackName("My special track").withUuid(48948);
        long a = w.atTimestamp(200).beginSlice(NONE, first, name("My special parent A"));
        long child = w.atTimestamp(250).beginSlice(NONE, first, name("My special child"));
        w.atTimestamp(290).endSlice(first, child);
        w.atTimestamp(300).endSlice(first, a);
        Track second = Track.named(first, "My special track").withUuid(2390190934L);
        long a2 = w.atTimestamp(230).beginSlice(NONE, second, name("My special parent A"));
        long child2 = w.atTimestamp(260).beginSlice(NONE, second, name("My special child"));
        w.atTimestamp(270).endSlice(second, child2);
        w.atTimestamp(295).endSlice(second, a2);
    }

    static void customScoped(TrackEventWriter w) {
        Track root = Track.named(null, "Root").withUuid(48948);
        Track parentB = Track.named(root, "Parent B").withUuid(50001);
        Track parentA = Track.named(root, "Parent A").withUuid(50000);
        Track childA1 = Track.named(parentA, "Child A1").withUuid(60000);
        Track childA2 = Track.named(parentA, "Child A2").withUuid(60001);
        Track childB1 = Track.named(parentB, "Child B1").withUuid(70000);
        for (Track track : List.of(root, parentB, parentA, childA1, childA2, childB1)) {
            w.describe(track);
        }
        long a1 = w.atTimestamp(200).beginSlice(NONE, childA1, name("A1"));
        w.atTimestamp(250).endSlice(childA1, a1);
        long a2 = w.atTimestamp(220).beginSlice(NONE, childA2, name("A2"));
        w.atTimestamp(240).endSlice(childA2, a2);
        long b1 = w.atTimestamp(210).beginSlice(NONE, childB1, name("B1"));
        w.atTimestamp(230).endSlice(childB1, b1);
    }

    static void lexicographic(TrackEventWriter w) {
        Track root = Track.named(null, "Root", Track.ChildOrdering.LEXICOGRAPHIC, null).withUuid(10);
        w.describe(root);
        w.describe(Track.named(root, "B").withUuid(11));
        w.describe(Track.named(root, "A").withUuid(12));
    }

    static void chronological(TrackEventWriter w) {
        Track root = Track.named(null, "Root", Track.ChildOrdering.CHRONOLOGICAL, null).withUuid(10);
        Track a = Track.named(root, "A").withUuid(11);
        long a1 = w.atTimestamp(220).beginSlice(NONE, a, name("A1"));
        Track undescribed = Track.named(null, "never described").withUuid(60000);
        assertThrows(IllegalStateException.class, () -> w.atTimestamp(230).endSlice(undescribed, a1),
                "the seed's end on a track where nothing began is a usage error");
        Track b = Track.named(root, "B").withUuid(12);
        long b1 = w.atTimestamp(210).beginSlice(NONE, b, name("B1"));
        w.atTimestamp(240).endSlice(b, b1);
    }

    static void explicit(TrackEventWriter w) {
        Track root = Track.named(null, "Root", Track.ChildOrdering.EXPLICIT, null).withUuid(10);
        w.describe(root);
        w.describe(Track.named(root, "B", Track.ChildOrdering.UNSPECIFIED, 1).withUuid(11));
        w.describe(Track.named(root, "A", Track.ChildOrdering.UNSPECIFIED, 100).withUuid(12));
        w.describe(Track.named(root, "C", Track.ChildOrdering.UNSPECIFIED, -100).withUuid(13));
    }

    static void flows(TrackEventWriter w) {
        long flow = 1055895987L;
        Track main = Track.thread(100, 100, "Main thread").withUuid(93094);
        long request = w.atTimestamp(200).beginSlice(NONE, main, name("Request generation"), flow, 0);
        w.atTimestamp(300).endSlice(main, request);
        long result = w.atTimestamp(400).beginSlice(NONE, main, name("Process background result"), flow, 0);
        w.atTimestamp(500).endSlice(main, result);
        Track background = Track.thread(100, 101, "Background thread").withUuid(40489498);
        long work = w.atTimestamp(310).beginSlice(NONE, background, name("Background work"), flow, 0);
        w.atTimestamp(385).endSlice(background, work);
    }

    static void counters(TrackEventWriter w) {
        Track process = Track.process(1024, "MySpecialProcess").withUuid(1388);
        Track counter = Track.counter(process, "My special counter").withUuid(4489498);
        w.atTimestamp(200).counter(counter, 34567L);
        w.atTimestamp(250).counter(counter, 67890L);
        w.atTimestamp(300).counter(counter, 12345L);
        w.atTimestamp(400).counter(counter, 12345L);
    }

    static void interning(TrackEventWriter w) {
        Track track = Track.process(1234, "My process name").withTrackName("My special track").withUuid(48948);
        InternedName longName = name("A very very very long slice name which we don't want to repeat");
        long first = w.atTimestamp(200).beginSlice(NONE, track, longName);
        w.atTimestamp(201).endSlice(track, first);
        long second = w.atTimestamp(202).beginSlice(NONE, track, longName);
        w.atTimestamp(203).endSlice(track, second);
    }
}
