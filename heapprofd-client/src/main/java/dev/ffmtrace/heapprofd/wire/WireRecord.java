package dev.ffmtrace.heapprofd.wire;

import dev.ffmtrace.memory.Layouts;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;

import static dev.ffmtrace.heapprofd.wire.HeapprofdWireDescriptor.*;

/**
 * One record read back from a client's SharedRingBuffer, as heapprofd's service reads it:
 * the record's type and body are copied first (the client can still write the ring), then
 * checked as Perfetto's {@code ReceiveWireMessage} checks it. A Malloc's stack is not
 * copied: the unwinder reads a few of its words where they are (its {@link #stackSize()}
 * bytes at {@link #STACK_OFFSET} of the record), and a stack copy is most of a record
 * (kilobytes); what parses it copies it ({@link #copyStack}). Shorter than a record type,
 * an unknown type, or a body shorter than its struct is refused; bytes after a Free or a HeapName
 * are ignored; everything after a Malloc's metadata is its stack (maybe none). A heap name
 * ends at its first NUL or after 63 bytes, as Perfetto's service forces the terminator;
 * an empty one only updates the heap's interval (what adaptive sampling sends). Reusable:
 * each {@link #read} replaces the last record.
 */
public final class WireRecord {
    /** The kinds of record. */
    public enum Type { FREE, MALLOC, HEAP_NAME }

    /** Beyond any ring's size: a ring's records are smaller than the ring. */
    private static final long MAX_RECORD_SIZE = Integer.MAX_VALUE - 8;
    /** Where a Malloc's stack starts in the record. */
    public static final long STACK_OFFSET = RECORD_TYPE_SIZE + ALLOC_METADATA_SIZE;
    /** The most of a record {@link #read} copies: its type and the largest body. */
    private static final int HEADER_BYTES = RECORD_TYPE_SIZE + Math.max(ALLOC_METADATA_SIZE,
            Math.max(FREE_ENTRY_SIZE, HEAP_NAME_SIZE));

    /** The record's type and body; then, on {@link #copyStack}, a Malloc's stack after them. */
    private MemorySegment copy = MemorySegment.ofArray(new byte[4096]);
    private long length;
    private Type type;
    private final AllocMetadata alloc = new AllocMetadata();

    /** A reader with no record yet. */
    public WireRecord() {
    }

    /**
     * Reads the record of {@code length} bytes at {@code offset} of {@code src}, which
     * holds them all (a ring's read slot does): its type and body are copied, a Malloc's
     * stack left there.
     *
     * @return its type
     * @throws WireFormatException if it is not a record, as the class comment says
     */
    public Type read(MemorySegment src, long offset, long length) throws WireFormatException {
        type = null;
        if (length < RECORD_TYPE_SIZE) {
            throw new WireFormatException("a record of " + length + " bytes has no record type");
        }
        if (length > MAX_RECORD_SIZE) {
            throw new WireFormatException("a record of " + length + " bytes is more than any ring holds");
        }
        MemorySegment.copy(src, offset, copy, 0, Math.min(length, HEADER_BYTES));
        this.length = length;
        long recordType = copy.get(Layouts.LONG_UNALIGNED, 0);
        Type read;
        int bodySize;
        if (recordType == RECORD_TYPE_FREE) {
            read = Type.FREE;
            bodySize = FREE_ENTRY_SIZE;
        } else if (recordType == RECORD_TYPE_MALLOC) {
            read = Type.MALLOC;
            bodySize = ALLOC_METADATA_SIZE;
        } else if (recordType == RECORD_TYPE_HEAP_NAME) {
            read = Type.HEAP_NAME;
            bodySize = HEAP_NAME_SIZE;
        } else {
            throw new WireFormatException("unknown record type " + Long.toUnsignedString(recordType));
        }
        if (length - RECORD_TYPE_SIZE < bodySize) {
            throw new WireFormatException(read + " record of " + length + " bytes: its body needs " + bodySize);
        }
        if (read == Type.MALLOC) {
            alloc.decodeFrom(copy, RECORD_TYPE_SIZE);
        }
        type = read;
        return read;
    }

    /** The type of the last record read; null if the last read failed. */
    public Type type() {
        return type;
    }

    /** A Malloc's metadata. */
    public AllocMetadata alloc() {
        return alloc;
    }

    /** The size of a Malloc's stack bytes: the rest of the record after {@link #STACK_OFFSET}. */
    public long stackSize() {
        return length - STACK_OFFSET;
    }

    /**
     * A copy of the last record's stack bytes, read again from where the record was read
     * ({@code src} at {@code offset}, as given to {@link #read}), for a reader that parses
     * them: a view of this reader's own buffer, valid until the next read.
     */
    public MemorySegment copyStack(MemorySegment src, long offset) {
        if (copy.byteSize() < length) {
            // Doubling, but never past the largest record read accepts: an array that size exists.
            copy = MemorySegment.ofArray(new byte[(int) Math.min(MAX_RECORD_SIZE, Math.max(length, 2 * copy.byteSize()))]);
        }
        MemorySegment.copy(src, offset + STACK_OFFSET, copy, STACK_OFFSET, stackSize());
        return copy.asSlice(STACK_OFFSET, stackSize());
    }

    /** A Free's sequence number. */
    public long freeSequenceNumber() {
        return copy.get(Layouts.LONG_UNALIGNED, RECORD_TYPE_SIZE + FREE_SEQUENCE_NUMBER_OFFSET);
    }

    /** A Free's address. */
    public long freeAddress() {
        return copy.get(Layouts.LONG_UNALIGNED, RECORD_TYPE_SIZE + FREE_ADDRESS_OFFSET);
    }

    /** The heap id of a Free or a HeapName (a Malloc's is in {@link #alloc()}). */
    public int heapId() {
        return copy.get(Layouts.INT_UNALIGNED, RECORD_TYPE_SIZE
                + (type == Type.FREE ? FREE_HEAP_ID_OFFSET : HEAP_NAME_HEAP_ID_OFFSET));
    }

    /** A HeapName's sampling interval. */
    public long sampleInterval() {
        return copy.get(Layouts.LONG_UNALIGNED, RECORD_TYPE_SIZE + HEAP_NAME_INTERVAL_OFFSET);
    }

    /** A HeapName's name: empty when the record only updates the interval; bytes that are not UTF-8 replaced. */
    public String heapName() {
        long start = RECORD_TYPE_SIZE + HEAP_NAME_NAME_OFFSET;
        int length = 0;
        while (length < HEAP_NAME_CAPACITY - 1 && copy.get(Layouts.BYTE, start + length) != 0) {
            length++;
        }
        return new String(copy.asSlice(start, length).toArray(Layouts.BYTE), StandardCharsets.UTF_8);
    }
}
