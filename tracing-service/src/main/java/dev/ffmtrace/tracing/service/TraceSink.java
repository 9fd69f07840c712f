package dev.ffmtrace.tracing.service;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.WritableByteChannel;

/**
 * Where a readback writes: a channel, and the bytes written to it so far. With a limit
 * ({@code max_file_size_bytes}) it refuses, as Perfetto's service does, any write that
 * would bring the total to the limit or past it, and stays full from then on. A write
 * that fails breaks the sink: later ones fail at once (an output that timed out is not
 * waited for again by the stop's last readback), and what the failed one wrote of its
 * bytes is unknown.
 */
final class TraceSink {
    private final WritableByteChannel channel;
    private final long limit;
    private long written;
    private boolean full;
    private IOException failure;

    /** @param limit the size the output must stay below; {@link Long#MAX_VALUE} for none */
    TraceSink(WritableByteChannel channel, long limit) {
        this.channel = channel;
        this.limit = limit;
    }

    /** Whether {@code bytes} more can be written; false marks the sink full for good. */
    boolean fits(long bytes) {
        if (!full && written + bytes >= limit) {
            full = true;
        }
        return !full;
    }

    /** Whether a write was refused for the limit. */
    boolean isFull() {
        return full;
    }

    /** Writes all of {@code bytes[0, length)}, unless it does not {@linkplain #fits fit}. */
    void write(byte[] bytes, int length) throws IOException {
        if (failure != null) {
            throw new IOException("the output failed before: " + failure.getMessage(), failure);
        }
        if (length == 0 || !fits(length)) {
            return;
        }
        ByteBuffer buffer = ByteBuffer.wrap(bytes, 0, length);
        try {
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
        } catch (IOException e) {
            failure = e;
            throw e;
        }
        written += length;
    }

    void write(byte[] bytes) throws IOException {
        write(bytes, bytes.length);
    }
}
