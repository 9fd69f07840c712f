package dev.ffmtrace.tracing.service;

import dev.ffmtrace.protozero.ProtoWire;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.WritableByteChannel;
import java.util.Arrays;

/**
 * A readback into a channel, as a {@code Trace}: each packet framed as its field 1, a
 * batch staged in one array and written at {@link #flush}. With a limit
 * ({@code max_file_size_bytes}) it refuses, as Perfetto's service does, any packet that
 * would bring the total to the limit or past it, and stays full from then on. A write
 * that fails breaks the sink: later ones fail at once (an output that timed out is not
 * waited for again by the stop's last readback), and what the failed one wrote of its
 * bytes is unknown.
 */
final class TraceSink implements ReadbackSink {
    /** A sink's staging array, which its owner keeps from one readback to the next. */
    static final class Staging {
        byte[] bytes = new byte[64 << 10];
    }

    private static final int TRACE_PACKET_TAG = 0x0a;

    private final WritableByteChannel channel;
    private final long limit;
    private long written;
    private boolean full;
    private IOException failure;
    private final Staging staging;
    /** The staging array for the channel; made again when the array grows. */
    private ByteBuffer stagingBuffer;
    private int staged;

    /**
     * @param limit the size the output must stay below; {@link Long#MAX_VALUE} for none
     * @param staging where the batch is staged; one sink at a time may use it
     */
    TraceSink(WritableByteChannel channel, long limit, Staging staging) {
        this.channel = channel;
        this.limit = limit;
        this.staging = staging;
        this.stagingBuffer = ByteBuffer.wrap(staging.bytes);
    }

    /** Whether {@code bytes} more fit after what is staged; false marks the sink full for good. */
    private boolean fits(int bytes) {
        if (!full && written + staged + bytes >= limit) {
            full = true;
        }
        return !full;
    }

    @Override
    public void appendFramed(byte[] packet, int offset, int length) {
        if (length > 0 && fits(length)) {
            System.arraycopy(packet, offset, reserve(length), staged, length);
            staged += length;
        }
    }

    @Override
    public Appended append(ProducerPacket packet) {
        if (full) {
            return Appended.FULL;
        }
        int max = packet.maxSize();
        int reserved = 1 + ProtoWire.varIntSize(max);
        byte[] into = reserve(reserved + max);
        int size = packet.copyTo(into, staged + reserved);
        if (size < 0) {
            return Appended.INVALID;
        }
        int header = 1 + ProtoWire.varIntSize(size);
        if (!fits(header + size)) {
            return Appended.FULL;
        }
        if (header != reserved) {
            // Rare: the producer's own loss left the length a byte shorter than the most.
            System.arraycopy(into, staged + reserved, into, staged + header, size);
        }
        ProtoWire.writeVarInt(into, ProtoWire.writeVarInt(into, staged, TRACE_PACKET_TAG), size);
        staged += header + size;
        return Appended.TAKEN;
    }

    private byte[] reserve(int bytes) {
        byte[] into = staging.bytes;
        if (into.length - staged < bytes) {
            into = Arrays.copyOf(into, Math.max(into.length * 2, staged + bytes));
            staging.bytes = into;
            stagingBuffer = ByteBuffer.wrap(into);
        }
        return into;
    }

    @Override
    public boolean isFull() {
        return full;
    }

    @Override
    public long pending() {
        return staged;
    }

    @Override
    public void flush() throws IOException {
        if (failure != null) {
            throw new IOException("the output failed before: " + failure.getMessage(), failure);
        }
        if (staged == 0) {
            return;
        }
        ByteBuffer buffer = stagingBuffer.clear().limit(staged);
        try {
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
        } catch (IOException e) {
            failure = e;
            throw e;
        } finally {
            staged = 0;
        }
        written += buffer.limit();
    }
}
