package dev.ffmtrace.tracing.smb.abi;

import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.Layouts;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.HexFormat;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class SharedMemoryAbiTest {
    private final Arena arena = Arena.ofConfined();

    @AfterEach
    void close() {
        arena.close();
    }

    private SharedMemoryAbi abi(int pages, int pageSize) {
        return new SharedMemoryAbi(arena.allocate((long) pages * pageSize, 4096), pageSize);
    }

    /** Chunk size / tail for every page size and layout, as Perfetto computes them (spec table 1.3). */
    private static final String CHUNK_SIZE_TABLE = """
            4096 4088/0 2044/0 1020/8 584/0 292/0
            8192 8184/0 4092/0 2044/8 1168/8 584/8
            12288 12280/0 6140/0 3068/8 1752/16 876/16
            16384 16376/0 8188/0 4092/8 2336/24 1168/24
            20480 20472/0 10236/0 5116/8 2924/4 1460/32
            24576 24568/0 12284/0 6140/8 3508/12 1752/40
            28672 28664/0 14332/0 7164/8 4092/20 2044/48
            32768 32760/0 16380/0 8188/8 4680/0 2340/0
            36864 36856/0 18428/0 9212/8 5264/8 2632/8
            40960 40952/0 20476/0 10236/8 5848/16 2924/16
            45056 45048/0 22524/0 11260/8 6432/24 3216/24
            49152 49144/0 24572/0 12284/8 7020/4 3508/32
            53248 53240/0 26620/0 13308/8 7604/12 3800/40
            57344 57336/0 28668/0 14332/8 8188/20 4092/48
            61440 61432/0 30716/0 15356/8 8776/0 4388/0
            65536 65528/0 32764/0 16380/8 9360/8 4680/8
            """;

    @Test
    void chunkSizesMatchPerfettosTableForEveryPageSizeAndLayout() {
        int rows = 0;
        for (String row : CHUNK_SIZE_TABLE.strip().split("\n")) {
            String[] cells = row.split(" ");
            int pageSize = Integer.parseInt(cells[0]);
            for (int layout = LAYOUT_DIV1; layout <= LAYOUT_DIV14; layout++) {
                String[] expected = cells[layout].split("/");
                int size = SharedMemoryAbiDescriptor.chunkSize(pageSize, layout);
                int tail = pageSize - PAGE_HEADER_SIZE - size * chunksPerLayout(layout);
                assertEquals(Integer.parseInt(expected[0]), size, pageSize + " layout " + layout);
                assertEquals(Integer.parseInt(expected[1]), tail, pageSize + " layout " + layout + " tail");
            }
            rows++;
        }
        assertEquals(16, rows);
        assertEquals(0, SharedMemoryAbiDescriptor.chunkSize(4096, LAYOUT_NOT_PARTITIONED));
        assertEquals(0, SharedMemoryAbiDescriptor.chunkSize(4096, 6));
    }

    @Test
    void pageBitmapsOfCompletePagesAreThoseObservedInPerfetto() {
        int[] layouts = {LAYOUT_DIV1, LAYOUT_DIV2, LAYOUT_DIV4, LAYOUT_DIV7, LAYOUT_DIV14};
        int[] expected = {0x10000003, 0x2000000F, 0x300000FF, 0x40003FFF, 0x5FFFFFFF};
        for (int i = 0; i < layouts.length; i++) {
            SharedMemoryAbi abi = abi(1, 4096);
            assertTrue(abi.tryPartitionPage(0, layouts[i]));
            for (int c = 0; c < chunksPerLayout(layouts[i]); c++) {
                assertTrue(abi.tryAcquireChunkForWriting(0, c, c, 1) >= 0);
                if (layouts[i] == LAYOUT_DIV14 && c == 0) {
                    assertEquals(0x50000001, abi.pageBitmapAcquire(0), "Div14 with chunk 0 being written");
                }
                assertTrue(abi.releaseChunkAsComplete(0, c));
            }
            assertEquals(expected[i], abi.pageBitmapAcquire(0), "layout " + layouts[i]);
            assertTrue(abi.isPageComplete(0));
            assertEquals(expected[i], abi.segment().get(Layouts.INT, 0), "little-endian in memory");
        }
    }

    @Test
    void chunkHeaderBytesAreByteExact() {
        SharedMemoryAbi abi = abi(1, 4096);
        abi.tryPartitionPage(0, LAYOUT_DIV2);
        long offset = abi.tryAcquireChunkForWriting(0, 1, 0x11223344, 0x5566, packets(5, FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK));
        assertEquals(8 + 2044, offset);
        byte[] header = abi.segment().asSlice(offset, 8).toArray(Layouts.BYTE);
        assertArrayEquals(HexFormat.of().parseHex("4433221166550508"), header);
        assertEquals(0x11223344, abi.chunkId(offset));
        assertEquals(0x5566, abi.writerId(offset));
        assertEquals(5, packetCountOf(abi.packetsAcquire(offset)));
        assertEquals(FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK, flagsOf(abi.packetsAcquire(offset)));
        abi.setFlags(offset, FLAG_CHUNK_NEEDS_PATCHING);
        assertEquals(6, abi.incrementPacketCount(offset));
        assertEquals(packets(6, FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK | FLAG_CHUNK_NEEDS_PATCHING), abi.packetsAcquire(offset));
        abi.clearNeedsPatchingFlag(offset);
        assertEquals(packets(6, FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK), abi.packetsAcquire(offset));
    }

    @Test
    void fullLifecycleReturnsThePageToNotPartitioned() {
        SharedMemoryAbi abi = abi(2, 8192);
        assertTrue(abi.isPageFree(1));
        assertTrue(abi.tryPartitionPage(1, LAYOUT_DIV4));
        assertFalse(abi.tryPartitionPage(1, LAYOUT_DIV1), "partitioning needs a bitmap of exactly 0");
        assertEquals(0b1111, abi.freeChunks(1));
        long a = abi.tryAcquireChunkForWriting(1, 0, 7, 3);
        long b = abi.tryAcquireChunkForWriting(1, 2, 8, 3);
        assertEquals(SharedMemoryAbi.NO_CHUNK, abi.tryAcquireChunkForWriting(1, 2, 9, 3), "already being written");
        assertEquals(0b1010, abi.freeChunks(1));
        assertEquals(SharedMemoryAbi.NO_CHUNK, abi.tryAcquireChunkForReading(1, 0), "not complete yet");
        assertTrue(abi.releaseChunkAsComplete(1, 0));
        assertTrue(abi.releaseChunkAsComplete(1, 2));
        assertEquals(a, abi.tryAcquireChunkForReading(1, 0));
        assertEquals(CHUNK_BEING_READ, abi.chunkState(1, 0));
        assertTrue(abi.releaseChunkAsFree(1, 0));
        assertEquals(0, abi.chunkId(a), "the header is cleared on free");
        assertEquals(LAYOUT_DIV4, abi.pageLayout(1), "chunk 2 is still complete");
        assertEquals(b, abi.tryAcquireChunkForReading(1, 2));
        assertTrue(abi.releaseChunkAsFree(1, 2));
        assertTrue(abi.isPageFree(1), "the last chunk freed resets the page");
        assertFalse(abi.releaseChunkAsFree(1, 2), "freeing twice fails instead of corrupting the bitmap");
    }

    @Test
    void constructorRejectsBadGeometryClearly() {
        assertEquals("SMB page size must be 4096..65536 in steps of 4096, got 6000",
                assertThrows(IllegalArgumentException.class, () -> abi(1, 6000)).getMessage());
        assertEquals("SMB page size must be 4096..65536 in steps of 4096, got 131072",
                assertThrows(IllegalArgumentException.class, () -> abi(1, 131072)).getMessage());
        assertEquals("SMB size 12288 is not a positive multiple of the page size 8192",
                assertThrows(IllegalArgumentException.class,
                        () -> new SharedMemoryAbi(arena.allocate(12288, 4096), 8192)).getMessage());
        assertEquals("SMB must start on a 4096-byte boundary",
                assertThrows(IllegalArgumentException.class,
                        () -> new SharedMemoryAbi(arena.allocate(3 * 4096, 4096).asSlice(8, 8192), 4096)).getMessage());
        assertThrows(IllegalArgumentException.class, () -> abi(1, 4096).tryPartitionPage(0, 6));
    }

    @Test
    void garbageInPageHeadersNeverCrashesTheServiceSideTransitions() {
        SplittableRandom random = new SplittableRandom(7);
        SharedMemoryAbi abi = abi(4, 4096);
        MemorySegment smb = abi.segment();
        for (int round = 0; round < 200_000; round++) {
            int page = random.nextInt(4);
            smb.set(Layouts.INT, (long) page * 4096, random.nextInt());
            int chunk = random.nextInt(-2, 16);
            int anyPage = random.nextInt(-1, 6);
            long reading = abi.tryAcquireChunkForReading(anyPage, chunk);
            if (reading != SharedMemoryAbi.NO_CHUNK) {
                assertTrue(reading >= (long) anyPage * 4096 + 8 && reading < (long) (anyPage + 1) * 4096,
                        "an acquired chunk lies in its page");
                abi.releaseChunkAsFree(anyPage, chunk);
            }
            abi.releaseChunkAsFree(anyPage, chunk);
            abi.releaseChunkAsComplete(anyPage, chunk);
            abi.freeChunks(page);
            abi.isPageComplete(page);
        }
    }
}
