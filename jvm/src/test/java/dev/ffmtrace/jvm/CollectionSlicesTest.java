package dev.ffmtrace.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ffmtrace.tracing.trackevent.TraceFileWriter;
import java.io.ByteArrayOutputStream;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A collection's phases nest under it however JFR orders and times them, or are dropped and counted. */
class CollectionSlicesTest {
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final JvmPacketWriter writer = new JvmPacketWriter(new TraceFileWriter(bytes, 2));
    private final CollectionSlices slices = new CollectionSlices(writer);
    private final JvmTrack track = JvmTrack.named(JvmTrack.process(0, 42, "p"), "GC G1New");

    private List<String> written() {
        return JvmTraceContent.decode(bytes.toByteArray()).slices().stream()
                .map(s -> s.depth() + ":" + s.name() + "@" + s.start() + "-" + s.end()).toList();
    }

    @Test
    void phasesWithTheCollectionsOwnTimesNestUnderItWhateverTheirOrder() {
        slices.phase(7, 2, "level1", 100, 200);
        slices.phase(7, 1, "pause", 100, 200);
        slices.collection(7, track, "G1New", 100, 200, new Args());
        slices.finish();
        assertEquals(List.of("2:level1@100-200", "1:pause@100-200", "0:G1New@100-200"), written());
        assertEquals(0, slices.droppedPhases());
    }

    @Test
    void siblingsThatTouchFollowEachOtherAndChildrenNestInTheirParent() {
        slices.phase(1, 1, "b", 150, 200);
        slices.phase(1, 2, "a.child", 120, 150);
        slices.phase(1, 1, "a", 100, 150);
        slices.collection(1, track, "G1New", 100, 200, new Args());
        slices.finish();
        assertEquals(List.of("2:a.child@120-150", "1:a@100-150", "1:b@150-200", "0:G1New@100-200"), written());
    }

    @Test
    void aPhaseOutsideItsParentIsDroppedAndCounted() {
        slices.phase(1, 1, "straddles", 150, 250);
        slices.phase(1, 1, "before", 50, 120);
        slices.phase(1, 1, "inside", 110, 140);
        slices.collection(1, track, "G1New", 100, 200, new Args());
        slices.finish();
        assertEquals(List.of("1:inside@110-140", "0:G1New@100-200"), written());
        assertEquals(2, slices.droppedPhases());
    }

    @Test
    void phasesWhoseCollectionNeverComesAreCountedAtTheEnd() {
        slices.phase(1, 1, "orphan", 100, 200);
        slices.phase(2, 1, "orphan", 300, 400);
        slices.finish();
        assertEquals(2, slices.droppedPhases());
        assertEquals(List.of(), written());
    }

    @Test
    void aPhaseThatComesAfterItsCollectionStillNestsUnderIt() {
        slices.phase(7, 1, "early", 100, 150);
        slices.collection(7, track, "G1New", 100, 200, new Args().add("gcId", 7L));
        slices.phase(7, 1, "late", 150, 200);
        slices.finish();
        assertEquals(List.of("1:early@100-150", "1:late@150-200", "0:G1New@100-200"), written());
        assertEquals(0, slices.droppedPhases());
    }

    @Test
    void aCollectionIsWrittenOnceTheStreamIsFarEnoughPastIt() {
        slices.collection(0, track, "G1New", 0, 5, new Args());
        slices.collection(1, track, "G1New", 1000, 1005, new Args());
        slices.phase(2, 1, "pause", 2000, CollectionSlices.SETTLE_NANOS + 4);
        assertEquals(List.of(), written(), "held for late phases");
        slices.phase(2, 1, "pause", 3000, CollectionSlices.SETTLE_NANOS + 5);
        assertEquals(List.of("0:G1New@0-5"), written(), "the first goes once the stream is settled past its end");
        slices.collection(3, track, "G1New", 4000, CollectionSlices.SETTLE_NANOS + 1005, new Args());
        assertEquals(List.of("0:G1New@0-5", "0:G1New@1000-1005"), written());
    }

    @Test
    void aPhaseManyCollectionsLateButWithinAFlushStillNests() {
        long millis = 1_000_000;
        for (int gc = 0; gc < 100; gc++) {
            slices.collection(gc, track, "G1New", gc * 10 * millis, gc * 10 * millis + 5, new Args());
        }
        slices.phase(0, 1, "late", 1, 4);
        slices.finish();
        assertEquals("1:late@1-4", written().get(0));
        assertEquals(0, slices.droppedPhases());
    }

    @Test
    void theOldestWaitingCollectionsPhasesGoWhenTooManyWait() {
        for (int gc = 0; gc <= CollectionSlices.MAX_WAITING_COLLECTIONS; gc++) {
            slices.phase(gc, 1, "pause", gc * 10L, gc * 10L + 5);
        }
        assertEquals(1, slices.droppedPhases());
        slices.collection(0, track, "G1New", 0, 5, new Args());
        slices.finish();
        assertEquals(List.of("0:G1New@0-5"), written(), "gc 0's phase went first");
        assertEquals(1 + CollectionSlices.MAX_WAITING_COLLECTIONS, slices.droppedPhases(), "and the rest at the end");
    }
}
