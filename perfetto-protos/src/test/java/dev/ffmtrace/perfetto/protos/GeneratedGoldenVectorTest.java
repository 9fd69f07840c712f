package dev.ffmtrace.perfetto.protos;

import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.HexFormat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The spec's golden vector through the generated TracePacket/TrackEvent classes. */
class GeneratedGoldenVectorTest {
    private static final String GOLDEN =
            "40c80150c1a2ee015a1d48015886caf0ecb601ba01114d79207370656369616c20706172656e74";

    @Test
    void generatedWritersProduceTheGoldenBytes() {
        HeapBuffered<TracePacket> packet = new HeapBuffered<>(TracePacket.FACTORY);
        packet.get().setTimestamp(200);
        packet.get().setTrustedPacketSequenceId(3903809);
        TrackEvent event = packet.get().setTrackEvent();
        event.setType(TrackEvent.Type.TYPE_SLICE_BEGIN);
        event.setTrackUuid(49083589894L);
        event.setName("My special parent");
        assertEquals(GOLDEN, HexFormat.of().formatHex(packet.toByteArray()));
    }

    @Test
    void generatedDecodersReadTheGoldenBytes() {
        TracePacket.Decoder packet = new TracePacket.Decoder();
        packet.reset(MemorySegment.ofArray(HexFormat.of().parseHex(GOLDEN)));
        assertEquals(200, packet.timestamp());
        assertEquals(3903809, packet.trustedPacketSequenceId());
        assertFalse(packet.hasTrustedUid());
        TrackEvent.Decoder event = new TrackEvent.Decoder();
        assertTrue(packet.trackEvent(event));
        assertEquals(TrackEvent.Type.TYPE_SLICE_BEGIN.number(), event.type());
        assertEquals(TrackEvent.Type.TYPE_SLICE_BEGIN, event.typeEnum());
        assertEquals(49083589894L, event.trackUuid());
        assertEquals("My special parent", event.name());
    }

    @Test
    void traceOfPackets() {
        HeapBuffered<Trace> trace = new HeapBuffered<>(Trace.FACTORY, 64, 256);
        for (int i = 0; i < 3; i++) {
            TracePacket p = trace.get().addPacket();
            p.setTimestamp(i);
            p.setTrackDescriptor().setName("track " + i);
        }
        Trace.Decoder decoder = new Trace.Decoder();
        decoder.reset(trace.toSegment());
        assertEquals(3, decoder.packetCount());
        TracePacket.Decoder packet = new TracePacket.Decoder();
        TrackDescriptor.Decoder track = new TrackDescriptor.Decoder();
        int i = 0;
        for (RepeatedFieldIterator it = decoder.packet(new RepeatedFieldIterator()); it.next(); i++) {
            packet.reset(it.field());
            assertEquals(i, packet.timestamp());
            assertTrue(packet.trackDescriptor(track));
            assertEquals("track " + i, track.name());
        }
        assertEquals(3, i);
    }
}
