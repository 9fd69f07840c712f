package dev.ffmtrace.tracing.trackevent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.junit.jupiter.api.Test;

/** TrackEvents written with no service at all: one sequence straight into a trace file. */
class TraceFileWriterTest {
    static final InternedName HANDLE = InternedName.of("HandleRequest");

    @Test
    void aTraceFileWriterWritesOneSequenceWithNoService() throws Exception {
        ByteArrayOutputStream file = new ByteArrayOutputStream();
        Track track = Track.named(null, "offline").withUuid(77);
        try (TrackEventWriter writer = new TrackEventWriter(new TraceFileWriter(file, 42),
                new TrackEventWriter.Config(null, TraceClock.BOOTTIME, true))) {
            long slice = writer.atTimestamp(1000).beginSlice(Category.NONE, track, HANDLE);
            writer.atTimestamp(1250).endSlice(track, slice);
        }
        Trace.Decoder trace = new Trace.Decoder();
        trace.reset(MemorySegment.ofArray(file.toByteArray()));
        RepeatedFieldIterator packets = trace.packet(new RepeatedFieldIterator());
        TracePacket.Decoder packet = new TracePacket.Decoder();
        int count = 0;
        while (packets.next()) {
            packet.reset(packets.field());
            assertEquals(42, packet.trustedPacketSequenceId());
            count++;
        }
        assertEquals(5, count, "state, descriptor, clock snapshot, begin, end");
        TrackEventReader.Decoded decoded = TrackEventReader.read(MemorySegment.ofArray(file.toByteArray()));
        assertEquals("offline", decoded.tracks().get(77L).name());
        assertEquals(List.of(1000L, 1250L), decoded.events().stream().map(TrackEventReader.Event::timestamp).toList());
        assertEquals(List.of(List.of(), List.of()), decoded.events().stream().map(TrackEventReader.Event::categories).toList());
        assertEquals(TraceClock.BOOTTIME.id, decoded.events().get(0).clockId());
    }

    @Test
    void aPacketEncodedByHandIsWrittenAsTheSameFieldsWouldBe() {
        ByteArrayOutputStream fieldByField = new ByteArrayOutputStream();
        try (TraceFileWriter writer = new TraceFileWriter(fieldByField, 300)) {
            TracePacket packet = writer.newTracePacket();
            packet.setTimestamp(1L << 40);
            packet.setSequenceFlags(2);
            writer.finishTracePacket();
        }
        ByteArrayOutputStream encoded = new ByteArrayOutputStream();
        try (TraceFileWriter writer = new TraceFileWriter(encoded, 300)) {
            // timestamp (field 8) = 2^40, sequence_flags (field 13) = 2, behind two bytes the writer must skip
            byte[] fields = {9, 9, 0x40, (byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80, 0x20, 0x68, 2};
            writer.writeEncodedPacket(fields, 2, fields.length - 2);
        }
        assertArrayEquals(fieldByField.toByteArray(), encoded.toByteArray());
    }

    @Test
    void anEncodedPacketWaitsForNoOpenPacket() {
        try (TraceFileWriter writer = new TraceFileWriter(new ByteArrayOutputStream(), 1)) {
            writer.newTracePacket();
            assertThrows(IllegalStateException.class, () -> writer.writeEncodedPacket(new byte[] {0x40, 1}, 0, 2));
        }
    }
}
