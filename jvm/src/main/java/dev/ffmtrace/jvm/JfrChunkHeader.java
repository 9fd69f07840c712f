package dev.ffmtrace.jvm;

import java.nio.ByteBuffer;

/**
 * The header that starts each chunk of a JFR recording: 68 bytes, big-endian. A chunk is
 * self-contained (its own metadata, constant pools and clock), and the next one starts
 * where its size ends.
 *
 * <pre>
 *  0       4       6       8                16               24               32
 *  +-------+-------+-------+----------------+----------------+----------------+
 *  | FLR\0 | major | minor | chunk size     | constant pools | metadata       |
 *  +-------+-------+-------+----------------+----------------+----------------+
 *  32               40               48               56               64 65 67 68
 *  +----------------+----------------+----------------+----------------+--+--+--+
 *  | start nanos    | duration nanos | start ticks    | ticks a second |st|  |fl|
 *  +----------------+----------------+----------------+----------------+--+--+--+
 * </pre>
 *
 * The constant pools' and the metadata's positions are the last checkpoint's and the last
 * metadata event's, from the chunk's start. {@code st}: the file state, 0 once the
 * chunk is complete; {@code fl}: flags. Neither is read: a chunk is read as far as its
 * size and positions say (a chunk never flushed has them unset, which {@link #problem}
 * refuses).
 */
record JfrChunkHeader(int major, long size, long constantPoolOffset, long metadataOffset, long startNanos,
                      long startTicks, long ticksPerSecond) {
    static final int SIZE = 68;
    static final int MAGIC = 0x464C5200;
    static final int MAGIC_OFFSET = 0;
    static final int MAJOR_OFFSET = 4;
    static final int CHUNK_SIZE_OFFSET = 8;
    static final int CONSTANT_POOL_OFFSET = 16;
    static final int METADATA_OFFSET = 24;
    static final int START_NANOS_OFFSET = 32;
    static final int START_TICKS_OFFSET = 48;
    static final int TICKS_PER_SECOND_OFFSET = 56;
    /** The format this reader knows: JDK 11 and later write 2.x. */
    static final int SUPPORTED_MAJOR = 2;

    /** The header in {@code bytes} (big-endian, {@value #SIZE} bytes from its position), checked only for its magic. */
    static JfrChunkHeader read(ByteBuffer bytes) throws MalformedRecordingException {
        int at = bytes.position();
        if (bytes.remaining() < SIZE || bytes.getInt(at + MAGIC_OFFSET) != MAGIC) {
            throw new MalformedRecordingException("no chunk header (magic FLR\\0) at byte " + at);
        }
        return new JfrChunkHeader(Short.toUnsignedInt(bytes.getShort(at + MAJOR_OFFSET)),
                bytes.getLong(at + CHUNK_SIZE_OFFSET), bytes.getLong(at + CONSTANT_POOL_OFFSET),
                bytes.getLong(at + METADATA_OFFSET), bytes.getLong(at + START_NANOS_OFFSET),
                bytes.getLong(at + START_TICKS_OFFSET), bytes.getLong(at + TICKS_PER_SECOND_OFFSET));
    }

    /**
     * Why a chunk with this header, starting {@code available} bytes before the file's
     * end, cannot be read, or null if it can: its size and offsets within the file and
     * the chunk, its clock usable.
     */
    String problem(long available) {
        if (size < SIZE || size > available) {
            return "chunk size " + size + " is not within the " + available + " bytes left in the file";
        }
        if (constantPoolOffset < SIZE || constantPoolOffset >= size || metadataOffset < SIZE
                || metadataOffset >= size) {
            return "constant pools at " + constantPoolOffset + " or metadata at " + metadataOffset
                    + " outside the chunk of " + size + " bytes";
        }
        if (ticksPerSecond <= 0) {
            return "ticks per second " + ticksPerSecond;
        }
        return null;
    }
}
