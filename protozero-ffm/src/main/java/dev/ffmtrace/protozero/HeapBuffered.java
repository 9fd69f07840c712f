package dev.ffmtrace.protozero;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

/**
 * A root message written into slices a {@link ScatteredHeapBuffer} allocates as the
 * message grows: the way to build a message outside of a trace writer.
 *
 * <pre>{@code
 * HeapBuffered<TracePacket> packet = new HeapBuffered<>(TracePacket.FACTORY);
 * packet.get().setTimestamp(200);
 * byte[] bytes = packet.toByteArray();
 * packet.reset();
 * }</pre>
 *
 * <p>After {@link #reset()} the slices are reused: a warmed-up instance writes without
 * allocating. Not thread-safe.
 *
 * @param <T> the root message type
 */
public final class HeapBuffered<T extends Message> {
    /** Perfetto's HeapBuffered default: 4 KiB slices. */
    public static final long DEFAULT_SLICE_SIZE = 4096;

    private final ScatteredHeapBuffer buffer;
    private final ScatteredStreamWriter writer;
    private final T message;

    /** Heap slices of {@value #DEFAULT_SLICE_SIZE} bytes. */
    public HeapBuffered(MessageFactory<T> factory) {
        this(factory, null, DEFAULT_SLICE_SIZE, DEFAULT_SLICE_SIZE);
    }

    /** Heap slices starting at {@code initialSliceSize} bytes, doubling up to {@code maxSliceSize}. */
    public HeapBuffered(MessageFactory<T> factory, long initialSliceSize, long maxSliceSize) {
        this(factory, null, initialSliceSize, maxSliceSize);
    }

    /**
     * Slices from {@code allocator} ({@code null} for the heap), starting at
     * {@code initialSliceSize} bytes and doubling up to {@code maxSliceSize}.
     */
    public HeapBuffered(MessageFactory<T> factory, SegmentAllocator allocator,
                        long initialSliceSize, long maxSliceSize) {
        buffer = new ScatteredHeapBuffer(allocator, initialSliceSize, maxSliceSize);
        writer = new ScatteredStreamWriter(buffer);
        buffer.setWriter(writer);
        message = factory.create();
        message.reset(writer);
    }

    /** The root message to write into. */
    public T get() {
        return message;
    }

    /** Finalizes the message and returns its bytes in a new array. */
    public byte[] toByteArray() {
        message.finalizeMessage();
        byte[] bytes = new byte[Math.toIntExact(buffer.size())];
        buffer.copyTo(MemorySegment.ofArray(bytes), 0);
        return bytes;
    }

    /**
     * Finalizes the message and returns its bytes as one segment: a read-only view of
     * the buffer when they lie in one slice, a heap copy otherwise. Valid until
     * {@link #reset()}.
     */
    public MemorySegment toSegment() {
        message.finalizeMessage();
        if (buffer.sliceCount() <= 1) {
            return buffer.sliceCount() == 0 ? MemorySegment.ofArray(new byte[0])
                    : buffer.usedSlice(0).asReadOnly();
        }
        return MemorySegment.ofArray(toByteArray());
    }

    /** Bytes written so far. */
    public long size() {
        return buffer.size();
    }

    /** The buffer holding the slices, for callers that want to read them in place. */
    public ScatteredHeapBuffer buffer() {
        return buffer;
    }

    /** Discards the content and starts a new root message over the same slices. */
    public void reset() {
        // Writing resumes in the first slice: a writer left on no slice would take its
        // byte-at-a-time path for the first field of every message, to ask for one.
        writer.reset(buffer.resetToFirstSlice());
        message.reset(writer);
    }
}
