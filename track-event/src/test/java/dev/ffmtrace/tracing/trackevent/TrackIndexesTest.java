package dev.ffmtrace.tracing.trackevent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ffmtrace.memory.testing.Await;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Track indexes are reused once a track is unreachable, so a writer's per-track arrays
 * stay as small as the live tracks (a virtual thread's track, made per thread, would
 * otherwise widen them for good); a writer treats a reused index's new track as new: its
 * descriptor is written, its slices nest from depth 0.
 */
class TrackIndexesTest {
    private static final Category APP = new Category("app");
    private static final Track PROCESS = Track.process(4242, "indexes");

    /**
     * A new named track that takes {@code index}, once the track that had it is collected:
     * collections are asked for until it is (the Cleaner that gives the index back tells no
     * one, so {@link Await} looks). Tracks made meanwhile that got other indexes are kept,
     * so they cannot take it.
     */
    private static Track trackAt(int index, List<Track> keep) throws InterruptedException {
        Track[] reused = new Track[1];
        Await.until("index " + index + " reused", () -> {
            Track track = Track.named(PROCESS, "reused");
            if (track.index == index) {
                reused[0] = track;
                return true;
            }
            keep.add(track);
            System.gc();
            return false;
        }, () -> keep.size() + " tracks made with other indexes");
        return reused[0];
    }

    private static int indexOfADroppedTrack(TrackEventWriter writer) {
        Track dropped = Track.named(PROCESS, "dropped");
        writer.instant(APP, dropped, "on the dropped track");
        // A slice left open on it: its depth must not leak into the next track at its index.
        writer.beginSlice(APP, dropped, "never ended");
        return dropped.index;
    }

    @Test
    void anUnreachableTracksIndexIsReusedAndAWriterTakesItsNewTrackAsNew() throws Exception {
        ByteArrayOutputStream file = new ByteArrayOutputStream();
        List<Track> keep = new ArrayList<>();
        try (TrackEventWriter writer = new TrackEventWriter(new TraceFileWriter(file, 7), TrackEventWriter.Config.DEFAULT)) {
            int index = indexOfADroppedTrack(writer);
            Track reused = trackAt(index, keep);

            writer.instant(APP, reused, "on the new track");
            long slice = writer.beginSlice(APP, reused, "fresh");
            writer.endSlice(reused, slice);
            assertThrows(IllegalStateException.class, () -> writer.endSlice(reused, slice),
                    "depth 0 again: the old track's open slice is not the new one's");
        }
        TrackEventReader.Decoded trace = TrackEventReader.read(MemorySegment.ofArray(file.toByteArray()));
        List<String> onNewTrack = new ArrayList<>();
        long newUuid = -1;
        for (TrackEventReader.TrackInfo info : trace.tracks().values()) {
            if ("reused".equals(info.name()) && trace.events().stream().anyMatch(e -> e.trackUuid() == info.uuid())) {
                newUuid = info.uuid();
            }
        }
        assertNotEquals(-1, newUuid, "the new track at the reused index was described");
        for (TrackEventReader.Event event : trace.events()) {
            if (event.trackUuid() == newUuid && event.name() != null) {
                onNewTrack.add(event.name());
            }
        }
        assertEquals(List.of("on the new track", "fresh"), onNewTrack);
        assertNotNull(trace.tracks().get(newUuid));
    }
}
