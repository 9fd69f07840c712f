package dev.ffmtrace.protozero;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.WireFormat;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

import java.io.ByteArrayOutputStream;
import java.io.IOException;

import static dev.ffmtrace.protozero.TestMessages.hex;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** Every packed variant against the same field written with CodedOutputStream. */
class PackedConformanceTest {
    private static final int ID = 7;

    interface ElementWriter {
        void write(CodedOutputStream out, int index) throws IOException;
    }

    private static String canonical(int count, ElementWriter element) throws IOException {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        CodedOutputStream b = CodedOutputStream.newInstance(body);
        for (int i = 0; i < count; i++) {
            element.write(b, i);
        }
        b.flush();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        CodedOutputStream o = CodedOutputStream.newInstance(out);
        o.writeTag(ID, WireFormat.WIRETYPE_LENGTH_DELIMITED);
        o.writeUInt32NoTag(body.size());
        o.writeRawBytes(body.toByteArray());
        o.flush();
        return hex(out.toByteArray());
    }

    private static HeapBuffered<WireConformanceTest.Root> buffer(int sliceSize) {
        return new HeapBuffered<>(WireConformanceTest.Root.FACTORY, sliceSize, sliceSize);
    }

    @Property(tries = 300)
    void int32Variants(@ForAll @Size(max = 40) int[] values, @ForAll @IntRange(min = 4, max = 64) int sliceSize)
            throws IOException {
        HeapBuffered<WireConformanceTest.Root> b = buffer(sliceSize);
        b.get().appendPackedInt32s(ID, values, 0, values.length);
        assertEquals(canonical(values.length, (o, i) -> o.writeInt32NoTag(values[i])), hex(b.toByteArray()));

        b = buffer(sliceSize);
        b.get().appendPackedUInt32s(ID, values, 0, values.length);
        assertEquals(canonical(values.length, (o, i) -> o.writeUInt32NoTag(values[i])), hex(b.toByteArray()));

        b = buffer(sliceSize);
        b.get().appendPackedSInt32s(ID, values, 0, values.length);
        assertEquals(canonical(values.length, (o, i) -> o.writeSInt32NoTag(values[i])), hex(b.toByteArray()));

        b = buffer(sliceSize);
        b.get().appendPackedFixed32s(ID, values, 0, values.length);
        assertEquals(canonical(values.length, (o, i) -> o.writeFixed32NoTag(values[i])), hex(b.toByteArray()));
    }

    @Property(tries = 300)
    void int64Variants(@ForAll @Size(max = 40) long[] values, @ForAll @IntRange(min = 4, max = 64) int sliceSize)
            throws IOException {
        HeapBuffered<WireConformanceTest.Root> b = buffer(sliceSize);
        b.get().appendPackedSInt64s(ID, values, 0, values.length);
        assertEquals(canonical(values.length, (o, i) -> o.writeSInt64NoTag(values[i])), hex(b.toByteArray()));

        b = buffer(sliceSize);
        double[] doubles = new double[values.length];
        float[] floats = new float[values.length];
        for (int i = 0; i < values.length; i++) {
            doubles[i] = Double.longBitsToDouble(values[i]);
            floats[i] = Float.intBitsToFloat((int) values[i]);
        }
        b.get().appendPackedDoubles(ID, doubles, 0, doubles.length);
        assertEquals(canonical(values.length, (o, i) -> o.writeDoubleNoTag(doubles[i])), hex(b.toByteArray()));

        b = buffer(sliceSize);
        b.get().appendPackedFloats(ID, floats, 0, floats.length);
        assertEquals(canonical(values.length, (o, i) -> o.writeFloatNoTag(floats[i])), hex(b.toByteArray()));
    }

    @Property(tries = 100)
    void subRangesAreHonoured(@ForAll @Size(min = 3, max = 20) long[] values) throws IOException {
        HeapBuffered<WireConformanceTest.Root> b = buffer(4096);
        b.get().appendPackedVarInts(ID, values, 1, values.length - 2);
        assertEquals(canonical(values.length - 2, (o, i) -> o.writeUInt64NoTag(values[i + 1])), hex(b.toByteArray()));
    }
}
