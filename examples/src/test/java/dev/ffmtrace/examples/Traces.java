package dev.ffmtrace.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ffmtrace.tracing.trackevent.TrackEventReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** What the example tests share: decoding a trace file, describing events, capturing standard output. */
final class Traces {
    private Traces() {
    }

    /** A trace file decoded as the trace processor reads it, after checking nothing was lost or skipped. */
    static TrackEventReader.Decoded read(Path file) throws IOException {
        TrackEventReader.Decoded decoded = TrackEventReader.read(MemorySegment.ofArray(Files.readAllBytes(file)));
        assertEquals(0, decoded.lossMarkers(), "loss markers");
        assertEquals(0, decoded.undecodable(), "undecodable packets");
        return decoded;
    }

    /** An event in a few characters: {@code B:name}, {@code E}, {@code I:name}, {@code C:value}. */
    static String describe(TrackEventReader.Event event) {
        String kind = switch (event.typeEnum()) {
            case TYPE_SLICE_BEGIN -> "B";
            case TYPE_SLICE_END -> "E";
            case TYPE_INSTANT -> "I";
            case TYPE_COUNTER -> "C:" + event.counterValue();
            case null, default -> "?" + event.type();
        };
        return event.name() == null ? kind : kind + ":" + event.name();
    }

    /** The events on one track, described. */
    static List<String> eventsOn(TrackEventReader.Decoded trace, long trackUuid) {
        return trace.events().stream().filter(e -> e.trackUuid() == trackUuid).map(Traces::describe).toList();
    }

    interface Action {
        void run() throws Exception;
    }

    /** What {@code action} prints to {@link System#out}. */
    static String stdout(Action action) throws Exception {
        PrintStream saved = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            action.run();
        } finally {
            System.setOut(saved);
        }
        return captured.toString(StandardCharsets.UTF_8);
    }
}
