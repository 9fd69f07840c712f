package dev.ffmtrace.protozero;

import com.google.protobuf.CodedOutputStream;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** {@link ProtoWire#varIntEnd} and {@link ProtoWire#varIntValue}, the decoders' shared varint reader. */
class VarIntDecodeTest {

    @Property
    void decodesWhatProtobufJavaEncodes(@ForAll long value) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        CodedOutputStream out = CodedOutputStream.newInstance(bytes);
        out.writeUInt64NoTag(value);
        out.flush();
        MemorySegment segment = MemorySegment.ofArray(bytes.toByteArray());
        long end = ProtoWire.varIntEnd(segment, 0, segment.byteSize());
        assertEquals(segment.byteSize(), end);
        assertEquals(value, ProtoWire.varIntValue(segment, 0, end));
    }

    @Test
    void stopsAtTheLimit() {
        MemorySegment segment = MemorySegment.ofArray(new byte[] {(byte) 0x81, (byte) 0x81, 0x01, 0x05});
        assertEquals(ProtoWire.VARINT_TRUNCATED, ProtoWire.varIntEnd(segment, 0, 2));
        assertEquals(ProtoWire.VARINT_TRUNCATED, ProtoWire.varIntEnd(segment, 3, 3));
        assertEquals(3, ProtoWire.varIntEnd(segment, 0, 3));
        assertEquals(1 + (1 << 7) + (1 << 14), ProtoWire.varIntValue(segment, 0, 3));
        assertEquals(4, ProtoWire.varIntEnd(segment, 3, 4));
        assertEquals(5, ProtoWire.varIntValue(segment, 3, 4));
    }

    @Test
    void acceptsTenBytesAndRejectsEleven() {
        byte[] bytes = new byte[12];
        java.util.Arrays.fill(bytes, (byte) 0xFF);
        bytes[9] = 0x01;
        MemorySegment segment = MemorySegment.ofArray(bytes);
        assertEquals(10, ProtoWire.varIntEnd(segment, 0, bytes.length));
        assertEquals(-1L, ProtoWire.varIntValue(segment, 0, 10));
        // Ten continuing bytes are too long even when the limit follows them.
        MemorySegment continuing = MemorySegment.ofArray(new byte[] {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1});
        assertEquals(ProtoWire.VARINT_TOO_LONG, ProtoWire.varIntEnd(continuing, 0, 10));
        assertEquals(ProtoWire.VARINT_TOO_LONG, ProtoWire.varIntEnd(continuing, 0, 11));
        assertEquals(ProtoWire.VARINT_TRUNCATED, ProtoWire.varIntEnd(continuing, 0, 9));
    }
}
