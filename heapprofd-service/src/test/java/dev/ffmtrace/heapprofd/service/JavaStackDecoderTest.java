package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.protozero.ProtoWire;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

/** The decoder of Java stacks, on what the service-level fuzzing of HeapprofdMalformedRecordsTest found. */
class JavaStackDecoderTest {
    @Test
    void aFrameNameLengthOf2To63OrMoreIsRefusedAndTheStacksDefinitionsTakenBack() {
        JavaStackDecoder decoder = new JavaStackDecoder();
        assertEquals(List.of("A.a(A.java:1)"), names(decoder, definition(0, "A.a(A.java:1)")));
        for (long length : new long[] {-1, Long.MIN_VALUE}) {
            // A varint past 2^63 is a negative long: no less too long than a name past the payload.
            ByteArrayOutputStream bad = new ByteArrayOutputStream();
            bad.writeBytes(definition(1, "B.b(B.java:2)"));
            varint(bad, 2L << 1 | 1);
            varint(bad, length);
            bad.writeBytes(new byte[8]);
            assertNull(decoder.decode(MemorySegment.ofArray(bad.toByteArray()), 0, bad.size()));
        }
        // Frame 0 stands; frame 1 was taken back with the stack that defined it, so it is defined again.
        ByteArrayOutputStream good = new ByteArrayOutputStream();
        varint(good, 0);
        good.writeBytes(definition(1, "C.c(C.java:3)"));
        assertEquals(List.of("A.a(A.java:1)", "C.c(C.java:3)"), names(decoder, good.toByteArray()));
    }

    @Test
    void aStackIsReadWhereItIsInItsRecordAndAFrameIsMadeOnceForEveryStackThatUsesIt() {
        JavaStackDecoder decoder = new JavaStackDecoder();
        byte[] defined = definition(0, "A.a(A.java:1)");
        byte[] record = new byte[defined.length + 10];
        System.arraycopy(defined, 0, record, 5, defined.length);
        Frame frame = decoder.decode(MemorySegment.ofArray(record), 5, defined.length).getFirst();
        assertEquals(Frame.java("A.a(A.java:1)"), frame);
        ByteArrayOutputStream used = new ByteArrayOutputStream();
        varint(used, 0);
        varint(used, 0);
        List<Frame> stack = decoder.decode(MemorySegment.ofArray(used.toByteArray()), 0, used.size());
        assertEquals(2, stack.size());
        assertSame(frame, stack.get(0));
        assertSame(frame, stack.get(1));
    }

    private static List<String> names(JavaStackDecoder decoder, byte[] payload) {
        return decoder.decode(MemorySegment.ofArray(payload), 0, payload.length).stream().map(Frame::name).toList();
    }

    private static byte[] definition(long id, String name) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] utf8 = name.getBytes(StandardCharsets.UTF_8);
        varint(out, id << 1 | 1);
        varint(out, utf8.length);
        out.writeBytes(utf8);
        return out.toByteArray();
    }

    private static void varint(ByteArrayOutputStream out, long value) {
        byte[] bytes = new byte[10];
        out.write(bytes, 0, ProtoWire.writeVarInt(bytes, 0, value));
    }
}
