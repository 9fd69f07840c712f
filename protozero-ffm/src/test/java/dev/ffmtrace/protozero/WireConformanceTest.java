package dev.ffmtrace.protozero;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.WireFormat;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static dev.ffmtrace.protozero.TestMessages.hex;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The writer against protobuf-java's CodedOutputStream and CodedInputStream. */
class WireConformanceTest {

    sealed interface Op permits VarInt, SInt64, Fixed32, Fixed64, Str, Bytes, PackedVarInts, PackedFixed64s, Nested {
        int id();
    }

    record VarInt(int id, long value) implements Op { }

    record SInt64(int id, long value) implements Op { }

    record Fixed32(int id, int value) implements Op { }

    record Fixed64(int id, long value) implements Op { }

    record Str(int id, String value) implements Op { }

    record Bytes(int id, byte[] value) implements Op { }

    record PackedVarInts(int id, long[] values) implements Op { }

    record PackedFixed64s(int id, long[] values) implements Op { }

    record Nested(int id, List<Op> children) implements Op { }

    static final class Root extends Message {
        static final MessageFactory<Root> FACTORY = MessageFactory.of(Root::new);
    }

    static final class Child extends Message {
        static final MessageFactory<Child> FACTORY = MessageFactory.of(Child::new);
    }

    private static Arbitrary<Integer> ids() {
        return Arbitraries.oneOf(Arbitraries.integers().between(1, 15),
                Arbitraries.integers().between(16, 5000), Arbitraries.integers().between(1, ProtoWire.MAX_FIELD_ID));
    }

    private static Arbitrary<String> strings() {
        return Arbitraries.oneOf(
                Arbitraries.strings().all().ofMaxLength(40),
                Arbitraries.strings().withChars("a\u00e9\u07ff\u0800\u20ac\uffff\ud83d\ude00\ud800\udc00").ofMaxLength(30),
                // Past 42 chars the UTF-8 length is computed first rather than patched in.
                Arbitraries.strings().withChars("a\u00e9\u07ff\u0800\u20ac\uffff\ud83d\ude00\ud800\udc00")
                        .ofMinLength(43).ofMaxLength(200),
                Arbitraries.strings().ascii().ofMaxLength(300));
    }

    private static Arbitrary<Op> scalarOp() {
        Arbitrary<Long> longs = Arbitraries.oneOf(Arbitraries.longs(),
                Arbitraries.longs().between(-200, 200), Arbitraries.longs().between(0, 1L << 35));
        return Arbitraries.oneOf(
                Combinators.combine(ids(), longs).as(VarInt::new),
                Combinators.combine(ids(), longs).as(SInt64::new),
                Combinators.combine(ids(), Arbitraries.integers()).as(Fixed32::new),
                Combinators.combine(ids(), longs).as(Fixed64::new),
                Combinators.combine(ids(), strings()).as(Str::new),
                Combinators.combine(ids(), Arbitraries.bytes().array(byte[].class).ofMaxSize(200)).as(Bytes::new),
                Combinators.combine(ids(), longs.array(long[].class).ofMaxSize(20)).as(PackedVarInts::new),
                Combinators.combine(ids(), longs.array(long[].class).ofMaxSize(20)).as(PackedFixed64s::new));
    }

