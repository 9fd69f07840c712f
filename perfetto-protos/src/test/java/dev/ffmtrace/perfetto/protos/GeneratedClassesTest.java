package dev.ffmtrace.perfetto.protos;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import dev.ffmtrace.protozero.Message;
import dev.ffmtrace.protozero.TypedProtoDecoder;
import org.junit.jupiter.api.Test;

import java.util.Locale;

import static dev.ffmtrace.perfetto.protos.ProtobufJavaConformanceTest.ALL_MESSAGES;
import static dev.ffmtrace.perfetto.protos.ProtobufJavaConformanceTest.decoderClass;
import static dev.ffmtrace.perfetto.protos.ProtobufJavaConformanceTest.writerClass;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The generated classes exist for every message, with protoc's field numbers and enum values. */
class GeneratedClassesTest {
    @Test
    void everyMessageHasAWriterAndADecoder() throws ReflectiveOperationException {
        assertTrue(ALL_MESSAGES.size() >= 30, "messages found: " + ALL_MESSAGES.size());
        for (Descriptor d : ALL_MESSAGES) {
            Class<?> writer = writerClass(d);
            assertTrue(Message.class.isAssignableFrom(writer), writer.getName());
            assertTrue(TypedProtoDecoder.class.isAssignableFrom(decoderClass(d)));
            for (FieldDescriptor f : d.getFields()) {
                assertEquals(f.getNumber(), writer.getField(f.getName().toUpperCase(Locale.ROOT) + "_FIELD_NUMBER")
                        .getInt(null), d.getFullName() + "." + f.getName());
            }
        }
    }

    @Test
    void enumConstantsMatch() {
        assertEquals(1, TrackEvent.Type.TYPE_SLICE_BEGIN);
        assertEquals(3, TrackDescriptor.ChildTracksOrdering.EXPLICIT);
        assertEquals(2, TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE);
        assertEquals(2, TraceConfig.BufferConfig.FillPolicy.DISCARD);
        assertEquals(3, CounterDescriptor.Unit.UNIT_SIZE_BYTES);
    }

}
