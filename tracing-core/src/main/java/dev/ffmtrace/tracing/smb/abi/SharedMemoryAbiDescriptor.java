package dev.ffmtrace.tracing.smb.abi;

/**
 * The byte layout of Perfetto's producer/service shared memory buffer (SMB), shared
 * with C producers byte for byte.
 *
 * <p>The SMB is a sequence of pages of {@code pageSize} bytes (4 to 64 KiB, a multiple of
 * 4 KiB). Each page starts with an 8-byte header and is partitioned into 1, 2, 4, 7 or
 * 14 chunks of equal size (rounded down to a multiple of 4); bytes after the last chunk
 * are unused:
 *
 * <pre>
 *  page:   0       4       8                    8+C                  8+2C
 *          +-------+-------+--------------------+--------------------+---- ... --+------+
 *          |bitmap |reservd|      chunk 0       |      chunk 1       |           | tail |
 *          +-------+-------+--------------------+--------------------+---- ... --+------+
 *
 *  bitmap (atomic uint32, little-endian):
 *   31  30..28   27..26  ...   3..2    1..0
 *  +---+--------+-------+-----+-------+-------+
 *  | 0 | layout | st 13 | ... | st 1  | st 0  |   st i = state of chunk i (2 bits)
 *  +---+--------+-------+-----+-------+-------+   layout: 0 not partitioned, 1..5 = 1,2,4,7,14 chunks
 *
 *  chunk:  0               4           6           8
 *          +---------------+-----------+-----------+----------------------------------+
 *          | chunk_id u32  | writer_id | packets   | payload: [size varint][bytes] ... |
 *          +---------------+-----------+-----------+----------------------------------+
 *
 *  packets (atomic uint16):
 *   15..13     12          11          10          9..0
 *  +--------+-----------+-----------+-----------+-------------+
 *  |  0     | needs     | last cont.| first cont| count       |
 *  |        | patching  | on next   | from prev | (0..1023)   |
 *  +--------+-----------+-----------+-----------+-------------+
 * </pre>
 *
 * A page whose bitmap is 0 is free; releasing its last non-free chunk resets the bitmap
 * to 0, forgetting the layout.
 */
public final class SharedMemoryAbiDescriptor {
    public static final int MIN_PAGE_SIZE = 4096;
    public static final int MAX_PAGE_SIZE = 65536;
    public static final int MAX_CHUNKS_PER_PAGE = 14;

    public static final int PAGE_HEADER_SIZE = 8;
    public static final int PAGE_BITMAP_OFFSET = 0;
    public static final int PAGE_RESERVED_OFFSET = 4;

    public static final int CHUNK_HEADER_SIZE = 8;
    public static final int CHUNK_ID_OFFSET = 0;
    public static final int CHUNK_WRITER_ID_OFFSET = 4;
    public static final int CHUNK_PACKETS_OFFSET = 6;
    public static final int CHUNK_ALIGNMENT = 4;

    /** Chunk states, 2 bits each. */
    public static final int CHUNK_FREE = 0;
    public static final int CHUNK_BEING_WRITTEN = 1;
    public static final int CHUNK_BEING_READ = 2;
    public static final int CHUNK_COMPLETE = 3;
    public static final int CHUNK_STATE_BITS = 2;
    public static final int CHUNK_STATE_MASK = 0x3;

    /** Page layouts, the 3 bits at {@link #LAYOUT_SHIFT}. */
    public static final int LAYOUT_NOT_PARTITIONED = 0;
    public static final int LAYOUT_DIV1 = 1;
    public static final int LAYOUT_DIV2 = 2;
    public static final int LAYOUT_DIV4 = 3;
    public static final int LAYOUT_DIV7 = 4;
    public static final int LAYOUT_DIV14 = 5;
    public static final int LAYOUT_SHIFT = 28;
    public static final int LAYOUT_MASK = 0x70000000;
    public static final int ALL_CHUNKS_MASK = 0x0FFFFFFF;

    /** Packets word fields. */
    public static final int PACKET_COUNT_MASK = 0x3FF;
    public static final int MAX_PACKET_COUNT = 1023;
    public static final int FLAGS_SHIFT = 10;
    public static final int FLAG_FIRST_PACKET_CONTINUES_FROM_PREV_CHUNK = 1;
    public static final int FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK = 2;
    public static final int FLAG_CHUNK_NEEDS_PATCHING = 4;
    public static final int FLAGS_MASK = 0x7;

    /** Bytes a writer reserves for a packet's size: a redundant 4-byte varint. */
    public static final int PACKET_HEADER_SIZE = 4;
    /** A packet size meaning "this packet was dropped" ({@code ff ff ff 7f}). */
    public static final int PACKET_SIZE_DROP_PACKET = 0x0FFFFFFF;

    public static final int MAX_WRITER_ID = 32767;

    private static final int[] CHUNKS_PER_LAYOUT = {0, 1, 2, 4, 7, 14, 0, 0};

    private SharedMemoryAbiDescriptor() {
    }

    /** Chunks in a page of this layout; 0 for not-partitioned and the two reserved layouts. */
    public static int chunksPerLayout(int layout) {
        return CHUNKS_PER_LAYOUT[layout & 0x7];
    }

    /** Perfetto's chunk size: the page minus its header, split evenly, rounded down to 4 bytes. */
    public static int chunkSize(int pageSize, int layout) {
        int chunks = chunksPerLayout(layout);
        return chunks == 0 ? 0 : ((pageSize - PAGE_HEADER_SIZE) / chunks) & ~(CHUNK_ALIGNMENT - 1);
    }

    public static int layoutOf(int bitmap) {
        return (bitmap & LAYOUT_MASK) >>> LAYOUT_SHIFT;
    }

    public static int chunkStateOf(int bitmap, int chunk) {
        return (bitmap >>> (chunk * CHUNK_STATE_BITS)) & CHUNK_STATE_MASK;
    }

    public static int packetCountOf(int packets) {
        return packets & PACKET_COUNT_MASK;
    }

    public static int flagsOf(int packets) {
        return (packets >>> FLAGS_SHIFT) & FLAGS_MASK;
    }

    public static int packets(int count, int flags) {
        return (count & PACKET_COUNT_MASK) | ((flags & FLAGS_MASK) << FLAGS_SHIFT);
    }

    /** Whether {@code pageSize} is one Perfetto accepts: 4..64 KiB in steps of 4 KiB. */
    public static boolean isValidPageSize(int pageSize) {
        return pageSize >= MIN_PAGE_SIZE && pageSize <= MAX_PAGE_SIZE && pageSize % MIN_PAGE_SIZE == 0;
    }
}
