package dev.ffmtrace.heapprofd.service;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The unwinder's reusable stack: a list of the frames added since it was last cleared. */
class FrameBufferTest {
    @Test
    void itListsTheFramesAddedSinceTheLastClear() {
        Frame a = Frame.unknown("a");
        Frame main = Frame.unknown("main");
        FrameBuffer frames = new FrameBuffer(3);
        frames.add(a);
        frames.add(main);
        assertEquals(List.of(a, main), frames);
        frames.clear();
        assertEquals(List.of(), frames);
        frames.add(main);
        assertEquals(List.of(main), frames);
        assertThrows(IndexOutOfBoundsException.class, () -> frames.get(1));
    }
}
