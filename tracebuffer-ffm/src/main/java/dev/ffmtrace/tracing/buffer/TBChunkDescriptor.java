package dev.ffmtrace.tracing.buffer;

import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor;
import java.lang.foreign.MemorySegment;

/**
 * The TBChunk: the 16-byte header TraceBufferV2 stores in front of every chunk it
 * copies into its buffer, followed by the chunk's fragments.
 *
 * <pre>
 *  byte  0               4               8       10      12      14  15  16
 *        +---------------+---------------+-------+-------+-------+---+---+
 *        | chunk_id      | producer_and_ | size  |payload|payload|flg|sum|
 *        | (u32)         | writer_id(u32)| (u16) |_size  |_avail |u8 |u8 |
 *        +---------------+---------------+-------+-------+-------+---+---+
 *        | fragments: [varint size][bytes] ... up to payload_size,        |
 *        | then unused bytes up to size, then zeros up to alignUp(16+size)|
 *        +----------------------------------------------------------------+
 * </pre>
 *
 * <ul>
 *   <li>{@code producer_and_writer_id} is {@code producer << 16 | writer}; 0 marks a
 *       padding chunk (an erased chunk or a gap filler), whose size still says how
 *       far the next chunk is.</li>
 *   <li>{@code size} is the reserved payload size: the declared fragments of a
 *       complete chunk, the whole SMB chunk of a scraped (incomplete) one, so that a
 *       re-commit can grow in place. The chunk occupies
 *       {@link #outerSize(int) alignUp(16 + size, 16)} bytes.</li>
 *   <li>{@code payload_size} is the number of bytes of valid fragments;
 *       {@code payload_avail} the number not yet consumed, so the next unread
 *       fragment header is at {@code payload_size - payload_avail}.</li>
 *   <li>{@code flags} are the SMB chunk flags (bits 0..2) plus flags the buffer
 *       adds: {@link #FLAG_INCOMPLETE}, {@link #FLAG_WRITER_ABORT},
 *       {@link #FLAG_CORRUPTED}, {@link #FLAG_PATCHED}, {@link #FLAG_COUNTED}.</li>
 *   <li>{@code checksum} is {@link #checksum(long, int)} of the chunk's offset in
 *       the buffer and its size; it is 0 for offset 0 and size 0.</li>
 * </ul>
 *
 * <p>The layout is Perfetto's {@code TBChunk} byte for byte. It is an implementation
 * detail of the buffer, not an ABI, but it stays identical so that a buffer mapped
 * from a memfd can be inspected by either implementation.
 */
final class TBChunkDescriptor {
    public static final int CHUNK_ID_OFFSET = 0;
    public static final int PRODUCER_AND_WRITER_ID_OFFSET = 4;
    public static final int SIZE_OFFSET = 8;
    public static final int PAYLOAD_SIZE_OFFSET = 10;
    public static final int PAYLOAD_AVAIL_OFFSET = 12;
    public static final int FLAGS_OFFSET = 14;
    public static final int CHECKSUM_OFFSET = 15;

    public static final int HEADER_SIZE = 16;
    /** Chunks start at multiples of the header size, so any gap can hold a padding header. */
    public static final int ALIGNMENT = 16;
    /** Largest {@code size}: the field is 16 bits. */
    public static final int MAX_SIZE = 0xFFFF;

    // The SMB chunk flags, stored as the producer set them.
    public static final int FLAG_FIRST_PACKET_CONTINUES_FROM_PREV_CHUNK =
            SharedMemoryAbiDescriptor.FLAG_FIRST_PACKET_CONTINUES_FROM_PREV_CHUNK;
    public static final int FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK =
            SharedMemoryAbiDescriptor.FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK;
    public static final int FLAG_CHUNK_NEEDS_PATCHING = SharedMemoryAbiDescriptor.FLAG_CHUNK_NEEDS_PATCHING;
    /** The flags a producer may set; everything above is the buffer's own. */
    public static final int ABI_FLAGS_MASK = SharedMemoryAbiDescriptor.FLAGS_MASK;
    /**
     * Its stored bytes have left the accounting: they are in the read or in the
     * overwritten statistics, each chunk in one of them once. A re-commit that grows it
     * in place makes it readable again without storing new bytes, so draining it again,
     * or overwriting it, must not count it a second time.
     */
    public static final int FLAG_COUNTED = 0x08;
    /** Patched since it was copied: its fragments may no longer be the ones validated then. */
    public static final int FLAG_PATCHED = 0x10;
    /** Copied with a truncated fragment list because the tokenizer found corruption. */
    public static final int FLAG_CORRUPTED = 0x20;
    /** Copied with a truncated fragment list because the writer wrote the drop-packet size. */
    public static final int FLAG_WRITER_ABORT = 0x40;
    /** Scraped: the last fragment is hidden and the sequence stalls here until re-committed. */
    public static final int FLAG_INCOMPLETE = 0x80;

