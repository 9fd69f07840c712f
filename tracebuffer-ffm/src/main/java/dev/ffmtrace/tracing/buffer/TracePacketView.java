package dev.ffmtrace.tracing.buffer;

import dev.ffmtrace.memory.Layouts;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Objects;

/**
 * One packet read from a {@link TraceBufferV2}: its fragments as (offset, size)
 * ranges of the buffer's segment, with no copy, plus the properties of the sequence
 * it came from. Owned by the caller and refilled by every read, so a read loop
 * allocates nothing once the fragment arrays have grown to the longest packet.
 *
 * <p>The ranges stay valid until the next call that writes to the buffer.
 */
public final class TracePacketView {
    private static final int INITIAL_FRAGMENTS = 8;
    /** The identity of no packet: zeros, as the view reads before any packet. */
    private static final ClientIdentity NO_CLIENT = new ClientIdentity(0, 0);

    private MemorySegment buffer = MemorySegment.NULL;
    private long[] fragmentOffsets = new long[INITIAL_FRAGMENTS];
    private int[] fragmentSizes = new int[INITIAL_FRAGMENTS];
    private int fragmentCount;
    private long size;
    private int producerId;
    private int writerId;
    /** The identity of the packet's producer; one object per sequence, so setting it is one store. */
    private ClientIdentity client = NO_CLIENT;
    private int previousPacketDroppedReasons;

    /** An empty view, for a read of the buffer to point at a packet. */
    public TracePacketView() {
    }

    /**
     * A view of a packet held in {@code buffer} as the ranges {@code offsets[i]},
     * {@code sizes[i]}, of no sequence: for code that checks packets as a read hands them
     * over, given packets from elsewhere.
     */
    public static TracePacketView ofFragments(MemorySegment buffer, long[] offsets, int[] sizes) {
        if (offsets.length != sizes.length) {
            throw new IllegalArgumentException(offsets.length + " offsets for " + sizes.length + " sizes");
        }
        TracePacketView view = new TracePacketView();
        view.reset(buffer);
        for (int i = 0; i < offsets.length; i++) {
            Objects.checkFromIndexSize(offsets[i], sizes[i], buffer.byteSize());
            view.addFragment(offsets[i], sizes[i]);
        }
        return view;
    }

    /** The segment the fragment offsets refer to. */
    public MemorySegment buffer() {
        return buffer;
    }

    public int fragmentCount() {
        return fragmentCount;
    }

    public long fragmentOffset(int index) {
        return fragmentOffsets[checkIndex(index)];
    }

    public int fragmentSize(int index) {
        return fragmentSizes[checkIndex(index)];
    }

    /** A slice of the buffer for one fragment; allocates the slice object. */
    public MemorySegment fragment(int index) {
        return buffer.asSlice(fragmentOffset(index), fragmentSize(index));
    }

    /** The packet's size: the sum of its fragments' sizes. */
    public long size() {
        return size;
    }

    /** Copies the packet's bytes, fragments joined, to {@code dst} at {@code dstOffset}. */
    public void copyTo(MemorySegment dst, long dstOffset) {
        long at = dstOffset;
        for (int i = 0; i < fragmentCount; i++) {
            MemorySegment.copy(buffer, fragmentOffsets[i], dst, at, fragmentSizes[i]);
            at += fragmentSizes[i];
        }
    }

    /** Copies the packet's bytes, fragments joined, to {@code dst} at {@code dstOffset}. */
    public void copyTo(byte[] dst, int dstOffset) {
        int at = dstOffset;
        for (int i = 0; i < fragmentCount; i++) {
            MemorySegment.copy(buffer, Layouts.BYTE, fragmentOffsets[i], dst, at, fragmentSizes[i]);
            at += fragmentSizes[i];
        }
    }

    /** The packet's bytes, fragments joined, as a new array. */
    public byte[] toByteArray() {
        byte[] bytes = new byte[Math.toIntExact(size)];
        copyTo(MemorySegment.ofArray(bytes), 0);
        return bytes;
    }

    public int producerId() {
        return producerId;
    }

    public int writerId() {
        return writerId;
    }

    public int clientUid() {
        return client.uid();
    }

    public int clientPid() {
        return client.pid();
    }

    /** The machine of the packet's producer: 0 for this one. */
    public int clientMachineId() {
        return client.machineId();
    }

    /** {@link DataLossReason} bits for data lost on this sequence before this packet; 0 if none. */
    public int previousPacketDroppedReasons() {
        return previousPacketDroppedReasons;
    }

    /** Perfetto's {@code TracePacket.previous_packet_dropped}. */
    public boolean previousPacketDropped() {
        return previousPacketDroppedReasons != 0;
    }

    void reset(MemorySegment buffer) {
        this.buffer = buffer;
        fragmentCount = 0;
        size = 0;
        producerId = 0;
        writerId = 0;
        client = NO_CLIENT;
        previousPacketDroppedReasons = 0;
    }

    void addFragment(long offset, int fragmentSize) {
        if (fragmentCount == fragmentOffsets.length) {
            fragmentOffsets = Arrays.copyOf(fragmentOffsets, fragmentCount * 2);
            fragmentSizes = Arrays.copyOf(fragmentSizes, fragmentCount * 2);
        }
        fragmentOffsets[fragmentCount] = offset;
        fragmentSizes[fragmentCount] = fragmentSize;
        fragmentCount++;
        size += fragmentSize;
    }

    void setSequence(SequenceState sequence, int droppedReasons) {
        producerId = sequence.producerId;
        writerId = sequence.writerId;
        client = sequence.client;
        previousPacketDroppedReasons = droppedReasons;
    }

    private int checkIndex(int index) {
        return Objects.checkIndex(index, fragmentCount);
    }
}
