package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class CloneTriggerHandoffTest {
    private static TriggerHit hit(int i) {
        return new TriggerHit(i, "snap-" + i, "producer", 1000, 0);
    }

    @Test
    void hitsBeforeTheListenerReachItWhenItIsSetThenHitsGoStraightThrough() {
        CloneTriggerHandoff handoff = new CloneTriggerHandoff();
        handoff.deliver(hit(0));
        handoff.deliver(hit(1));
        List<TriggerHit> seen = new ArrayList<>();
        handoff.listen(seen::add);
        assertEquals(List.of(hit(0), hit(1)), seen, "held hits, oldest first");
        handoff.deliver(hit(2));
        assertEquals(List.of(hit(0), hit(1), hit(2)), seen);
    }

    @Test
    void aNewListenerGetsNothingTheOldOneWasGiven() {
        CloneTriggerHandoff handoff = new CloneTriggerHandoff();
        List<TriggerHit> first = new ArrayList<>();
        handoff.listen(first::add);
        handoff.deliver(hit(0));
        List<TriggerHit> second = new ArrayList<>();
        handoff.listen(second::add);
        handoff.deliver(hit(1));
        assertEquals(List.of(List.of(hit(0)), List.of(hit(1))), List.of(first, second));
    }

    @Test
    void withNoListenerOnlyTheFirstFewAreHeld() {
        CloneTriggerHandoff handoff = new CloneTriggerHandoff();
        IntStream.range(0, CloneTriggerHandoff.MAX_WAITING + 5).forEach(i -> handoff.deliver(hit(i)));
        List<TriggerHit> seen = new ArrayList<>();
        handoff.listen(seen::add);
        assertEquals(IntStream.range(0, CloneTriggerHandoff.MAX_WAITING).mapToObj(CloneTriggerHandoffTest::hit).toList(), seen);
    }
}
