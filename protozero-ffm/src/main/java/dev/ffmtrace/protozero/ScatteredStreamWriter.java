package dev.ffmtrace.protozero;

import dev.ffmtrace.memory.Layouts;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * Appends bytes to a stream made of a sequence of {@link MemorySegment} slices.
 *
 * <p>Writes go into the current slice; every write is bound-checked against it. A
 * write that does not fit takes the slow path: the part that fits is written, the
 * {@link Delegate} is asked for the next slice, and the rest goes there. Varints and
 * strings that straddle two slices are split byte-exactly. The one exception is
 * {@link #reserveBytes}: a reservation never straddles, so the bytes left at the end of
 * a slice that is too short for it are skipped and are not part of the stream (the
 * delegate is told how much of each slice it hands back holds data).
 *
 * <p>Not thread-safe: a writer belongs to one thread at a time.
 */
public final class ScatteredStreamWriter {

    /** Supplies the slices a {@link ScatteredStreamWriter} writes into. */
    public interface Delegate {
        /**
         * Returns the slice to continue the stream in. The slice handed out before
         * (none, the first time) is handed back: its first {@code usedBytes} bytes hold
         * stream data and the rest is not part of the stream. Called from the writer's
         * slow path only.
         *
         * <p>A nested message whose reserved size field lies in the slice handed back is
         * still open and will back-fill that field when it is finalized. A delegate that
         * gives the slice's memory away (a committed chunk) must first move those size
         * fields elsewhere with {@link Message#redirectSizeFields}.
         *
         * @param usedBytes bytes of the previous slice holding stream data
         * @return a writable slice of at least {@link ProtoWire#MESSAGE_LENGTH_FIELD_SIZE} bytes
         */
        MemorySegment newSlice(long usedBytes);
    }

    private static final long VARINT_PAYLOAD_BITS = 0x7F7F7F7F7F7F7F7FL;
    private static final long VARINT_CONTINUATION_BITS = 0x8080808080808080L;

    private final Delegate delegate;
    private MemorySegment slice = MemorySegment.NULL;
    private long position;
    private long limit;
    private long writtenPreviously;
    private long sliceId;

    public ScatteredStreamWriter(Delegate delegate) {
        if (delegate == null) {
            throw new NullPointerException("delegate");
        }
        this.delegate = delegate;
    }

    /**
     * Continues the stream at the start of {@code next} without asking the delegate,
     * e.g. at a packet boundary. The bytes written so far stay counted in
     * {@link #writtenSoFar()}. Open nested messages whose size fields lie in the
     * current slice keep pointing there; redirect them first if it is given away.
     */
    public void reset(MemorySegment next) {
        writtenPreviously += position;
        slice = next;
        position = 0;
        limit = next.byteSize();
        sliceId++;
    }

    /** The slice being written. */
    public MemorySegment slice() {
        return slice;
    }

    /** Offset in {@link #slice()} of the next byte to be written. */
    public long position() {
        return position;
    }

    /** Bytes still free in the current slice. */
    public long bytesAvailable() {
        return limit - position;
    }

    /** Stream bytes written since this writer was created; skipped bytes are not counted. */
    public long writtenSoFar() {
        return writtenPreviously + position;
    }

    /** Changes every time the writer moves to another slice. */
    long sliceId() {
        return sliceId;
    }

    public void writeByte(byte value) {
        if (position >= limit) {
            extend();
        }
        slice.set(Layouts.BYTE, position++, value);
    }

    /** Writes {@code value}, read as unsigned, as a varint of 1 to 10 bytes. */
    public void writeVarInt(long value) {
        long p = position;
        if (limit - p < ProtoWire.MAX_VARINT_SIZE) {
            writeVarIntSlow(value);
            return;
        }
        position = putVarInt(slice, p, value);
    }

    /**
     * Writes a tag and a varint value; the common case of every scalar field. A tag of
     * one or two bytes (field ids up to 2047) and a value whose varint fits the rest of
     * 8 bytes go out in a single store, the only memory access on this path, which keeps
     * the method small enough to be inlined into every setter.
     */
    void writeTagAndVarInt(long tag, long value) {
        long bits;
        int size;
        if (tag < 0x80 && value >>> 49 == 0) {
            size = ProtoWire.varIntSize(value);
            bits = tag | packVarInt(value, size) << 8;
            size += 1;
        } else if (tag < 0x4000 && value >>> 42 == 0) {
            size = ProtoWire.varIntSize(value);
            bits = (tag & 0x7F) | 0x80 | (tag >>> 7) << 8 | packVarInt(value, size) << 16;
            size += 2;
        } else {
            writeTagAndLongVarInt(tag, value);
            return;
        }
        long p = position;
        if (limit - p < Long.BYTES) {
            writeTagAndLongVarInt(tag, value);
            return;
        }
        slice.set(Layouts.LONG_UNALIGNED, p, bits);
        position = p + size;
    }

    /** {@link #writeTagAndVarInt} for long tags or values and for the end of a slice. */
    private void writeTagAndLongVarInt(long tag, long value) {
        long p = position;
        if (limit - p < ProtoWire.MAX_TAG_SIZE + ProtoWire.MAX_VARINT_SIZE) {
            writeVarIntSlow(tag);
            writeVarIntSlow(value);
            return;
        }
        MemorySegment s = slice;
        position = putVarInt(s, putVarInt(s, p, tag), value);
    }

    /**
     * Stores a varint at {@code p}, which must have {@link ProtoWire#MAX_VARINT_SIZE}
     * bytes of room, and returns the offset after it. The stores may write zeros past
     * the varint, into bytes that are not part of the stream yet.
     */
    private static long putVarInt(MemorySegment s, long p, long value) {
        if (value >>> 56 == 0) {
            int size = ProtoWire.varIntSize(value);
            s.set(Layouts.LONG_UNALIGNED, p, packVarInt(value, size));
            return p + size;
        }
        return putNineOrTenByteVarInt(s, p, value);
    }

    /**
     * The low 56 bits as 8 bytes that all carry the continuation bit, then the top 8
     * bits as one byte, or two when the top bit is set.
     */
    private static long putNineOrTenByteVarInt(MemorySegment s, long p, long value) {
        s.set(Layouts.LONG_UNALIGNED, p, Long.expand(value, VARINT_PAYLOAD_BITS) | VARINT_CONTINUATION_BITS);
        long top = value >>> 56;
        long twoBytes = top >>> 7;
        s.set(Layouts.SHORT_UNALIGNED, p + 8, (short) ((top & 0x7F) | twoBytes << 7 | twoBytes << 8));
        return p + 9 + twoBytes;
    }

    /**
     * The varint of {@code value}, which must be below 2^56 and take {@code size} bytes,
     * in the low bytes of a long (little-endian, so one store writes it), built without
     * branches: {@link Long#expand} (PDEP where the CPU has it) spreads the 7-bit groups
     * over the bytes, then every byte but the last gets its continuation bit.
     */
    private static long packVarInt(long value, int size) {
        return Long.expand(value, VARINT_PAYLOAD_BITS)
                | (VARINT_CONTINUATION_BITS & ((1L << ((size - 1) << 3)) - 1));
    }

    private void writeVarIntSlow(long value) {
        while ((value & ~0x7FL) != 0) {
            writeByte((byte) (value | 0x80));
            value >>>= 7;
        }
        writeByte((byte) value);
    }

    public void writeFixed32(int value) {
        if (limit - position >= Integer.BYTES) {
            slice.set(Layouts.INT_UNALIGNED, position, value);
            position += Integer.BYTES;
        } else {
            for (int i = 0; i < Integer.BYTES; i++) {
                writeByte((byte) (value >>> (i * 8)));
            }
        }
    }

    public void writeFixed64(long value) {
        if (limit - position >= Long.BYTES) {
            slice.set(Layouts.LONG_UNALIGNED, position, value);
            position += Long.BYTES;
        } else {
            for (int i = 0; i < Long.BYTES; i++) {
                writeByte((byte) (value >>> (i * 8)));
            }
        }
    }

    /** Copies {@code length} bytes of {@code src} starting at {@code offset}. */
    public void writeBytes(MemorySegment src, long offset, long length) {
        while (true) {
            long n = Math.min(length, limit - position);
            MemorySegment.copy(src, offset, slice, position, n);
            position += n;
            offset += n;
            length -= n;
            if (length == 0) {
                return;
            }
            extend();
        }
    }

    public void writeBytes(byte[] src, int offset, int length) {
        while (true) {
            int n = (int) Math.min(length, limit - position);
            MemorySegment.copy(src, offset, slice, Layouts.BYTE, position, n);
            position += n;
            offset += n;
            length -= n;
            if (length == 0) {
                return;
            }
            extend();
        }
    }

    /** Copies the remaining bytes of {@code src} without moving its position. */
    public void writeBytes(ByteBuffer src) {
        if (src.hasArray()) {
            writeBytes(src.array(), src.arrayOffset() + src.position(), src.remaining());
        } else {
            writeBytes(MemorySegment.ofBuffer(src), 0, src.remaining());
        }
    }

    /**
     * Writes {@code value} as UTF-8, given the result of {@link Utf8#scan} for it.
     * Unpaired surrogates are written as {@code '?'}.
     */
    void writeUtf8(String value, long scan) {
        long p = position;
        if (limit - p < Utf8.encodedLength(scan)) {
            writeUtf8Slow(value);
            return;
        }
        position = putUtf8(slice, p, value);
    }

    /**
     * Writes a string field whose UTF-8 length is known to fit a 1-byte varint because
     * it has at most {@link Utf8#MAX_CHARS_FOR_ONE_BYTE_LENGTH} chars: the length byte is
     * filled in after encoding, so the string is read once.
     *
     * @return false, having written nothing, if the slice lacks room for the worst case
     */
    boolean writeShortString(long tag, String value) {
        long p = position;
        if (limit - p < ProtoWire.MAX_TAG_SIZE + 1 + 3L * value.length() + Long.BYTES) {
            return false;
        }
        MemorySegment s = slice;
        long lengthAt = putVarInt(s, p, tag);
        long end = putUtf8(s, lengthAt + 1, value);
        s.set(Layouts.BYTE, lengthAt, (byte) (end - lengthAt - 1));
        position = end;
        return true;
    }

    /**
     * Encodes {@code value} at {@code p}, which must have room for its UTF-8 bytes, and
     * returns the offset after it. A leading ASCII run takes a tight loop.
     */
    private static long putUtf8(MemorySegment s, long p, String value) {
        int chars = value.length();
        int i = 0;
        for (; i < chars; i++) {
            char c = value.charAt(i);
            if (c >= 0x80) {
                break;
            }
            s.set(Layouts.BYTE, p + i, (byte) c);
        }
        p += i;
        for (; i < chars; i++) {
            char c = value.charAt(i);
            if (c < 0x80) {
                s.set(Layouts.BYTE, p++, (byte) c);
            } else if (c < 0x800) {
                s.set(Layouts.BYTE, p++, (byte) (0xC0 | (c >>> 6)));
                s.set(Layouts.BYTE, p++, (byte) (0x80 | (c & 0x3F)));
            } else if (!Character.isSurrogate(c)) {
                s.set(Layouts.BYTE, p++, (byte) (0xE0 | (c >>> 12)));
                s.set(Layouts.BYTE, p++, (byte) (0x80 | ((c >>> 6) & 0x3F)));
                s.set(Layouts.BYTE, p++, (byte) (0x80 | (c & 0x3F)));
            } else if (Character.isHighSurrogate(c) && i + 1 < chars
                    && Character.isLowSurrogate(value.charAt(i + 1))) {
                int cp = Character.toCodePoint(c, value.charAt(++i));
                s.set(Layouts.BYTE, p++, (byte) (0xF0 | (cp >>> 18)));
                s.set(Layouts.BYTE, p++, (byte) (0x80 | ((cp >>> 12) & 0x3F)));
                s.set(Layouts.BYTE, p++, (byte) (0x80 | ((cp >>> 6) & 0x3F)));
                s.set(Layouts.BYTE, p++, (byte) (0x80 | (cp & 0x3F)));
            } else {
                s.set(Layouts.BYTE, p++, Utf8.UNPAIRED_SURROGATE_REPLACEMENT);
            }
        }
        return p;
    }

    private void writeUtf8Slow(String value) {
        int chars = value.length();
        for (int i = 0; i < chars; i++) {
            char c = value.charAt(i);
            if (c < 0x80) {
                writeByte((byte) c);
            } else if (c < 0x800) {
                writeByte((byte) (0xC0 | (c >>> 6)));
                writeByte((byte) (0x80 | (c & 0x3F)));
            } else if (!Character.isSurrogate(c)) {
                writeByte((byte) (0xE0 | (c >>> 12)));
                writeByte((byte) (0x80 | ((c >>> 6) & 0x3F)));
                writeByte((byte) (0x80 | (c & 0x3F)));
            } else if (Character.isHighSurrogate(c) && i + 1 < chars
                    && Character.isLowSurrogate(value.charAt(i + 1))) {
                int cp = Character.toCodePoint(c, value.charAt(++i));
                writeByte((byte) (0xF0 | (cp >>> 18)));
                writeByte((byte) (0x80 | ((cp >>> 12) & 0x3F)));
                writeByte((byte) (0x80 | ((cp >>> 6) & 0x3F)));
                writeByte((byte) (0x80 | (cp & 0x3F)));
            } else {
                writeByte(Utf8.UNPAIRED_SURROGATE_REPLACEMENT);
            }
        }
    }

    /**
     * Reserves {@code size} contiguous bytes, moving to a new slice (and skipping the
     * rest of this one) if they do not fit. The reserved bytes are at
     * {@code slice().asSlice(returnedOffset)} right after the call.
     *
     * @return the offset of the reservation in {@link #slice()}
     */
    public long reserveBytes(int size) {
        if (limit - position < size) {
            extend();
            if (limit < size) {
                throw new IllegalStateException("the delegate returned a slice of " + limit
                        + " bytes, too small for a reservation of " + size + " bytes");
            }
        }
        long at = position;
        position += size;
        return at;
    }

    /**
     * Writes the tag of a nested message and reserves its size field, with one room
     * check in the common case.
     *
     * @return the offset of the size field in {@link #slice()}
     */
    long writeTagAndReserveSizeField(long tag) {
        long p = position;
        if (limit - p < Long.BYTES + ProtoWire.MESSAGE_LENGTH_FIELD_SIZE) {
            writeVarIntSlow(tag);
            return reserveBytes(ProtoWire.MESSAGE_LENGTH_FIELD_SIZE);
        }
        long at = putVarInt(slice, p, tag);
        position = at + ProtoWire.MESSAGE_LENGTH_FIELD_SIZE;
        return at;
    }

    /**
     * Gives a nested message whose size field at {@code sizeFieldOffset} of the current
     * slice is followed by its whole body of {@code bodySize} (at most 127) bytes, ending
     * at the write position, a 1-byte length: the body moves back over the 3 spare bytes.
     */
    void compactShortMessage(long sizeFieldOffset, int bodySize) {
        MemorySegment s = slice;
        MemorySegment.copy(s, sizeFieldOffset + ProtoWire.MESSAGE_LENGTH_FIELD_SIZE, s, sizeFieldOffset + 1, bodySize);
        s.set(Layouts.BYTE, sizeFieldOffset, (byte) bodySize);
        position -= ProtoWire.MESSAGE_LENGTH_FIELD_SIZE - 1;
    }

    private void extend() {
        long used = position;
        MemorySegment next = delegate.newSlice(used);
        if (next == null || next.byteSize() == 0) {
            throw new IllegalStateException("the delegate returned no slice to write into");
        }
        writtenPreviously += used;
        slice = next;
        position = 0;
        limit = next.byteSize();
        sliceId++;
    }
}