    private TBChunkDescriptor() {
    }

    /** The header checksum; 0 for {@code (0, 0)}, so an all-zero header is a valid empty padding chunk. */
    public static int checksum(long offset, int size) {
        return (int) (((offset >>> 24) ^ (offset >>> 16) ^ (offset >>> 8) ^ offset ^ (size >>> 8) ^ size) & 0xFF);
    }

    /** Bytes a chunk of {@code size} payload bytes occupies in the buffer. */
    public static int outerSize(int size) {
        return (HEADER_SIZE + size + ALIGNMENT - 1) & -ALIGNMENT;
    }

    public static int producerAndWriterId(int producerId, int writerId) {
        return producerId << 16 | writerId;
    }

    public static int chunkId(MemorySegment buffer, long offset) {
        return buffer.get(Layouts.INT_UNALIGNED, offset + CHUNK_ID_OFFSET);
    }

    public static int producerAndWriterId(MemorySegment buffer, long offset) {
        return buffer.get(Layouts.INT_UNALIGNED, offset + PRODUCER_AND_WRITER_ID_OFFSET);
    }

    public static int size(MemorySegment buffer, long offset) {
        return buffer.get(Layouts.SHORT_UNALIGNED, offset + SIZE_OFFSET) & 0xFFFF;
    }

    public static int payloadSize(MemorySegment buffer, long offset) {
        return buffer.get(Layouts.SHORT_UNALIGNED, offset + PAYLOAD_SIZE_OFFSET) & 0xFFFF;
    }

    public static int payloadAvail(MemorySegment buffer, long offset) {
        return buffer.get(Layouts.SHORT_UNALIGNED, offset + PAYLOAD_AVAIL_OFFSET) & 0xFFFF;
    }

    public static int flags(MemorySegment buffer, long offset) {
        return buffer.get(Layouts.BYTE, offset + FLAGS_OFFSET) & 0xFF;
    }

    public static int storedChecksum(MemorySegment buffer, long offset) {
        return buffer.get(Layouts.BYTE, offset + CHECKSUM_OFFSET) & 0xFF;
    }

    public static boolean isPadding(MemorySegment buffer, long offset) {
        return producerAndWriterId(buffer, offset) == 0;
    }

    public static boolean isChecksumValid(MemorySegment buffer, long offset) {
        return storedChecksum(buffer, offset) == checksum(offset, size(buffer, offset));
    }

    static void setPayloadSize(MemorySegment buffer, long offset, int payloadSize) {
        buffer.set(Layouts.SHORT_UNALIGNED, offset + PAYLOAD_SIZE_OFFSET, (short) payloadSize);
    }

    static void setPayloadAvail(MemorySegment buffer, long offset, int payloadAvail) {
        buffer.set(Layouts.SHORT_UNALIGNED, offset + PAYLOAD_AVAIL_OFFSET, (short) payloadAvail);
    }

    static void setFlags(MemorySegment buffer, long offset, int flags) {
        buffer.set(Layouts.BYTE, offset + FLAGS_OFFSET, (byte) flags);
    }

    /** Writes a whole header, checksum included, as two 8-byte stores. */
    static void writeHeader(MemorySegment buffer, long offset, int chunkId, int producerAndWriterId,
                                   int size, int payloadSize, int payloadAvail, int flags) {
        buffer.set(Layouts.LONG_UNALIGNED, offset + CHUNK_ID_OFFSET,
                (chunkId & 0xFFFFFFFFL) | (long) producerAndWriterId << 32);
        buffer.set(Layouts.LONG_UNALIGNED, offset + SIZE_OFFSET,
                (size & 0xFFFFL)
                        | (payloadSize & 0xFFFFL) << 16
                        | (payloadAvail & 0xFFFFL) << 32
                        | (flags & 0xFFL) << 48
                        | (long) checksum(offset, size) << 56);
    }

    /** Writes a padding header: every field zero but {@code size}, {@code payload_size} and the checksum. */
    static void writePadding(MemorySegment buffer, long offset, int size, int payloadSize) {
        writeHeader(buffer, offset, 0, 0, size, payloadSize, 0, 0);
    }
}
