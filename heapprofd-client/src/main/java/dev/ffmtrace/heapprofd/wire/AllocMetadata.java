package dev.ffmtrace.heapprofd.wire;

import dev.ffmtrace.memory.Layouts;

import java.lang.foreign.MemorySegment;

import static dev.ffmtrace.heapprofd.wire.HeapprofdWireDescriptor.*;

/**
 * The metadata of a sampled allocation, Perfetto's {@code AllocMetadata}: mutable and
 * meant to be reused, so that recording an allocation allocates nothing. Every setter
 * returns {@code this}; a field not set keeps its last value. Also what a
 * {@link WireRecord} reads back.
 */
public final class AllocMetadata {
    /** Architectures as unwindstack numbers them, for {@link #arch(int)}. */
    public static final int ARCH_UNKNOWN = 0;
    public static final int ARCH_ARM = 1;
    public static final int ARCH_ARM64 = 2;
    public static final int ARCH_X86 = 3;
    public static final int ARCH_X86_64 = 4;
    public static final int ARCH_RISCV64 = 5;
    /**
     * ffmtrace's own value, which no native client uses: the stack payload is a Java stack,
     * not a copy of native stack memory, and there are no registers. The payload is the
     * frames, innermost first, each a varint: the frame's id shifted left by one, with bit 0
     * set when the frame is defined here, its first use on the connection; a definition
     * follows as a varint length and that many bytes of UTF-8,
     * {@code class.method(File.java:line)}. Ids are per connection, from 0; a client
     * defines an id in the first record it writes that uses it. A service refuses a stack
     * past the limits below, which a client keeps to.
     */
    public static final int ARCH_JAVA = 0xFF;
    /** The most frames one connection may define: ids run from 0 to one less. */
    public static final int MAX_JAVA_FRAMES = 1 << 16;
    /** The longest frame name, in UTF-8 bytes. */
    public static final int MAX_JAVA_FRAME_NAME_BYTES = 4096;
    /** The most frames in one stack. */
    public static final int MAX_JAVA_STACK_DEPTH = 256;

    private long sequenceNumber;
    private long allocSize;
    private long sampleSize;
    private long allocAddress;
    private long stackPointer;
    private long timestampNanos;
    private final MemorySegment registers = MemorySegment.ofArray(new byte[MAX_REGISTER_DATA_SIZE]);
    private int heapId;
    private int arch;

    /** Metadata with every field 0, to set and reuse. */
    public AllocMetadata() {
    }

    /** Sets the sequence number: per heap, from 1, shared with the heap's frees. */
    public AllocMetadata sequenceNumber(long sequenceNumber) {
        this.sequenceNumber = sequenceNumber;
        return this;
    }

    /** Sets the size the application asked for. */
    public AllocMetadata allocSize(long allocSize) {
        this.allocSize = allocSize;
        return this;
    }

    /** Sets the bytes this sample stands for (the sampler's answer). */
    public AllocMetadata sampleSize(long sampleSize) {
        this.sampleSize = sampleSize;
        return this;
    }

    /** Sets the address allocated. */
    public AllocMetadata allocAddress(long allocAddress) {
        this.allocAddress = allocAddress;
        return this;
    }

    /** Sets the address the copied stack starts from. */
    public AllocMetadata stackPointer(long stackPointer) {
        this.stackPointer = stackPointer;
        return this;
    }

    /** Sets CLOCK_MONOTONIC_COARSE at the allocation, in ns. */
    public AllocMetadata timestampNanos(long timestampNanos) {
        this.timestampNanos = timestampNanos;
        return this;
    }

    /** Sets the heap's id. */
    public AllocMetadata heapId(int heapId) {
        this.heapId = heapId;
        return this;
    }

    /** Sets the architecture of the register dump ({@link #ARCH_X86_64}, ...). */
    public AllocMetadata arch(int arch) {
        this.arch = arch;
        return this;
    }

    /** The {@value HeapprofdWireDescriptor#MAX_REGISTER_DATA_SIZE}-byte register dump, to fill in place. */
    public MemorySegment registers() {
        return registers;
    }

    public long sequenceNumber() {
        return sequenceNumber;
    }

    public long allocSize() {
        return allocSize;
    }

    public long sampleSize() {
        return sampleSize;
    }

    public long allocAddress() {
        return allocAddress;
    }

    public long stackPointer() {
        return stackPointer;
    }

    public long timestampNanos() {
        return timestampNanos;
    }

    public int heapId() {
        return heapId;
    }

    public int arch() {
        return arch;
    }

    void encodeTo(MemorySegment dst, long offset) {
        dst.set(Layouts.LONG_UNALIGNED, offset + ALLOC_SEQUENCE_NUMBER_OFFSET, sequenceNumber);
        dst.set(Layouts.LONG_UNALIGNED, offset + ALLOC_SIZE_OFFSET, allocSize);
        dst.set(Layouts.LONG_UNALIGNED, offset + ALLOC_SAMPLE_SIZE_OFFSET, sampleSize);
        dst.set(Layouts.LONG_UNALIGNED, offset + ALLOC_ADDRESS_OFFSET, allocAddress);
        dst.set(Layouts.LONG_UNALIGNED, offset + ALLOC_STACK_POINTER_OFFSET, stackPointer);
        dst.set(Layouts.LONG_UNALIGNED, offset + ALLOC_TIMESTAMP_OFFSET, timestampNanos);
        MemorySegment.copy(registers, 0, dst, offset + ALLOC_REGISTER_DATA_OFFSET, MAX_REGISTER_DATA_SIZE);
        dst.set(Layouts.INT_UNALIGNED, offset + ALLOC_HEAP_ID_OFFSET, heapId);
        // The arch byte and the padding after it, in one store.
        dst.set(Layouts.INT_UNALIGNED, offset + ALLOC_ARCH_OFFSET, arch & 0xFF);
    }

    void decodeFrom(MemorySegment src, long offset) {
        sequenceNumber = src.get(Layouts.LONG_UNALIGNED, offset + ALLOC_SEQUENCE_NUMBER_OFFSET);
        allocSize = src.get(Layouts.LONG_UNALIGNED, offset + ALLOC_SIZE_OFFSET);
        sampleSize = src.get(Layouts.LONG_UNALIGNED, offset + ALLOC_SAMPLE_SIZE_OFFSET);
        allocAddress = src.get(Layouts.LONG_UNALIGNED, offset + ALLOC_ADDRESS_OFFSET);
        stackPointer = src.get(Layouts.LONG_UNALIGNED, offset + ALLOC_STACK_POINTER_OFFSET);
        timestampNanos = src.get(Layouts.LONG_UNALIGNED, offset + ALLOC_TIMESTAMP_OFFSET);
        MemorySegment.copy(src, offset + ALLOC_REGISTER_DATA_OFFSET, registers, 0, MAX_REGISTER_DATA_SIZE);
        heapId = src.get(Layouts.INT_UNALIGNED, offset + ALLOC_HEAP_ID_OFFSET);
        arch = src.get(Layouts.BYTE, offset + ALLOC_ARCH_OFFSET) & 0xFF;
    }
}
