package dev.ffmtrace.jvm;

import java.nio.charset.StandardCharsets;
import java.util.function.LongFunction;

/**
 * A cursor over one chunk of a JFR recording, copied into memory of its own: JFR's
 * compressed integers (7 bits a byte, little end first, the ninth byte whole), its raw
 * big-endian floats and its six string encodings. Every read is bounded by the current
 * limit (a chunk, or one record of it); reading past it throws.
 */
final class JfrInput {
    private static final int NULL_STRING = 0;
    private static final int EMPTY_STRING = 1;
    private static final int POOLED_STRING = 2;
    private static final int UTF8_STRING = 3;
    private static final int CHAR_ARRAY_STRING = 4;
    private static final int LATIN1_STRING = 5;
    private static final int MAX_VARINT_BYTES = 9;

    private final byte[] bytes;
    private final int capacity;
    private int position;
    private int limit;

    /** The chunk in the first {@code capacity} bytes of {@code bytes}. */
    JfrInput(byte[] bytes, int capacity) {
        this.bytes = bytes;
        this.capacity = capacity;
        this.limit = capacity;
    }

    int position() {
        return position;
    }

    /** The chunk's size: the furthest any limit may be. */
    int capacity() {
        return capacity;
    }

    /** Moves to {@code position} and bounds reads by {@code limit}; both within the chunk. */
    void range(long position, long limit) throws MalformedRecordingException {
        if (position < 0 || limit < position || limit > capacity) {
            throw new MalformedRecordingException("range " + position + ".." + limit + " outside the chunk of "
                    + capacity + " bytes");
        }
        this.position = (int) position;
        this.limit = (int) limit;
    }

    int remaining() {
        return limit - position;
    }

    byte readByte() throws MalformedRecordingException {
        if (position >= limit) {
            throw past(1);
        }
        return bytes[position++];
    }

    boolean readBoolean() throws MalformedRecordingException {
        return readByte() != 0;
    }

    /** A compressed integer. */
    long readLong() throws MalformedRecordingException {
        if (limit - position < MAX_VARINT_BYTES) {
            return readLongNearLimit();
        }
        byte[] b = bytes;
        int at = position;
        long value = 0;
        for (int shift = 0; shift < 56; shift += 7) {
            byte next = b[at++];
            value |= (next & 0x7FL) << shift;
            if (next >= 0) {
                position = at;
                return value;
            }
        }
        position = at + 1;
        return value | (b[at] & 0xFFL) << 56;
    }

    private long readLongNearLimit() throws MalformedRecordingException {
        long value = 0;
        for (int shift = 0; shift < 56; shift += 7) {
            byte next = readByte();
            value |= (next & 0x7FL) << shift;
            if (next >= 0) {
                return value;
            }
        }
        return value | (readByte() & 0xFFL) << 56;
    }

    int readInt() throws MalformedRecordingException {
        return (int) readLong();
    }

    /**
     * A count of items that take at least {@code minBytesEach} bytes each: never more than
     * the bytes left could hold, so what it sizes is bounded by the input.
     */
    int readCount(int minBytesEach) throws MalformedRecordingException {
        long count = readLong();
        if (count < 0 || count > remaining() / Math.max(1, minBytesEach)) {
            throw new MalformedRecordingException("count " + count + " at byte " + position + " exceeds the "
                    + remaining() + " bytes left");
        }
        return (int) count;
    }

    float readFloat() throws MalformedRecordingException {
        return Float.intBitsToFloat((int) readRaw(Integer.BYTES));
    }

    double readDouble() throws MalformedRecordingException {
        return Double.longBitsToDouble(readRaw(Long.BYTES));
    }

    private long readRaw(int size) throws MalformedRecordingException {
        if (remaining() < size) {
            throw past(size);
        }
        long value = 0;
        for (int i = 0; i < size; i++) {
            value = value << 8 | (bytes[position++] & 0xFF);
        }
        return value;
    }

    void skip(int count) throws MalformedRecordingException {
        if (count < 0 || remaining() < count) {
            throw past(count);
        }
        position += count;
    }

    /**
     * A string in any of JFR's encodings; {@code pooled} turns a reference into the
     * chunk's string constants into what the caller keeps (null where none may appear, as
     * in the metadata).
     */
    Object readString(LongFunction<?> pooled) throws MalformedRecordingException {
        int encoding = readByte();
        return switch (encoding) {
            case NULL_STRING -> null;
            case EMPTY_STRING -> "";
            case POOLED_STRING -> {
                if (pooled == null) {
                    throw new MalformedRecordingException("a string constant where none may be, at byte " + position);
                }
                yield pooled.apply(readLong());
            }
            case UTF8_STRING, LATIN1_STRING -> {
                int length = readCount(1);
                String value = new String(bytes, position, length,
                        encoding == UTF8_STRING ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);
                position += length;
                yield value;
            }
            case CHAR_ARRAY_STRING -> {
                char[] chars = new char[readCount(1)];
                for (int i = 0; i < chars.length; i++) {
                    chars[i] = (char) readLong();
                }
                yield new String(chars);
            }
            default -> throw new MalformedRecordingException("string encoding " + encoding + " at byte "
                    + (position - 1));
        };
    }

    private MalformedRecordingException past(int size) {
        return new MalformedRecordingException(size + " bytes at byte " + position + " run past the limit " + limit);
    }
}
