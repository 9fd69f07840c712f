package dev.ffmtrace.protozero;

import dev.ffmtrace.protozero.TestMessages.Event;
import dev.ffmtrace.protozero.TestMessages.Packet;
import org.junit.jupiter.api.Test;

import static dev.ffmtrace.protozero.TestMessages.hex;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** The byte vectors of Perfetto's C++ ProtoZero from spec/protozero-encoding.md. */
class GoldenVectorsTest {
    private static final String FIRST_VECTOR =
            "40c80150c1a2ee015a1d48015886caf0ecb601ba01114d79207370656369616c20706172656e74";

    private static final String CROSSING_VECTOR =
            "40c80150c1a2ee015a9d80800048015886caf0ecb601ba01114d79207370656369616c20706172656e74";

    private static byte[] firstVector(HeapBuffered<Packet> buffered, String name) {
        Packet packet = buffered.get();
        packet.setTimestamp(200);
        packet.setTrustedPacketSequenceId(3903809);
        Event event = packet.setTrackEvent();
        event.setType(1);
        event.setTrackUuid(49083589894L);
        event.setName(name);
        return buffered.toByteArray();
    }

    @Test
    void trackEventWithShortNameGetsOneByteLength() {
        assertEquals(FIRST_VECTOR, hex(firstVector(new HeapBuffered<>(Packet.FACTORY), "My special parent")));
    }

    @Test
    void bodyOf213BytesKeepsFourByteLength() {
        String expected = "40c80150c1a2ee015ad581800048015886caf0ecb601ba01c801" + "61".repeat(200);
        assertEquals(expected, hex(firstVector(new HeapBuffered<>(Packet.FACTORY), "a".repeat(200))));
    }

    @Test
    void bodyOfExactly127BytesIsCompacted() {
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY);
        buffered.get().setTrackEvent().setName("b".repeat(124));
        assertEquals("5a7fba017c" + "62".repeat(124), hex(buffered.toByteArray()));
    }

    @Test
    void bodyOf128BytesIsNotCompacted() {
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY);
        buffered.get().setTrackEvent().setName("b".repeat(125));
        assertEquals("5a80818000ba017d" + "62".repeat(125), hex(buffered.toByteArray()));
    }

    @Test
    void emptyNestedMessage() {
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY);
        buffered.get().setTrackEvent();
        assertEquals("5a00", hex(buffered.toByteArray()));
    }

    @Test
    void nestedMessageCrossingSixteenByteSlicesKeepsFourByteLength() {
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY, 16, 16);
        assertEquals(CROSSING_VECTOR, hex(firstVector(buffered, "My special parent")));
    }

    @Test
    void resetBufferReproducesTheSameBytes() {
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY, 16, 64);
        byte[] first = firstVector(buffered, "a".repeat(150));
        buffered.reset();
        byte[] second = firstVector(buffered, "a".repeat(150));
        assertEquals(hex(first), hex(second));
        buffered.reset();
        // The first slice is again 16 bytes, so the track_event crosses it as in the
        // 16-byte-slice vector.
        assertEquals(CROSSING_VECTOR, hex(firstVector(buffered, "My special parent")));
    }
}
