package dev.ffmtrace.protozero;

import dev.ffmtrace.protozero.TestMessages.Event;
import dev.ffmtrace.protozero.TestMessages.Packet;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static dev.ffmtrace.protozero.TestMessages.hex;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class NestedMessageTest {
    private static final String LONG_NAME = "x".repeat(200);
    // track_event { name: 200 x 'x' } then timestamp 7: the nested body is 204 bytes.
    private static final String LONG_THEN_TIMESTAMP = "5acc818000ba01c801" + "78".repeat(200) + "4007";
    private static final String SHORT_THEN_TIMESTAMP = "5a05ba0102686940" + "07";

    @Test
    void backFilledWhenNestedMessageIsFinalized() {
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY);
        Event event = buffered.get().setTrackEvent();
        event.setName(LONG_NAME);
        assertEquals(204, event.finalizeMessage());
        assertTrue(event.isFinalized());
        buffered.get().setTimestamp(7);
        assertEquals(LONG_THEN_TIMESTAMP, hex(buffered.toByteArray()));
    }

    @Test
    void rawProtoBytesAreFieldsOfTheMessageTheyAreAppendedTo() {
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY);
        Event event = buffered.get().setTrackEvent();
        event.setName("hi");
        // A field the nested message does not write itself: the open nested message ends first.
        buffered.get().appendRawProtoBytes(new byte[] {0x40, 0x07, 0x40, 0x08}, 2, 2);
        assertTrue(event.isFinalized());
        assertEquals(SHORT_THEN_TIMESTAMP.replace("4007", "4008"), hex(buffered.toByteArray()));
    }

    @Test
    void backFilledWhenParentWritesNextField() {
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY);
        Event event = buffered.get().setTrackEvent();
        event.setName(LONG_NAME);
        buffered.get().setTimestamp(7);
        assertTrue(event.isFinalized());
        assertEquals(LONG_THEN_TIMESTAMP, hex(buffered.toByteArray()));
    }

    @Test
    void backFilledWhenParentIsFinalized() {
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY);
        buffered.get().setTimestamp(7);
        Event event = buffered.get().setTrackEvent();
        event.setName(LONG_NAME);
        assertEquals("4007" + "5acc818000ba01c801" + "78".repeat(200), hex(buffered.toByteArray()));
        assertTrue(event.isFinalized());
    }

    @Test
    void compactedInEachOfTheThreeWays() {
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY);
        buffered.get().setTrackEvent().setName("hi");
        buffered.get().setTimestamp(7);
        assertEquals(SHORT_THEN_TIMESTAMP, hex(buffered.toByteArray()));

        buffered.reset();
        Event event = buffered.get().setTrackEvent();
        event.setName("hi");
        assertEquals(5, event.finalizeMessage());
        buffered.get().setTimestamp(7);
        assertEquals(SHORT_THEN_TIMESTAMP, hex(buffered.toByteArray()));

        buffered.reset();
        buffered.get().setTimestamp(7);
        buffered.get().setTrackEvent().setName("hi");
        assertEquals("4007" + "5a05ba01026869", hex(buffered.toByteArray()));
    }

    @Test
    void beginningASiblingFinalizesThePreviousNestedMessage() {
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY);
        Event parent = buffered.get().setTrackEvent();
        Event first = parent.addChild();
        first.setType(1);
        Event second = parent.addChild();
        assertSame(first, second, "the arena reuses one object per depth and type");
        second.setType(2);
        // track_event { debug_annotations { type: 1 } debug_annotations { type: 2 } }
        assertEquals("5a08" + "22024801" + "22024802", hex(buffered.toByteArray()));
    }

    @Test
    void deepNestingCompactsEveryLevelAndSizesAddUp() {
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY);
        Event event = buffered.get().setTrackEvent();
        for (int i = 0; i < 3; i++) {
            event = event.addChild();
        }
        event.setType(3);
        assertEquals("5a08" + "2206" + "2204" + "2202" + "4803", hex(buffered.toByteArray()));
        assertEquals(10, buffered.get().size());
    }

    @Test
    void finalizedMessageRejectsWrites() {
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY);
        Event event = buffered.get().setTrackEvent();
        event.finalizeMessage();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> event.setType(1));
        assertTrue(e.getMessage().contains("finalized"), e.getMessage());
        buffered.toByteArray();
        assertThrows(IllegalStateException.class, () -> buffered.get().setTimestamp(1));
        assertThrows(IllegalStateException.class, () -> buffered.get().setTrackEvent());
    }

    @Test
    void unattachedMessageRejectsWrites() {
        Packet packet = new Packet();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> packet.setTimestamp(1));
        assertTrue(e.getMessage().contains("not attached"), e.getMessage());
    }

    @Test
    void nestingPastTheBoundFailsClearly() {
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY);
        Event event = buffered.get().setTrackEvent();
        for (int depth = 2; depth <= Message.MAX_NESTING_DEPTH; depth++) {
            event = event.addChild();
        }
        Event deepest = event;
        IllegalStateException e = assertThrows(IllegalStateException.class, deepest::addChild);
        assertTrue(e.getMessage().contains("deeper than " + Message.MAX_NESTING_DEPTH), e.getMessage());
    }

    @Test
    void nestedMessageCannotBecomeARoot() {
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY);
        Event event = buffered.get().setTrackEvent();
        assertThrows(IllegalStateException.class,
                () -> event.reset(new ScatteredStreamWriter(used -> MemorySegment.ofArray(new byte[16]))));
    }

    @Test
    void invalidFieldIdIsRejected() {
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY);
        assertThrows(IllegalArgumentException.class, () -> buffered.get().appendVarInt(0, 1));
        assertThrows(IllegalArgumentException.class, () -> buffered.get().appendVarInt(1 << 29, 1));
    }

    @Test
    void reservedSizeBytesThatDoNotFitMoveToTheNextSlice() {
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY, 16, 16);
        Packet packet = buffered.get();
        packet.appendBytes(1, new byte[12]);      // 14 bytes: 2 bytes of the slice left
        packet.setTrackEvent().setType(1);        // tag at 14, 4 size bytes do not fit
        byte[] bytes = buffered.toByteArray();

        HeapBuffered<Packet> big = new HeapBuffered<>(Packet.FACTORY);
        big.get().appendBytes(1, new byte[12]);
        big.get().setTrackEvent().setType(1);
        assertEquals(hex(big.toByteArray()), hex(bytes),
                "the body and its size field are together in the new slice, so it is still compacted");
        assertEquals(2, buffered.buffer().sliceCount());
        assertEquals(15, buffered.buffer().usedSlice(0).byteSize(), "the skipped byte is not stream data");
        assertEquals(3, buffered.buffer().usedSlice(1).byteSize());
    }

    @Test
    void stringCrossingThreeSlices() {
        String name = "0123456789abcdef0123456789ABCDEF-\u00e9\u20ac\ud83d\ude00";
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY, 16, 16);
        buffered.get().setTimestamp(1);
        buffered.get().setTrackEvent().setName(name);
        byte[] bytes = buffered.toByteArray();
        assertTrue(buffered.buffer().sliceCount() >= 3);

        byte[] utf8 = name.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        assertEquals(42, utf8.length);
        // timestamp, then track_event with a 4-byte size (it crosses slices) holding name.
        String expected = "4001" + "5a" + "ad808000" + "ba012a" + hex(utf8);
        assertEquals(expected, hex(bytes));
    }

    @Test
    void redirectedSizeFieldsAreWrittenToThePatchSlot() {
        RecyclingDelegate delegate = new RecyclingDelegate(24);
        ScatteredStreamWriter writer = new ScatteredStreamWriter(delegate);
        Packet packet = new Packet();
        packet.reset(writer);
        delegate.root = packet;
        packet.setTimestamp(5);
        Event event = packet.setTrackEvent();
        Event child = event.addChild();
        child.setName("y".repeat(60));
        child.finalizeMessage();
        event.setType(2);
        packet.finalizeMessage();
        byte[] patched = delegate.stitchWithPatches(writer);

        HeapBuffered<Packet> reference = new HeapBuffered<>(Packet.FACTORY, 24, 24);
        reference.get().setTimestamp(5);
        Event e = reference.get().setTrackEvent();
        e.addChild().setName("y".repeat(60));
        e.setType(2);
        assertEquals(hex(reference.toByteArray()), hex(patched));
        assertEquals(2, delegate.redirected, "track_event and its child had their size fields in slice 0");
    }

    @Test
    void redirectionHookExposesTheOpenChain() {
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY);
        Packet packet = buffered.get();
        assertNull(packet.sizeField());
        Event event = packet.setTrackEvent();
        Event child = event.addChild();
        assertSame(event, packet.nestedMessage());
        assertSame(child, event.nestedMessage());
        assertNotNull(child.sizeField());
        child.finalizeMessage();
        assertNull(child.sizeField());
        assertThrows(IllegalStateException.class,
                () -> child.redirectSizeField(MemorySegment.ofArray(new byte[4]), 0));
        assertThrows(IllegalStateException.class,
                () -> packet.redirectSizeField(MemorySegment.ofArray(new byte[4]), 0));
        assertFalse(packet.isFinalized());
    }

    /**
     * A delegate that behaves like a trace writer: before handing back a slice it
     * redirects the pending size fields in it to patch slots, scribbles over the slice
     * (as if its chunk were reused), and applies the patches to a copy at the end.
     */
    private static final class RecyclingDelegate implements ScatteredStreamWriter.Delegate, SizeFieldRedirector {
        private final int sliceSize;
        private final List<byte[]> committed = new ArrayList<>();
        private final MemorySegment patches = MemorySegment.ofArray(new byte[64]);
        private final List<long[]> patchTargets = new ArrayList<>();
        private MemorySegment current;
        private Message root;
        private int redirected;

        RecyclingDelegate(int sliceSize) {
            this.sliceSize = sliceSize;
        }

        @Override
        public MemorySegment newSlice(long usedBytes) {
            if (current != null) {
                root.redirectSizeFields(this);
                committed.add(current.asSlice(0, usedBytes).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
                current.fill((byte) 0xEE);
            }
            current = MemorySegment.ofArray(new byte[sliceSize]);
            return current;
        }

        @Override
        public void redirect(Message message) {
            long slot = (long) patchTargets.size() * ProtoWire.MESSAGE_LENGTH_FIELD_SIZE;
            patchTargets.add(new long[] {committed.size(), message.sizeFieldOffset()});
            message.redirectSizeField(patches, slot);
            redirected++;
        }

        byte[] stitchWithPatches(ScatteredStreamWriter writer) {
            committed.add(current.asSlice(0, writer.position()).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
            for (int i = 0; i < patchTargets.size(); i++) {
                long[] target = patchTargets.get(i);
                byte[] slice = committed.get((int) target[0]);
                MemorySegment.copy(patches, i * 4L, MemorySegment.ofArray(slice), target[1], 4);
            }
            int total = committed.stream().mapToInt(b -> b.length).sum();
            byte[] out = new byte[total];
            int at = 0;
            for (byte[] b : committed) {
                System.arraycopy(b, 0, out, at, b.length);
                at += b.length;
            }
            return Arrays.copyOf(out, at);
        }
    }
}
