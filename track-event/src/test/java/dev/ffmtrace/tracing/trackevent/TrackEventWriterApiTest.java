package dev.ffmtrace.tracing.trackevent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.perfetto.protos.InternedData;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;

/** The TrackEvent API as an application uses it: scopes, string names, threads, and no exceptions after close. */
class TrackEventWriterApiTest {
    static final Category APP = new Category("app");
    static final InternedName OUTER = InternedName.of("outer");
    static final InternedName INNER = InternedName.of("inner");
    static final Track PROCESS = Track.process(4242, "api-test");
    static final Track THREAD = Track.thread(PROCESS, 4243, "main");

    private final ByteArrayOutputStream file = new ByteArrayOutputStream();

    private TrackEventWriter newWriter() {
        return new TrackEventWriter(new TraceFileWriter(file, 7),
                new TrackEventWriter.Config(THREAD, TraceClock.BOOTTIME, true));
    }

    private List<TrackEventReader.Event> events() {
        return TrackEventReader.read(MemorySegment.ofArray(file.toByteArray())).events();
    }

    private static String describe(TrackEventReader.Event event) {
        String kind = switch (event.typeEnum()) {
            case TYPE_SLICE_BEGIN -> "B";
            case TYPE_SLICE_END -> "E";
            case TYPE_INSTANT -> "I";
            case null, default -> "?" + event.type();
        };
        return event.name() == null ? kind : kind + ":" + event.name();
    }

    @Test
    void scopedSlicesNestAndEndInReverseOrderOnTheDefaultTrack() {
        Category off = new Category("off");
        off.setEnabled(false);
        try (TrackEventWriter events = newWriter()) {
            try (var outer = events.slice(APP, OUTER)) {
                try (var disabled = events.slice(off, INNER)) {
                    events.instant(APP, THREAD, INNER);
                }
                try (var inner = events.slice(APP, INNER)) {
                    assertSame(outer, inner, "one scope object per writer");
                }
            }
        }
        assertEquals(List.of("B:outer", "I:inner", "B:inner", "E", "E"),
                events().stream().map(TrackEventWriterApiTest::describe).toList());
        assertTrue(events().stream().allMatch(e -> e.trackUuid() == THREAD.uuid()));
    }