    static Arbitrary<Op> op(int depth) {
        if (depth == 0) {
            return scalarOp();
        }
        Arbitrary<Op> nested = Combinators.combine(ids(), Arbitraries.lazy(() -> op(depth - 1)).list().ofMaxSize(6))
                .as(Nested::new);
        return Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(3, scalarOp()),
                net.jqwik.api.Tuple.of(1, nested));
    }

    @Provide
    Arbitrary<List<Op>> flatMessages() {
        return scalarOp().list().ofMaxSize(12);
    }

    @Provide
    Arbitrary<List<Op>> trees() {
        return op(4).list().ofMaxSize(8);
    }

    @Property(tries = 400)
    void flatMessagesMatchCodedOutputStreamByteForByte(@ForAll("flatMessages") List<Op> ops,
                                                       @ForAll @IntRange(min = 4, max = 300) int sliceSize)
            throws IOException {
        HeapBuffered<Root> buffered = new HeapBuffered<>(Root.FACTORY, sliceSize, sliceSize * 4L);
        write(buffered.get(), ops);
        assertEquals(hex(canonical(ops)), hex(buffered.toByteArray()));
    }

    @Property(tries = 300)
    void nestedMessagesParseWithCodedInputStream(@ForAll("trees") List<Op> ops,
                                                 @ForAll @IntRange(min = 4, max = 300) int sliceSize)
            throws IOException {
        HeapBuffered<Root> buffered = new HeapBuffered<>(Root.FACTORY, sliceSize, sliceSize);
        write(buffered.get(), ops);
        byte[] bytes = buffered.toByteArray();
        assertMatches(ops, bytes);
        assertEquals(bytes.length, buffered.get().size());
    }

    @Property(tries = 200)
    void nestedMessagesInOneSliceAreCanonicalWhenSmall(@ForAll("trees") List<Op> ops) throws IOException {
        HeapBuffered<Root> buffered = new HeapBuffered<>(Root.FACTORY, 1 << 20, 1 << 20);
        write(buffered.get(), ops);
        byte[] bytes = buffered.toByteArray();
        if (allNestedBodiesAtMost127(ops)) {
            assertEquals(hex(canonical(ops)), hex(bytes));
        } else {
            assertMatches(ops, bytes);
        }
    }

    private static boolean allNestedBodiesAtMost127(List<Op> ops) throws IOException {
        for (Op op : ops) {
            if (op instanceof Nested n && (canonical(n.children()).length > 127 || !allNestedBodiesAtMost127(n.children()))) {
                return false;
            }
        }
        return true;
    }

    static void write(Message m, List<Op> ops) {
        for (Op op : ops) {
            switch (op) {
                case VarInt v -> m.appendVarInt(v.id(), v.value());
                case SInt64 v -> m.appendSInt64(v.id(), v.value());
                case Fixed32 v -> m.appendFixed32(v.id(), v.value());
                case Fixed64 v -> m.appendFixed64(v.id(), v.value());
                case Str v -> m.appendString(v.id(), v.value());
                case Bytes v -> m.appendBytes(v.id(), v.value());
                case PackedVarInts v -> m.appendPackedVarInts(v.id(), v.values(), 0, v.values().length);
                case PackedFixed64s v -> m.appendPackedFixed64s(v.id(), v.values(), 0, v.values().length);
                case Nested v -> write(m.beginNestedMessage(v.id(), Child.FACTORY), v.children());
            }
        }
    }

    static byte[] canonical(List<Op> ops) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        CodedOutputStream cos = CodedOutputStream.newInstance(out);
        for (Op op : ops) {
            switch (op) {
                case VarInt v -> cos.writeUInt64(v.id(), v.value());
                case SInt64 v -> cos.writeSInt64(v.id(), v.value());
                case Fixed32 v -> cos.writeFixed32(v.id(), v.value());
                case Fixed64 v -> cos.writeFixed64(v.id(), v.value());
                case Str v -> cos.writeString(v.id(), v.value());
                case Bytes v -> cos.writeByteArray(v.id(), v.value());
                case PackedVarInts v -> {
                    cos.writeTag(v.id(), WireFormat.WIRETYPE_LENGTH_DELIMITED);
                    int size = 0;
                    for (long x : v.values()) {
                        size += CodedOutputStream.computeUInt64SizeNoTag(x);
                    }
                    cos.writeUInt32NoTag(size);
                    for (long x : v.values()) {
                        cos.writeUInt64NoTag(x);
                    }
                }
                case PackedFixed64s v -> {
                    cos.writeTag(v.id(), WireFormat.WIRETYPE_LENGTH_DELIMITED);
                    cos.writeUInt32NoTag(v.values().length * 8);
                    for (long x : v.values()) {
                        cos.writeFixed64NoTag(x);
                    }
                }
                case Nested v -> cos.writeByteArray(v.id(), canonical(v.children()));
            }
        }
        cos.flush();
        return out.toByteArray();
    }

    /** Parses {@code bytes} with protobuf-java and checks they hold exactly {@code ops}. */
    static void assertMatches(List<Op> ops, byte[] bytes) throws IOException {
        CodedInputStream in = CodedInputStream.newInstance(bytes);
        for (Op op : ops) {
            int tag = in.readTag();
            assertEquals(op.id(), WireFormat.getTagFieldNumber(tag), op.toString());
            switch (op) {
                case VarInt v -> assertEquals(v.value(), in.readUInt64());
                case SInt64 v -> assertEquals(v.value(), in.readSInt64());
                case Fixed32 v -> assertEquals(v.value(), in.readFixed32());
                case Fixed64 v -> assertEquals(v.value(), in.readFixed64());
                case Str v -> assertEquals(hex(v.value().getBytes(java.nio.charset.StandardCharsets.UTF_8)),
                        hex(in.readByteArray()));
                case Bytes v -> assertArrayEquals(v.value(), in.readByteArray());
                case PackedVarInts v -> {
                    CodedInputStream packed = CodedInputStream.newInstance(in.readByteArray());
                    for (long x : v.values()) {
                        assertEquals(x, packed.readUInt64());
                    }
                    assertTrue(packed.isAtEnd());
                }
                case PackedFixed64s v -> {
                    byte[] packed = in.readByteArray();
                    assertEquals(v.values().length * 8, packed.length);
                    CodedInputStream p = CodedInputStream.newInstance(packed);
                    for (long x : v.values()) {
                        assertEquals(x, p.readFixed64());
                    }
                }
                case Nested v -> assertMatches(v.children(), in.readByteArray());
            }
        }
        assertTrue(in.isAtEnd(), "trailing bytes after " + ops.size() + " fields: " + hex(bytes));
    }

    /** Every varint length (values 2^k - 1 and 2^k) after tags of 1 to 5 bytes, at every offset near a slice end. */
    @Test
    void varIntsOfEveryLengthAfterTagsOfEveryLength() throws IOException {
        for (int id : new int[] {1, 15, 16, 2047, 2048, 262143, 262144, ProtoWire.MAX_FIELD_ID}) {
            List<Op> ops = new ArrayList<>();
            for (int k = 0; k < 64; k++) {
                ops.add(new VarInt(id, (1L << k) - 1));
                ops.add(new VarInt(id, 1L << k));
            }
            ops.add(new VarInt(id, -1));
            byte[] expected = canonical(ops);
            for (int sliceSize = 4; sliceSize <= 24; sliceSize++) {
                HeapBuffered<Root> buffered = new HeapBuffered<>(Root.FACTORY, sliceSize, sliceSize);
                write(buffered.get(), ops);
                assertEquals(hex(expected), hex(buffered.toByteArray()), "field " + id + ", slices of " + sliceSize);
            }
        }
    }

    /** Nested bodies of 0 to 130 bytes in one slice: compacted to a 1-byte length up to 127. */
    @Test
    void nestedBodiesOfEverySmallSizeAreCanonical() throws IOException {
        for (int bodySize = 0; bodySize <= 130; bodySize++) {
            byte[] body = new byte[Math.max(0, bodySize - 2)];
            for (int i = 0; i < body.length; i++) {
                body[i] = (byte) (i * 7 + bodySize);
            }
            List<Op> children = bodySize < 2 ? List.of() : List.of(new Bytes(1, body));
            if (bodySize == 1 || (bodySize >= 2 && canonical(children).length != bodySize)) {
                continue;
            }
            List<Op> ops = List.of(new VarInt(1, 5), new Nested(2, children), new VarInt(3, 300));
            HeapBuffered<Root> buffered = new HeapBuffered<>(Root.FACTORY, 4096, 4096);
            write(buffered.get(), ops);
            byte[] bytes = buffered.toByteArray();
            if (bodySize <= ProtoWire.MAX_ONE_BYTE_MESSAGE_LENGTH) {
                assertEquals(hex(canonical(ops)), hex(bytes), "body of " + bodySize);
            } else {
                assertMatches(ops, bytes);
            }
        }
    }

    /** ASCII strings of 0 to 60 chars with no, or one, non-ASCII char at every position. */
    @Test
    void asciiStringsWithOneNonAsciiCharAnywhere() throws IOException {
        for (int length = 0; length <= 60; length++) {
            for (int at = -1; at < length; at++) {
                char[] chars = "abcdefgh".repeat(8).substring(0, length).toCharArray();
                if (at >= 0) {
                    chars[at] = at % 2 == 0 ? '\u00e9' : '\u20ac';
                }
                List<Op> ops = List.of(new Str(1, new String(chars)), new VarInt(2, 1));
                for (int sliceSize : new int[] {16, 4096}) {
                    HeapBuffered<Root> buffered = new HeapBuffered<>(Root.FACTORY, sliceSize, sliceSize);
                    write(buffered.get(), ops);
                    assertEquals(hex(canonical(ops)), hex(buffered.toByteArray()), new String(chars));
                }
            }
        }
    }

    @Property(tries = 1000)
    void stringsEncodeLikeProtobufJava(@ForAll("anyStrings") String value,
                                       @ForAll @IntRange(min = 8, max = 1024) int sliceSize) throws IOException {
        HeapBuffered<Root> buffered = new HeapBuffered<>(Root.FACTORY, sliceSize, sliceSize);
        buffered.get().appendString(1, value);
        assertEquals(hex(canonical(List.of(new Str(1, value)))), hex(buffered.toByteArray()));
    }

    @Provide
    Arbitrary<String> anyStrings() {
        return strings();
    }

    @Property(tries = 50)
    void scatteredBytesAndSegmentsAndBuffers(@ForAll byte[] value, @ForAll @IntRange(min = 4, max = 64) int sliceSize) {
        HeapBuffered<Root> a = new HeapBuffered<>(Root.FACTORY, sliceSize, sliceSize);
        a.get().appendBytes(3, value);
        HeapBuffered<Root> b = new HeapBuffered<>(Root.FACTORY, sliceSize, sliceSize);
        b.get().appendBytes(3, java.lang.foreign.MemorySegment.ofArray(value));
        HeapBuffered<Root> c = new HeapBuffered<>(Root.FACTORY, sliceSize, sliceSize);
        c.get().appendBytes(3, java.nio.ByteBuffer.allocateDirect(value.length).put(value).flip());
        byte[] expected = a.toByteArray();
        assertArrayEquals(expected, b.toByteArray());
        assertArrayEquals(expected, c.toByteArray());
        assertEquals(Arrays.hashCode(expected), Arrays.hashCode(b.toSegment().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)));
    }
}
