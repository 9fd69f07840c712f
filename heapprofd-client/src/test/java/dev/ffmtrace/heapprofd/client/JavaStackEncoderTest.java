package dev.ffmtrace.heapprofd.client;

import dev.ffmtrace.heapprofd.wire.AllocMetadata;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class JavaStackEncoderTest {
    /** One decoded frame of a payload: its id, and its name if the payload defined it. */
    private record Frame(int id, String definedName) {
    }

    private static List<Frame> decode(byte[] bytes, int length) {
        List<Frame> frames = new ArrayList<>();
        int[] at = {0};
        while (at[0] < length) {
            long tagged = HeapprofdClientTest.varint(bytes, at);
            String name = null;
            if ((tagged & 1) != 0) {
                int nameLength = (int) HeapprofdClientTest.varint(bytes, at);
                name = new String(bytes, at[0], nameLength, StandardCharsets.UTF_8);
                at[0] += nameLength;
            }
            frames.add(new Frame((int) (tagged >>> 1), name));
        }
        assertEquals(length, at[0], "the payload ends with its last frame");
        return frames;
    }

    private static List<Frame> encodeHere(JavaStackEncoder encoder) {
        int length = encoder.encode();
        return decode(encoder.bytes(), length);
    }

    @Test
    void aFrameIsDefinedOnceWithItsNameAndReferredToByIdAfter() {
        JavaStackEncoder encoder = new JavaStackEncoder();
        List<List<Frame>> stacks = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            stacks.add(encodeHere(encoder));
        }
        List<Frame> first = stacks.get(0);
        List<Frame> second = stacks.get(1);
        assertTrue(first.getFirst().definedName().startsWith(JavaStackEncoderTest.class.getName() + ".encodeHere(JavaStackEncoderTest.java:"),
                first.getFirst().toString());
        assertTrue(first.get(1).definedName().startsWith(JavaStackEncoderTest.class.getName()
                + ".aFrameIsDefinedOnceWithItsNameAndReferredToByIdAfter(JavaStackEncoderTest.java:"), first.get(1).toString());
        // A frame is defined where it first appears (a stack may repeat one: JUnit's recursive forEach), with ids in order.
        List<Integer> definedIds = first.stream().filter(frame -> frame.definedName() != null).map(Frame::id).toList();
        assertEquals(IntStream.range(0, definedIds.size()).boxed().toList(), definedIds);
        assertEquals(definedIds.size(), first.stream().map(Frame::id).distinct().count(), "each frame is defined once");
        assertEquals(first.stream().map(Frame::id).toList(), second.stream().map(Frame::id).toList());
        assertTrue(second.stream().allMatch(frame -> frame.definedName() == null), "no frame is defined twice");
    }

    @Test
    void anotherLineOfTheSameMethodIsAnotherFrame() {
        JavaStackEncoder encoder = new JavaStackEncoder();
        List<Frame> first = encodeHere(encoder);
        List<Frame> second = encodeHere(encoder);
        assertEquals(first.getFirst().id(), second.getFirst().id(), "the same frame inside encodeHere");
        assertTrue(second.get(1).definedName() != null, "this method's next line is a frame of its own");
        int definedByFirst = (int) first.stream().map(Frame::id).distinct().count();
        assertEquals(definedByFirst, second.get(1).id(), "the next id after those the first stack defined");
        assertEquals(first.subList(2, first.size()).stream().map(Frame::id).toList(),
                second.subList(2, second.size()).stream().map(Frame::id).toList(), "the callers are the same frames");
    }

    @Test
    void onceAllTheFramesAConnectionMayDefineAreDefinedAStackEndsBeforeItsFirstNewFrame() {
        JavaStackEncoder encoder = new JavaStackEncoder();
        List<Frame> defined = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            // The same line each time round: the second stack is known frame for frame.
            defined = encodeHere(encoder);
            if (i == 0) {
                for (int n = encoder.frames.size(); n < AllocMetadata.MAX_JAVA_FRAMES; n++) {
                    encoder.frames.add(new StackTraceElement("pkg.Filler", "method", "Filler.java", n));
                }
            }
        }
        assertTrue(defined.size() > 2 && defined.stream().allMatch(frame -> frame.definedName() == null), defined.toString());
        List<Frame> ended = encodeHere(encoder);
        assertEquals(List.of(new Frame(defined.getFirst().id(), null)), ended,
                "encodeHere's frame is known; this method's next line would be a frame past the limit");
    }

    @Test
    void aNameLongerThanTheServiceTakesIsCutAtACharacter() {
        int limit = AllocMetadata.MAX_JAVA_FRAME_NAME_BYTES;
        assertEquals(limit, JavaStackEncoder.nameLength(new byte[limit]));
        assertEquals(limit, JavaStackEncoder.nameLength(new byte[limit + 1000]));
        // A three-byte character whose last byte would be the limit's first byte past the cut.
        byte[] utf8 = ("x".repeat(limit - 2) + "\u20ac" + "y").getBytes(StandardCharsets.UTF_8);
        assertEquals(limit - 2, JavaStackEncoder.nameLength(utf8));
    }

    @Property(tries = 200)
    void theFrameTableGivesIdsInOrderOfDefinitionAsAMapWould(
            @ForAll @Size(max = 2000) List<@IntRange(max = 600) Integer> frameNumbers) {
        JavaStackEncoder.FrameTable table = new JavaStackEncoder.FrameTable();
        Map<StackTraceElement, Integer> model = new HashMap<>();
        for (int number : frameNumbers) {
            StackTraceElement element = element(number);
            Integer expected = model.get(element);
            int found = table.find(element);
            if (expected == null) {
                assertEquals(-1, found);
                int id = table.add(element);
                assertEquals(model.size(), id);
                model.put(element, id);
            } else {
                assertEquals(expected, found);
            }
        }
        assertEquals(model.size(), table.size());
    }

    /** Frames that differ in one part only: class, method, file (or none) or line. */
    private static StackTraceElement element(int number) {
        return new StackTraceElement("pkg.Class" + number % 3, "method" + number / 3 % 5,
                number % 7 == 0 ? null : "File" + number % 2 + ".java", number / 15);
    }
}
