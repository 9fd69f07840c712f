package dev.ffmtrace.protozero;

import dev.ffmtrace.memory.Layouts;

import java.lang.foreign.MemorySegment;

/**
 * Constants and pure functions of the protobuf wire format, as ProtoZero uses them.
 */
public final class ProtoWire {
    public static final int WIRE_TYPE_VARINT = 0;
    public static final int WIRE_TYPE_FIXED64 = 1;
    public static final int WIRE_TYPE_LENGTH_DELIMITED = 2;
    public static final int WIRE_TYPE_FIXED32 = 5;

    /** The largest field number protobuf allows (2^29 - 1). */
    public static final int MAX_FIELD_ID = (1 << 29) - 1;
    /** A 64-bit varint takes at most this many bytes. */
    public static final int MAX_VARINT_SIZE = 10;
    /** A tag (field id and wire type) takes at most this many bytes. */
    public static final int MAX_TAG_SIZE = 5;
    /** Bytes reserved for the length of every nested message before its body is known. */
    public static final int MESSAGE_LENGTH_FIELD_SIZE = 4;
    /** A nested message body up to this size may be compacted to a 1-byte length. */
    public static final int MAX_ONE_BYTE_MESSAGE_LENGTH = 127;
    /** The largest length a 4-byte redundant varint can hold (256 MiB - 1). */
    public static final int MAX_MESSAGE_LENGTH = (1 << 28) - 1;

    private ProtoWire() {
    }

    /** The tag of a field; a long because ids of 2^28 and above do not fit a signed int tag. */
    public static long makeTag(int fieldId, int wireType) {
        return ((long) fieldId << 3) | wireType;
    }

    /** Number of bytes of the varint encoding of {@code value}, read as unsigned. */
    public static int varIntSize(long value) {
        // ceil(significant bits / 7) without a division; 0 takes one byte.
        return (640 - Long.numberOfLeadingZeros(value) * 9) >>> 6;
    }

    public static long zigZagEncode64(long value) {
        return (value << 1) ^ (value >> 63);
    }

    public static int zigZagEncode32(int value) {
        return (value << 1) ^ (value >> 31);
    }

    public static long zigZagDecode64(long value) {
        return (value >>> 1) ^ -(value & 1);
    }

    public static int zigZagDecode32(int value) {
        return (value >>> 1) ^ -(value & 1);
    }

    /**
     * Writes {@code value}, read as unsigned, as a varint into {@code into} at {@code at}
     * and returns the index after it: for small headers and bodies assembled in a byte
     * array outside a message (trace framing, pre-encoded fields).
     *
     * @throws ArrayIndexOutOfBoundsException if the varint does not fit
     */
    public static int writeVarInt(byte[] into, int at, long value) {
        while ((value & ~0x7FL) != 0) {
            into[at++] = (byte) (value | 0x80);
            value >>>= 7;
        }
        into[at++] = (byte) value;
        return at;
    }

    /**
     * Writes {@code value} as a 4-byte redundant varint: bytes 0..2 carry the
     * continuation bit, byte 3 does not, whatever the value.
     */
    public static void writeRedundantVarInt(MemorySegment segment, long offset, int value) {
        int encoded = (value & 0x7F) | 0x80
                | ((((value >>> 7) & 0x7F) | 0x80) << 8)
                | ((((value >>> 14) & 0x7F) | 0x80) << 16)
                | (((value >>> 21) & 0x7F) << 24);
        segment.set(Layouts.INT_UNALIGNED, offset, encoded);
    }
}
