package dev.ffmtrace.tracing.service.ipc;

import dev.ffmtrace.perfetto.protos.ReadBuffersResponse;
import dev.ffmtrace.protozero.ProtoWire;
import dev.ffmtrace.protozero.VarIntReader;
import dev.ffmtrace.tracing.service.ProducerPacket;
import dev.ffmtrace.tracing.service.ReadbackSink;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A readback as ReadBuffers replies: each packet's bytes (without a {@code Trace}'s
 * framing) cut into slices of at most {@link ConsumerPort#MAX_SLICE}, the last one
 * marked, encoded straight into reply arrays as {@code ReadBuffersResponse.slices}. A
 * reply closes when the next slice would take it past {@link ConsumerPort#MAX_READ_REPLY}
 * by Perfetto's estimate (16 bytes of overhead a slice); {@link #flush} sends the closed
 * ones, {@link #finish} the open one as the last. The arrays are reused from one reply to
 * the next, and from one ReadBuffers to the next: a consumer keeps one instance.
 *
 * <pre>
 *   ReadBuffersResponse reply, per slice:
 *   +------+----------------+------+-----------+-------------+------+------+
 *   | 0x12 | slice length   | 0x0a | data size | data        | 0x10 | last |
 *   |      | 4-byte varint  |      | varint    | (the bytes) |      | 0/1  |
 *   +------+----------------+------+-----------+-------------+------+------+
 * </pre>
 */
final class ReadBuffersReplies implements ReadbackSink {
    /** Where the replies go, in order; the last one says so. */
    @FunctionalInterface
    interface ReplyTarget {
        void send(byte[] reply, int length, boolean last);
    }

    private static final int SLICES_TAG = (int) ProtoWire.makeTag(ReadBuffersResponse.SLICES_FIELD_NUMBER,
            ProtoWire.WIRE_TYPE_LENGTH_DELIMITED);
    private static final int DATA_TAG = (int) ProtoWire.makeTag(ReadBuffersResponse.Slice.DATA_FIELD_NUMBER,
            ProtoWire.WIRE_TYPE_LENGTH_DELIMITED);
    private static final int LAST_TAG = (int) ProtoWire.makeTag(
            ReadBuffersResponse.Slice.LAST_SLICE_FOR_PACKET_FIELD_NUMBER, ProtoWire.WIRE_TYPE_VARINT);
    /** Perfetto's estimate of a slice's bytes beyond its data. */
    private static final int SLICE_OVERHEAD = 16;
    private static final int TRACE_PACKET_TAG = 0x0a;

    private final VarIntReader varInt = new VarIntReader();
    /** Replies full and not sent yet, their lengths, and arrays sent and free again. */
    private final List<byte[]> closed = new ArrayList<>();
    private int[] closedLengths = new int[8];
    private final List<byte[]> free = new ArrayList<>();
    private ReplyTarget target;
    private byte[] open;
    private int openLength;
    private long openEstimate;
    private long pending;

    /** Starts the replies of one ReadBuffers, sent to {@code target}. */
    void begin(ReplyTarget replies) {
        target = replies;
        open = take();
        openLength = 0;
        openEstimate = 0;
        pending = 0;
    }

    @Override
    public void appendFramed(byte[] packet, int offset, int length) {
        int at = offset;
        int limit = offset + length;
        // The service's own packets: a Trace's packet fields, one or more.
        while (at < limit && packet[at] == TRACE_PACKET_TAG) {
            int end = varInt.read(packet, at + 1, limit);
            if (end < 0 || varInt.value() > limit - end) {
                return;
            }
            int size = (int) varInt.value();
            appendSlices(packet, end, size);
            at = end + size;
        }
    }

    @Override
    public Appended append(ProducerPacket packet) {
        int max = packet.maxSize();
        if (max > ConsumerPort.MAX_SLICE) {
            // Cut into slices: checked whole first, on a copy of its own (rare, and not kept).
            byte[] whole = new byte[max];
            int size = packet.copyTo(whole, 0);
            if (size < 0) {
                return Appended.INVALID;
            }
            appendSlices(whole, 0, size);
            return Appended.TAKEN;
        }
        // One slice, copied and checked in place; kept only if valid.
        makeRoom(max);
        int reserved = openLength + sliceHeadSize(max);
        int size = packet.copyTo(open, reserved);
        if (size < 0) {
            return Appended.INVALID;
        }
        int dataAt = openLength + sliceHeadSize(size);
        if (dataAt != reserved) {
            // Rare: the producer's own loss left the packet a byte shorter than the most.
            System.arraycopy(open, reserved, open, dataAt, size);
        }
        endSlice(size, true);
        return Appended.TAKEN;
    }

    /** {@code bytes[offset, offset + size)}, one packet, as slices. */
    private void appendSlices(byte[] bytes, int offset, int size) {
        int done = 0;
        do {
            int data = Math.min(size - done, ConsumerPort.MAX_SLICE);
            makeRoom(data);
            System.arraycopy(bytes, offset + done, open, openLength + sliceHeadSize(data), data);
            done += data;
            endSlice(data, done == size);
        } while (done < size);
    }

    /** Closes the open reply if a slice of {@code data} bytes would take it past its size. */
    private void makeRoom(int data) {
        if (openEstimate > 0 && openEstimate + data + SLICE_OVERHEAD > ConsumerPort.MAX_READ_REPLY) {
            close();
        }
    }

    /** The bytes of a slice before its data. */
    private static int sliceHeadSize(int data) {
        return 1 + ProtoWire.MESSAGE_LENGTH_FIELD_SIZE + 1 + ProtoWire.varIntSize(data);
    }

    /**
     * Makes a slice of the open reply's {@code data} bytes after its head's place: writes
     * the head before them and the last-slice mark after.
     */
    private void endSlice(int data, boolean last) {
        byte[] into = open;
        int at = openLength;
        into[at++] = (byte) SLICES_TAG;
        at = putRedundantVarInt(into, at, 1 + ProtoWire.varIntSize(data) + data + 2);
        into[at++] = (byte) DATA_TAG;
        at = ProtoWire.writeVarInt(into, at, data) + data;
        into[at++] = (byte) LAST_TAG;
        into[at++] = (byte) (last ? 1 : 0);
        openEstimate += data + SLICE_OVERHEAD;
        pending += at - openLength;
        openLength = at;
    }

    private static int putRedundantVarInt(byte[] into, int at, int value) {
        into[at] = (byte) (value & 0x7f | 0x80);
        into[at + 1] = (byte) (value >>> 7 & 0x7f | 0x80);
        into[at + 2] = (byte) (value >>> 14 & 0x7f | 0x80);
        into[at + 3] = (byte) (value >>> 21 & 0x7f);
        return at + ProtoWire.MESSAGE_LENGTH_FIELD_SIZE;
    }

    private void close() {
        if (closed.size() == closedLengths.length) {
            closedLengths = Arrays.copyOf(closedLengths, closedLengths.length * 2);
        }
        closedLengths[closed.size()] = openLength;
        closed.add(open);
        open = take();
        openLength = 0;
        openEstimate = 0;
    }

    private byte[] take() {
        return free.isEmpty() ? new byte[ConsumerPort.MAX_READ_REPLY] : free.removeLast();
    }

    @Override
    public boolean isFull() {
        return false;
    }

    @Override
    public long pending() {
        return pending;
    }

    /** Sends the replies that are full. */
    @Override
    public void flush() {
        for (int i = 0; i < closed.size(); i++) {
            target.send(closed.get(i), closedLengths[i], false);
            free.add(closed.get(i));
        }
        closed.clear();
        pending = openLength;
    }

    /** Sends what is left, the open reply (perhaps empty) as the last; the instance is then ready for {@link #begin}. */
    void finish() {
        flush();
        byte[] last = open;
        open = null;
        target.send(last, openLength, true);
        free.add(last);
        target = null;
    }
}
