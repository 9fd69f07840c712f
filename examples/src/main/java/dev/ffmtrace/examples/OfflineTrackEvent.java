package dev.ffmtrace.examples;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.tracing.trackevent.Category;
import dev.ffmtrace.tracing.trackevent.InternedName;
import dev.ffmtrace.tracing.trackevent.TraceClock;
import dev.ffmtrace.tracing.trackevent.TraceFileWriter;
import dev.ffmtrace.tracing.trackevent.Track;
import dev.ffmtrace.tracing.trackevent.TrackEventWriter;
import java.io.BufferedOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;

/** Writes a trace file with the TrackEvent API and no tracing service; open it at ui.perfetto.dev. */
public final class OfflineTrackEvent {
    // Categories, names and tracks are made once, in static fields: names are interned by identity.
    static final Category APP = new Category("app");
    static final InternedName REQUEST = InternedName.of("request");
    static final InternedName CACHE_MISS = InternedName.of("cache miss");
    static final Track PROCESS = Track.process(Os.pid(), "offline example");
    static final Track QUEUE = Track.counter(PROCESS, "queue length");

    public static void main(String[] args) throws Exception {
        Track main = Track.thread(PROCESS, Os.tid(), "main");
        // One sequence (id 1) straight into the file, on Perfetto's default clock (BOOTTIME),
        // with this thread as the default track of slices and scopes.
        var config = new TrackEventWriter.Config(main, TraceClock.BOOTTIME, true);
        var file = new BufferedOutputStream(Files.newOutputStream(Path.of(args[0])));
        try (var events = new TrackEventWriter(new TraceFileWriter(file, 1), config)) {
            for (int i = 0; i < 3; i++) {
                try (var _ = events.slice(APP, REQUEST)) {          // ends with the block
                    events.counter(QUEUE, 3 - i);
                    try (var _ = events.slice(APP, "step " + i)) {  // a name made at run time
                        if (i == 1) {
                            events.instant(APP, main, CACHE_MISS);
                        }
                    }
                }
            }
        }                                                           // closes the file
        System.out.println("wrote " + args[0]);
    }
}
