package dev.ffmtrace.protozero;

import dev.ffmtrace.memory.Layouts;
import java.lang.foreign.MemorySegment;

/**
 * The one decoder of base-128 varints from untrusted bytes, shared by every decoder in
 * the project: one pass, never reading at or past its limit, at most
 * {@value ProtoWire#MAX_VARINT_SIZE} bytes. A decoder keeps one instance and reads the
 * value from it after {@link #read}, so decoding allocates nothing.
 */
public final class VarIntReader {
    /** {@link #read}: the limit comes before the varint's last byte. */
    public static final long TRUNCATED = -1;
    /** {@link #read}: {@value ProtoWire#MAX_VARINT_SIZE} bytes, and the last one still continues. */
    public static final long TOO_LONG = -2;

    private long value;

    /** A reader with no value yet. */
    public VarIntReader() {
    }

    /**
     * Decodes the varint at {@code offset}: returns the offset just past its last byte (its
     * value is then {@link #value()}), or {@link #TOO_LONG} if its first
     * {@value ProtoWire#MAX_VARINT_SIZE} bytes all continue, or {@link #TRUNCATED} if
     * {@code limit} comes first.
     *
     * @param limit offset just past the last byte that may be read
     */
    public long read(MemorySegment segment, long offset, long limit) {
        long p = offset;
        long result = 0;
        // Ten bytes carry the 64 bits; bits past the 64th are dropped, as protozero does.
        for (int shift = 0; shift < 7 * ProtoWire.MAX_VARINT_SIZE; shift += 7) {
            if (p >= limit) {
                return TRUNCATED;
            }
            byte b = segment.get(Layouts.BYTE, p++);
            result |= (long) (b & 0x7F) << shift;
            if (b >= 0) {
                value = result;
                return p;
            }
        }
        return TOO_LONG;
    }

    /**
     * {@link #read(MemorySegment, long, long)} over an array: for a copy already taken on
     * the heap, where a plain array read is cheaper than a segment access in every JIT tier.
     */
    public int read(byte[] bytes, int offset, int limit) {
        int p = offset;
        long result = 0;
        for (int shift = 0; shift < 7 * ProtoWire.MAX_VARINT_SIZE; shift += 7) {
            if (p >= limit) {
                return (int) TRUNCATED;
            }
            byte b = bytes[p++];
            result |= (long) (b & 0x7F) << shift;
            if (b >= 0) {
                value = result;
                return p;
            }
        }
        return (int) TOO_LONG;
    }

    /** The value, as unsigned 64 bits, of the varint the last successful {@link #read} decoded. */
    public long value() {
        return value;
    }
}