    @Test
    void aScopeNeedsADefaultTrackOrANamedOne() {
        try (TrackEventWriter events = new TrackEventWriter(new TraceFileWriter(file, 7))) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> events.slice(APP, OUTER));
            assertTrue(e.getMessage().contains("default track"), e.getMessage());
            try (var slice = events.slice(APP, THREAD, OUTER)) {
                events.instant(APP, THREAD, INNER);
            }
        }
        assertEquals(List.of("B:outer", "I:inner", "E"), events().stream().map(TrackEventWriterApiTest::describe).toList());
    }

    @Test
    void closingAScopeTwiceIsAUsageError() {
        try (TrackEventWriter events = newWriter()) {
            TrackEventWriter.SliceScope scope = events.slice(APP, OUTER);
            scope.close();
            IllegalStateException e = assertThrows(IllegalStateException.class, scope::close);
            assertTrue(e.getMessage().contains("closed twice"), e.getMessage());
        }
    }

    @Test
    void afterCloseEveryCallIsACountedNoOp() {
        TrackEventWriter events = newWriter();
        long open = events.beginSlice(APP, THREAD, OUTER);
        events.close();
        events.close();
        assertFalse(events.isOpen());
        events.instant(APP, THREAD, INNER);
        events.instant(APP, THREAD, "dynamic");
        assertEquals(0, events.beginSlice(APP, THREAD, OUTER));
        events.endSlice(THREAD, open);
        events.counter(Track.counter(PROCESS, "queue"), 3);
        try (var scope = events.slice(APP, OUTER)) {
            events.describe(THREAD);
        }
        events.flush();
        assertEquals(7, events.discardedEvents(),
                "instant x2, begin, end, counter, scoped begin, describe; the scope's end ends a slice that never began");
        assertEquals(List.of("B:outer"), events().stream().map(TrackEventWriterApiTest::describe).toList());
    }

    @Test
    void aFailingSinkNeverThrowsIntoTheApplication() {
        OutputStream broken = new OutputStream() {
            @Override
            public void write(int b) throws IOException {
                throw new IOException("disk full");
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                throw new IOException("disk full");
            }
        };
        TrackEventWriter events = new TrackEventWriter(new TraceFileWriter(broken, 3),
                new TrackEventWriter.Config(THREAD, TraceClock.BOOTTIME, true));
        events.instant(APP, THREAD, OUTER);
        assertFalse(events.isOpen(), "a broken stream closes the writer");
        events.instant(APP, THREAD, OUTER);
        try (var scope = events.slice(APP, INNER)) {
            events.counter(Track.counter(PROCESS, "queue"), 1.5);
        }
        events.close();
        assertEquals(4, events.discardedEvents());
    }

    @Test
    void misnestedEndsStillThrowWithTheTrackNamed() {
        try (TrackEventWriter events = newWriter()) {
            long outer = events.beginSlice(APP, THREAD, OUTER);
            events.beginSlice(APP, THREAD, INNER);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> events.endSlice(THREAD, outer));
            assertEquals("endSlice on track \"main\" (" + Long.toUnsignedString(THREAD.uuid()) + ") of the slice at depth 1"
                    + " while the innermost open one is at depth 2: slices on a track must nest", e.getMessage());
        }
    }

    @Test
    void stringNamesAreInternedOncePerWriterAndBounded() {
        int distinct = TrackEventWriter.MAX_DYNAMIC_NAMES + 10;
        try (TrackEventWriter events = newWriter()) {
            for (int round = 0; round < 3; round++) {
                events.instant(APP, THREAD, "request");
            }
            for (int i = 0; i < distinct; i++) {
                events.instant(APP, THREAD, "user-" + i);
            }
            events.instant(APP, THREAD, "user-" + (distinct - 1));
        }
        List<TrackEventReader.Event> read = events();
        assertEquals(List.of("request", "request", "request"), read.subList(0, 3).stream().map(TrackEventReader.Event::name).toList());
        assertEquals("user-" + (distinct - 1), read.get(read.size() - 1).name());
        assertEquals(3 + distinct + 1, read.size());

        int internedNames = 0;
        int inlineNames = 0;
        Trace.Decoder trace = new Trace.Decoder();
        trace.reset(MemorySegment.ofArray(file.toByteArray()));
        RepeatedFieldIterator packets = trace.packet(new RepeatedFieldIterator());
        TracePacket.Decoder packet = new TracePacket.Decoder();
        TrackEvent.Decoder event = new TrackEvent.Decoder();
        InternedData.Decoder interned = new InternedData.Decoder();
        while (packets.next()) {
            packet.reset(packets.field());
            if (packet.internedData(interned)) {
                RepeatedFieldIterator names = interned.eventNames(new RepeatedFieldIterator());
                while (names.next()) {
                    internedNames++;
                }
            }
            if (packet.trackEvent(event)) {
                if (event.hasName()) {
                    inlineNames++;
                }
            }
        }
        assertEquals(TrackEventWriter.MAX_DYNAMIC_NAMES, internedNames, "\"request\" once, then up to the bound");
        assertEquals(distinct - (TrackEventWriter.MAX_DYNAMIC_NAMES - 1) + 1, inlineNames,
                "the names past the bound are written inline, and again when repeated");
    }

    @Test
    void internedNamesAreCanonical() {
        InternedName first = InternedName.of("HandleRequest");
        for (int i = 0; i < 100_000; i++) {
            assertSame(first, InternedName.of(new String("HandleRequest")));
        }
    }

    @Test
    void aWriterPassesBetweenThreadsAndClosesFromAnother() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            TrackEventWriter events = newWriter();
            for (int i = 0; i < 4; i++) {
                pool.submit(() -> events.instant(APP, THREAD, OUTER)).get();
            }
            pool.submit(events::close).get();
            events.instant(APP, THREAD, OUTER);
            assertEquals(1, events.discardedEvents());
        } finally {
            pool.shutdown();
        }
        assertEquals(4, events().size());
    }
}
