package dev.ffmtrace.heapprofd.wire;

import dev.ffmtrace.memory.Layouts;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static dev.ffmtrace.heapprofd.wire.HeapprofdWireDescriptor.*;

/**
 * Encodes the records a heapprofd client writes into its SharedRingBuffer, byte for byte
 * as Perfetto's client does: the record type, then its body. Padding is written as zeros.
 * Nothing here allocates: a Malloc's metadata comes from a reusable {@link AllocMetadata}.
 */
public final class WireRecords {
    /** The size of a Free record. */
    public static final int FREE_RECORD_SIZE = RECORD_TYPE_SIZE + FREE_ENTRY_SIZE;
    /** The size of a HeapName record. */
    public static final int HEAP_NAME_RECORD_SIZE = RECORD_TYPE_SIZE + HEAP_NAME_SIZE;
    /** The size of a Malloc record before its stack bytes. */
    public static final int MALLOC_RECORD_HEADER_SIZE = RECORD_TYPE_SIZE + ALLOC_METADATA_SIZE;
    /** The size of a register dump, the largest any architecture needs. */
    public static final int MAX_REGISTER_DATA_SIZE = HeapprofdWireDescriptor.MAX_REGISTER_DATA_SIZE;

    private WireRecords() {
    }

    /** The size of a Malloc record carrying {@code stackBytes} bytes of stack. */
    public static long mallocRecordSize(long stackBytes) {
        return MALLOC_RECORD_HEADER_SIZE + stackBytes;
    }

    /**
     * Writes a Malloc record at {@code offset}: the type, {@code metadata}, then the
     * {@code stackBytes} bytes of stack at {@code stack[stackOffset]} (copied with
     * {@link MemorySegment#copy}, never through a fortified {@code memcpy}).
     */
    public static void writeMalloc(MemorySegment dst, long offset, AllocMetadata metadata, MemorySegment stack,
                                   long stackOffset, long stackBytes) {
        dst.set(Layouts.LONG_UNALIGNED, offset, RECORD_TYPE_MALLOC);
        metadata.encodeTo(dst, offset + RECORD_TYPE_SIZE);
        if (stackBytes > 0) {
            MemorySegment.copy(stack, stackOffset, dst, offset + MALLOC_RECORD_HEADER_SIZE, stackBytes);
        }
    }

    /** Writes a Free record of {@code address} at {@code offset}. */
    public static void writeFree(MemorySegment dst, long offset, long sequenceNumber, long address, int heapId) {
        dst.set(Layouts.LONG_UNALIGNED, offset, RECORD_TYPE_FREE);
        long body = offset + RECORD_TYPE_SIZE;
        dst.set(Layouts.LONG_UNALIGNED, body + FREE_SEQUENCE_NUMBER_OFFSET, sequenceNumber);
        dst.set(Layouts.LONG_UNALIGNED, body + FREE_ADDRESS_OFFSET, address);
        dst.set(Layouts.INT_UNALIGNED, body + FREE_HEAP_ID_OFFSET, heapId);
        dst.set(Layouts.INT_UNALIGNED, body + FREE_HEAP_ID_OFFSET + 4, 0);
    }

    /**
     * Writes a HeapName record at {@code offset}: heap {@code heapId} is called
     * {@code name} (UTF-8 bytes, at most 63, as {@link ClientConfiguration.Heap} checks
     * them; none to change only the interval) and sampled every {@code sampleInterval} bytes.
     */
    public static void writeHeapName(MemorySegment dst, long offset, long sampleInterval, int heapId, byte[] name) {
        if (name.length >= HEAP_NAME_CAPACITY) {
            throw new IllegalArgumentException("a heap name is at most " + (HEAP_NAME_CAPACITY - 1) + " bytes: " + name.length);
        }
        dst.set(Layouts.LONG_UNALIGNED, offset, RECORD_TYPE_HEAP_NAME);
        long body = offset + RECORD_TYPE_SIZE;
        dst.asSlice(body, HEAP_NAME_SIZE).fill((byte) 0);
        dst.set(Layouts.LONG_UNALIGNED, body + HEAP_NAME_INTERVAL_OFFSET, sampleInterval);
        dst.set(Layouts.INT_UNALIGNED, body + HEAP_NAME_HEAP_ID_OFFSET, heapId);
        MemorySegment.copy(name, 0, dst, ValueLayout.JAVA_BYTE, body + HEAP_NAME_NAME_OFFSET, name.length);
    }
}
