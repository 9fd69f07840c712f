package dev.ffmtrace.heapprofd.wire;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HexFormat;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The service side's checks of a record, as Perfetto's ReceiveWireMessage makes them, and garbage. */
class WireRecordTest {
    private final WireRecord reader = new WireRecord();

    private static MemorySegment bytes(String hex) {
        return MemorySegment.ofArray(HexFormat.of().parseHex(hex));
    }

    private String refusal(MemorySegment record) {
        return assertThrows(WireFormatException.class, () -> reader.read(record, 0, record.byteSize())).getMessage();
    }

    @Test
    void shortUnknownAndTruncatedRecordsAreRefused() {
        assertEquals("a record of 7 bytes has no record type", refusal(bytes("00000000000000")));
        assertEquals("unknown record type 3", refusal(bytes("0300000000000000")));
        assertEquals("FREE record of 31 bytes: its body needs 24", refusal(MemorySegment.ofArray(new byte[31])));
        MemorySegment malloc = MemorySegment.ofArray(new byte[8 + 327]);
        malloc.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 0, (byte) 1);
        assertEquals("MALLOC record of 335 bytes: its body needs 328", refusal(malloc));
    }

    @Test
    void aHeapNameEndsAtItsNulOrAfter63BytesAndMayBeEmpty() throws Exception {
        MemorySegment heapName = MemorySegment.ofArray(new byte[88]);
        heapName.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 0, (byte) 2);
        assertEquals(WireRecord.Type.HEAP_NAME, reader.read(heapName, 0, heapName.byteSize()));
        assertEquals("", reader.heapName(), "an interval update");
        heapName.asSlice(20, 64).fill((byte) 'a');
        reader.read(heapName, 0, heapName.byteSize());
        assertEquals("a".repeat(63), reader.heapName(), "cut where Perfetto's service puts the terminator");
    }

    @Test
    void bytesAfterAFreeAreIgnoredAndAMallocsRestIsItsStack() throws Exception {
        List<String> records = HeapprofdWireGoldenTest.javaRecords();
        MemorySegment free = bytes(records.get(1) + "ffffffff");
        assertEquals(WireRecord.Type.FREE, reader.read(free, 0, free.byteSize()));
        assertEquals(8, reader.freeSequenceNumber());
        MemorySegment malloc = bytes(records.get(0));
        long noStack = WireRecords.MALLOC_RECORD_HEADER_SIZE;
        assertEquals(WireRecord.Type.MALLOC, reader.read(malloc, 0, noStack));
        assertEquals(0, reader.stackSize());
    }

    @Test
    void aMallocsStackIsLeftWhereItWasReadAndCopiedOnlyWhenAsked() throws Exception {
        MemorySegment malloc = bytes(HeapprofdWireGoldenTest.javaRecords().get(0));
        reader.read(malloc, 0, malloc.byteSize());
        long stackSize = malloc.byteSize() - WireRecord.STACK_OFFSET;
        assertEquals(stackSize, reader.stackSize());
        MemorySegment copied = reader.copyStack(malloc, 0);
        assertEquals(-1, copied.mismatch(malloc.asSlice(WireRecord.STACK_OFFSET)));
        // The client writes its ring on: the metadata read and the copy made stay, a new copy sees the writes.
        long allocSize = reader.alloc().allocSize();
        byte first = malloc.get(ValueLayout.JAVA_BYTE, WireRecord.STACK_OFFSET);
        assertNotEquals((byte) 0x77, first, "a byte the fill changes");
        malloc.fill((byte) 0x77);
        assertEquals(allocSize, reader.alloc().allocSize());
        assertEquals(first, copied.get(ValueLayout.JAVA_BYTE, 0));
        assertEquals((byte) 0x77, reader.copyStack(malloc, 0).get(ValueLayout.JAVA_BYTE, 0));
    }

    @Property(tries = 2000)
    void garbageIsRefusedOrReadNeverThrownOut(@ForAll @Size(max = 600) byte[] garbage) {
        MemorySegment record = MemorySegment.ofArray(garbage);
        try {
            if (reader.read(record, 0, record.byteSize()) == WireRecord.Type.HEAP_NAME) {
                reader.heapName();
            }
        } catch (WireFormatException e) {
            // Refused, with a reason: what garbage should get.
        }
    }
}
