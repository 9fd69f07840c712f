package dev.ffmtrace.perfetto.protos;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.Message;
import dev.ffmtrace.protozero.TypedProtoDecoder;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.Locale;

import static dev.ffmtrace.perfetto.protos.ProtobufJavaConformanceTest.ALL_MESSAGES;
import static dev.ffmtrace.perfetto.protos.ProtobufJavaConformanceTest.decoderClass;
import static dev.ffmtrace.perfetto.protos.ProtobufJavaConformanceTest.writerClass;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
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
        assertEquals(1, TrackEvent.Type.TYPE_SLICE_BEGIN.number());
        assertEquals(3, TrackDescriptor.ChildTracksOrdering.EXPLICIT.number());
        assertEquals(2, TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE.number());
        assertEquals(2, TraceConfig.BufferConfig.FillPolicy.DISCARD.number());
        assertEquals(3, CounterDescriptor.Unit.UNIT_SIZE_BYTES.number());
        assertEquals(63, BuiltinClock.BUILTIN_CLOCK_MAX_ID.number(), "numbers, not ordinals");
    }

    @Test
    void everyEnumValueHasProtocsNumberAndIsFoundByIt() throws ReflectiveOperationException {
        for (Descriptor d : ALL_MESSAGES) {
            for (EnumDescriptor e : d.getEnumTypes()) {
                Class<?> type = Class.forName(writerClass(d).getName() + "$" + e.getName());
                assertTrue(type.isEnum(), type.getName());
                assertEquals(e.getValues().size(), type.getEnumConstants().length, type.getName());
                for (EnumValueDescriptor v : e.getValues()) {
                    Object constant = type.getField(v.getName()).get(null);
                    assertEquals(v.getNumber(), type.getMethod("number").invoke(constant), v.getFullName());
                    assertEquals(constant, type.getMethod("forNumber", int.class).invoke(null, v.getNumber()));
                }
            }
        }
    }

    @Test
    void numbersThisProtoDoesNotDefineDecodeRawAndAsNull() {
        assertNull(TrackEvent.Type.forNumber(99));
        assertNull(BuiltinClock.forNumber(-1));
        HeapBuffered<TrackEvent> event = new HeapBuffered<>(TrackEvent.FACTORY);
        event.get().appendInt32(TrackEvent.TYPE_FIELD_NUMBER, 99);
        TrackEvent.Decoder decoder = new TrackEvent.Decoder();
        decoder.reset(MemorySegment.ofArray(event.toByteArray()));
        assertTrue(decoder.hasType());
        assertEquals(99, decoder.type());
        assertNull(decoder.typeEnum());
    }

}
