package dev.ffmtrace.protozero;

import dev.ffmtrace.protozero.TestMessages.Event;
import dev.ffmtrace.protozero.TestMessages.Packet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DecoderTest {
    /** A hand-written typed decoder with some of TracePacket's fields. */
    static final class PacketDecoder extends TypedProtoDecoder {
        private static final short[] SLOTS = slotTable(Packet.TIMESTAMP, Packet.TRUSTED_PACKET_SEQUENCE_ID,
                Packet.TRACK_EVENT, 3, 5, 6);

        PacketDecoder() {
            super(SLOTS);
        }

        long timestamp() {
            return longValue(Packet.TIMESTAMP);
        }

        boolean trackEvent(EventDecoder into) {
            return nested(Packet.TRACK_EVENT, into);
        }

        RepeatedScalarIterator packedVarInts(RepeatedScalarIterator it) {
            return repeatedScalar(3, ProtoWire.WIRE_TYPE_VARINT, it);
        }

        RepeatedScalarIterator packedFixed32s(RepeatedScalarIterator it) {
            return repeatedScalar(5, ProtoWire.WIRE_TYPE_FIXED32, it);
        }

        RepeatedFieldIterator strings(RepeatedFieldIterator it) {
            return repeated(6, it);
        }
    }

    static final class EventDecoder extends TypedProtoDecoder {
        private static final short[] SLOTS = slotTable(Event.TYPE, Event.TRACK_UUID, Event.NAME);

        EventDecoder() {
            super(SLOTS);
        }

        int type() {
            return (int) longValue(Event.TYPE);
        }

        long trackUuid() {
            return longValue(Event.TRACK_UUID);
        }

        String name() {
            return stringValue(Event.NAME);
        }
    }

    private static MemorySegment segment(String hex) {
        return MemorySegment.ofArray(TestMessages.hex(hex));
    }

    @Test
    void decodesTheGoldenVector() {
        MemorySegment bytes = segment(
                "40c80150c1a2ee015a1d48015886caf0ecb601ba01114d79207370656369616c20706172656e74");
        ProtoDecoder d = new ProtoDecoder().reset(bytes);
        assertTrue(d.next());
        assertEquals(8, d.field().id());
        assertEquals(200, d.field().asLong());
        assertTrue(d.next());
        assertEquals(3903809, d.field().asInt());
        assertTrue(d.next());
        assertEquals(11, d.field().id());
        assertEquals(ProtoWire.WIRE_TYPE_LENGTH_DELIMITED, d.field().wireType());
        assertEquals(29, d.field().length());
        assertFalse(d.next());
        assertEquals(DecodeStatus.OK, d.status());
        assertEquals(0, d.bytesLeft());

        PacketDecoder packet = new PacketDecoder();
        packet.reset(bytes);
        EventDecoder event = new EventDecoder();
        assertTrue(packet.trackEvent(event));
        assertEquals(200, packet.timestamp());
        assertEquals(1, event.type());
        assertEquals(49083589894L, event.trackUuid());
        assertEquals("My special parent", event.name());
    }

    @Test
    void redundantVarIntLengthsDecode() {
        PacketDecoder packet = new PacketDecoder();
        packet.reset(segment("5a9d80800048015886caf0ecb601ba01114d79207370656369616c20706172656e74"));
        EventDecoder event = new EventDecoder();
        assertTrue(packet.trackEvent(event));
        assertEquals("My special parent", event.name());
        assertEquals(DecodeStatus.OK, event.status());
    }

    @ParameterizedTest
    @CsvSource({
            "40, TRUNCATED_VARINT",
            "4080, TRUNCATED_VARINT",
            "40ffffffffffffffffff01, OK",
            "40ffffffffffffffffffff01, VARINT_TOO_LONG",
            "0a0501, LENGTH_PAST_END",
            "0affffffffffffffffff01, LENGTH_PAST_END",
            "0001, INVALID_FIELD_ID",
            "808080808010, INVALID_FIELD_ID",
            "0b, INVALID_WIRE_TYPE",
            "0c, INVALID_WIRE_TYPE",
            "0e, INVALID_WIRE_TYPE",
            "0f, INVALID_WIRE_TYPE",
            "0d0102, TRUNCATED_FIXED",
            "09010203040506, TRUNCATED_FIXED",
    })
    void malformedInputIsACheckableError(String hex, DecodeStatus expected) {
        ProtoDecoder d = new ProtoDecoder().reset(segment(hex));
        while (d.next()) {
            assertTrue(d.field().valid());
        }
        assertEquals(expected, d.status(), hex);
        assertEquals(expected != DecodeStatus.OK, d.hasError());
        assertEquals(expected == DecodeStatus.OK ? 0 : TestMessages.hex(hex).length, d.bytesLeft());
    }

    @Test
    void nestedLengthOverflowingItsParentIsAnError() {
        // field 1 { field 2: length 5, but field 1 holds only 3 bytes } then field 2 = 5, 6
        MemorySegment bytes = segment("0a031205011005" + "1006");
        ProtoDecoder outer = new ProtoDecoder().reset(bytes);
        assertTrue(outer.next());
        ProtoDecoder inner = new ProtoDecoder().reset(outer.field());
        assertFalse(inner.next());
        assertEquals(DecodeStatus.LENGTH_PAST_END, inner.status());
        assertTrue(outer.next());
        assertTrue(outer.next());
        assertFalse(outer.next());
        assertEquals(DecodeStatus.OK, outer.status());
    }

    @Test
    void typedDecoderKeepsFieldsBeforeAnError() {
        PacketDecoder packet = new PacketDecoder();
        packet.reset(segment("4001" + "4002" + "0e"));
        assertEquals(DecodeStatus.INVALID_WIRE_TYPE, packet.status());
        assertEquals(2, packet.timestamp());
        assertEquals(2, packet.count(Packet.TIMESTAMP));
    }

    @Test
    void lastOneWinsAndRepeatedFieldsIterateInOrder() {
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY);
        Packet p = buffered.get();
        p.setTimestamp(1);
        p.appendString(6, "one");
        p.appendPackedVarInts(3, new long[] {10, 300, -1}, 0, 3);
        p.appendVarInt(3, 7);
        p.setTimestamp(2);
        p.appendString(6, "two");
        p.appendVarInt(999, 5);
        p.appendPackedFixed32s(5, new int[] {-1, 4}, 0, 2);
        p.appendFixed32(5, 9);
        p.appendPackedVarInts(3, new long[] {8}, 0, 1);
        PacketDecoder d = new PacketDecoder();
        d.reset(MemorySegment.ofArray(buffered.toByteArray()));

        assertEquals(DecodeStatus.OK, d.status());
        assertEquals(2, d.timestamp());
        assertEquals(2, d.count(Packet.TIMESTAMP));
        assertFalse(d.has(999));
        assertFalse(d.has(Packet.TRACK_EVENT));
        assertFalse(d.field(Packet.TRACK_EVENT).valid());

        RepeatedFieldIterator strings = d.strings(new RepeatedFieldIterator());
        assertTrue(strings.next());
        assertEquals("one", strings.field().asString());
        assertTrue(strings.next());
        assertEquals("two", strings.field().asString());
        assertFalse(strings.next());

        RepeatedScalarIterator varints = d.packedVarInts(new RepeatedScalarIterator());
        StringBuilder seen = new StringBuilder();
        while (varints.next()) {
            seen.append(varints.value()).append(' ');
        }
        assertEquals("10 300 -1 7 8 ", seen.toString());
        assertFalse(varints.hasError());

        RepeatedScalarIterator fixed = d.packedFixed32s(new RepeatedScalarIterator());
        seen.setLength(0);
        while (fixed.next()) {
            seen.append((int) fixed.value()).append(' ');
        }
        assertEquals("-1 4 9 ", seen.toString());
    }

    @Test
    void malformedPackedRunStopsTheIterator() {
        PacketDecoder d = new PacketDecoder();
        d.reset(segment("1a03" + "0180ff"));
        RepeatedScalarIterator it = d.packedVarInts(new RepeatedScalarIterator());
        assertTrue(it.next());
        assertEquals(1, it.value());
        assertFalse(it.next());
        assertTrue(it.hasError());
        assertFalse(it.next());

        d.reset(segment("2a03" + "010203"));
        RepeatedScalarIterator fixed = d.packedFixed32s(new RepeatedScalarIterator());
        assertFalse(fixed.next());
        assertTrue(fixed.hasError());
    }

    @Test
    void absentNestedMessageLeavesAnEmptyDecoder() {
        PacketDecoder packet = new PacketDecoder();
        packet.reset(segment("4001"));
        EventDecoder event = new EventDecoder();
        assertFalse(packet.trackEvent(event));
        assertEquals("", event.name());
        assertEquals(0, event.type());
        assertFalse(event.has(Event.NAME));
    }
}
