package dev.ffmtrace.tracing.trackevent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** A virtual thread's track is named alike by every writer that knows the process track and the thread id. */
class TrackTest {
    private final Track process = Track.process(42, "p");

    @Test
    void aVirtualThreadsTrackIsTheSameWhoeverMakesIt() {
        Track first = Track.virtualThread(process, 7, "worker");
        Track again = Track.virtualThread(process, 7, "worker");
        assertEquals(first.uuid(), again.uuid());
        assertEquals(Track.virtualThreadUuid(process.uuid(), 7), first.uuid());
        assertSame(process, first.parent());
        assertEquals("worker", first.name());
    }

    @Test
    void otherThreadsAndOtherProcessesGetOtherTracks() {
        long uuid = Track.virtualThread(process, 7, "worker").uuid();
        assertNotEquals(uuid, Track.virtualThread(process, 8, "worker").uuid());
        assertNotEquals(uuid, Track.virtualThread(Track.process(42, "p"), 7, "worker").uuid(),
                "another process track (random uuid) of the same pid");
    }

    @Test
    void onlyAProcessTrackHasVirtualThreads() {
        Track thread = Track.thread(process, 1, "t");
        assertThrows(IllegalArgumentException.class, () -> Track.virtualThread(thread, 7, "worker"));
    }
}
