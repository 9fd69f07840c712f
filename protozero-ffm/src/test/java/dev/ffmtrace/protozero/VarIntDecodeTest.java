package dev.ffmtrace.protozero;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.google.protobuf.CodedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

/** {@link VarIntReader}, the one varint decoder every decoder of untrusted bytes shares. */
class VarIntDecodeTest {
    private final VarIntReader reader = new VarIntReader();

    @Property
    void decodesWhatProtobufJavaEncodes(@ForAll long value) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        CodedOutputStream out = CodedOutputStream.newInstance(bytes);
        out.writeUInt64NoTag(value);
        out.flush();
        MemorySegment segment = MemorySegment.ofArray(bytes.toByteArray());
        assertEquals(segment.byteSize(), reader.read(segment, 0, segment.byteSize()));
        assertEquals(value, reader.value());
    }

    /** The array overload reads as the segment one does: the same end (or error) and value, at any offset and limit. */
    @Property
    void readsAnArrayAsItReadsASegment(@ForAll byte[] bytes, @ForAll int offsetSeed, @ForAll int limitSeed) {
        int limit = bytes.length == 0 ? 0 : Math.floorMod(limitSeed, bytes.length + 1);
        int offset = limit == 0 ? 0 : Math.floorMod(offsetSeed, limit + 1);
        VarIntReader fromSegment = new VarIntReader();
        long segmentEnd = fromSegment.read(MemorySegment.ofArray(bytes), offset, limit);
        int arrayEnd = reader.read(bytes, offset, limit);
        assertEquals(segmentEnd, arrayEnd);
        if (arrayEnd >= 0) {
            assertEquals(fromSegment.value(), reader.value());
        }
    }

    @Test
    void readsAnArrayToItsLimitAndNoFurther() {
        byte[] bytes = {(byte) 0x81, (byte) 0x81, 0x01, 0x05};
        assertEquals(VarIntReader.TRUNCATED, reader.read(bytes, 0, 2));
        assertEquals(3, reader.read(bytes, 0, 3));
        assertEquals(1 + (1 << 7) + (1 << 14), reader.value());
        byte[] continuing = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
        assertEquals(VarIntReader.TOO_LONG, reader.read(continuing, 0, 11));
    }

    @Test
    void stopsAtTheLimit() {
        MemorySegment segment = MemorySegment.ofArray(new byte[] {(byte) 0x81, (byte) 0x81, 0x01, 0x05});
        assertEquals(VarIntReader.TRUNCATED, reader.read(segment, 0, 2));
        assertEquals(VarIntReader.TRUNCATED, reader.read(segment, 3, 3));
        assertEquals(3, reader.read(segment, 0, 3));
        assertEquals(1 + (1 << 7) + (1 << 14), reader.value());
        assertEquals(4, reader.read(segment, 3, 4));
        assertEquals(5, reader.value());
    }

    @Test
    void redundantEncodingsKeepTheirLength() {
        // A 4-byte size field as ProtoZero reserves it, holding 5.
        MemorySegment segment = MemorySegment.ofArray(new byte[] {(byte) 0x85, (byte) 0x80, (byte) 0x80, 0x00});
        assertEquals(4, reader.read(segment, 0, 4));
        assertEquals(5, reader.value());
    }

    @Test
    void acceptsTenBytesAndRejectsEleven() {
        byte[] bytes = new byte[12];
        Arrays.fill(bytes, (byte) 0xFF);
        bytes[9] = 0x01;
        MemorySegment segment = MemorySegment.ofArray(bytes);
        assertEquals(10, reader.read(segment, 0, bytes.length));
        assertEquals(-1L, reader.value());
        // Ten continuing bytes are too long even when the limit follows them.
        MemorySegment continuing = MemorySegment.ofArray(new byte[] {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1});
        assertEquals(VarIntReader.TOO_LONG, reader.read(continuing, 0, 10));
        assertEquals(VarIntReader.TOO_LONG, reader.read(continuing, 0, 11));
        assertEquals(VarIntReader.TRUNCATED, reader.read(continuing, 0, 9));
    }
}
