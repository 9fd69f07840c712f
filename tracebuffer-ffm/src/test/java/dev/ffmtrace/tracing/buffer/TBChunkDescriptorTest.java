package dev.ffmtrace.tracing.buffer;

import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.HexFormat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TBChunkDescriptorTest {

    @Test
    void headerBytesMatchPerfettosTbChunk() {
        MemorySegment seg = MemorySegment.ofArray(new byte[64]);
        TBChunkDescriptor.writeHeader(seg, 32, 0x11223344, TBChunkDescriptor.producerAndWriterId(0x5566, 0x7788),
                0x0102, 0x0304, 0x0506, 0x87);
        int checksum = TBChunkDescriptor.checksum(32, 0x0102);
        assertEquals("44332211" + "88776655" + "0201" + "0403" + "0605" + "87" + String.format("%02x", checksum),
                HexFormat.of().formatHex(seg.asSlice(32, 16).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)));
        assertEquals(0x11223344, TBChunkDescriptor.chunkId(seg, 32));
        assertEquals(0x55667788, TBChunkDescriptor.producerAndWriterId(seg, 32));
        assertEquals(0x0102, TBChunkDescriptor.size(seg, 32));
        assertEquals(0x0304, TBChunkDescriptor.payloadSize(seg, 32));
        assertEquals(0x0506, TBChunkDescriptor.payloadAvail(seg, 32));
        assertEquals(0x87, TBChunkDescriptor.flags(seg, 32));
        assertTrue(TBChunkDescriptor.isChecksumValid(seg, 32));
        assertFalse(TBChunkDescriptor.isPadding(seg, 32));
    }

    @Test
    void offsetsFollowTheLayout() {
        assertEquals(0, TBChunkDescriptor.CHUNK_ID_OFFSET);
        assertEquals(4, TBChunkDescriptor.PRODUCER_AND_WRITER_ID_OFFSET);
        assertEquals(8, TBChunkDescriptor.SIZE_OFFSET);
        assertEquals(10, TBChunkDescriptor.PAYLOAD_SIZE_OFFSET);
        assertEquals(12, TBChunkDescriptor.PAYLOAD_AVAIL_OFFSET);
        assertEquals(14, TBChunkDescriptor.FLAGS_OFFSET);
        assertEquals(15, TBChunkDescriptor.CHECKSUM_OFFSET);
        assertEquals(16, TBChunkDescriptor.HEADER_SIZE);
    }

    @Test
    void checksumXorsTheBytesOfOffsetAndSize() {
        assertEquals(0, TBChunkDescriptor.checksum(0, 0));
        assertEquals(0x12 ^ 0x34 ^ 0x56 ^ 0x78 ^ 0x9A ^ 0xBC, TBChunkDescriptor.checksum(0x12345678L, 0x9ABC));
        assertEquals(0x8F, TBChunkDescriptor.checksum(3968, 0));
        assertEquals(0xFF ^ 0xFF, TBChunkDescriptor.checksum(0, 0xFFFF));
    }

    @Test
    void paddingHeaderIsZeroButForSizeAndChecksum() {
        MemorySegment seg = MemorySegment.ofArray(new byte[32]);
        seg.fill((byte) 0x77);
        TBChunkDescriptor.writePadding(seg, 16, 0, 0);
        assertEquals("00000000" + "00000000" + "0000" + "0000" + "0000" + "00" + "10",
                HexFormat.of().formatHex(seg.asSlice(16, 16).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)));
        assertTrue(TBChunkDescriptor.isPadding(seg, 16));
        assertTrue(TBChunkDescriptor.isChecksumValid(seg, 16));
    }

    @Test
    void outerSizeRoundsHeaderPlusPayloadUpToSixteen() {
        assertEquals(16, TBChunkDescriptor.outerSize(0));
        assertEquals(32, TBChunkDescriptor.outerSize(1));
        assertEquals(32, TBChunkDescriptor.outerSize(16));
        assertEquals(48, TBChunkDescriptor.outerSize(17));
        assertEquals(65552, TBChunkDescriptor.outerSize(TBChunkDescriptor.MAX_SIZE));
    }
}
