package dev.ffmtrace.ipc;

import dev.ffmtrace.perfetto.protos.IPCFrame;
import dev.ffmtrace.protozero.HeapBuffered;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * Writes frames, one at a time, into buffers it keeps: the frame's slices and the framed
 * bytes are reused, so that a connection's steady replies allocate nothing. The bytes
 * are those of {@link Frames}. Not thread-safe.
 */
final class FrameWriter {
    private final HeapBuffered<IPCFrame> frame = Frames.newFrame();
    private byte[] bytes = new byte[256];
    private MemorySegment segment = MemorySegment.ofArray(bytes);

    /** Starts a new frame and returns it to write into. */
    IPCFrame begin() {
        frame.reset();
        return frame.get();
    }

    /**
     * Ends the frame: it is then in {@link #bytes()}, behind its header; returns its
     * length with the header.
     *
     * @throws IllegalArgumentException if the frame would exceed Perfetto's size limit
     */
    int end() {
        frame.get().finalizeMessage();
        long payload = frame.size();
        Frames.checkPayloadSize(payload);
        int length = FrameReader.HEADER_SIZE + (int) payload;
        if (bytes.length < length) {
            bytes = Arrays.copyOf(bytes, Math.max(length, 2 * bytes.length));
            segment = MemorySegment.ofArray(bytes);
        }
        Frames.writeHeader(bytes, (int) payload);
        frame.buffer().copyTo(segment, FrameReader.HEADER_SIZE);
        return length;
    }

    /** The last frame {@link #end()}ed, in its first bytes. */
    byte[] bytes() {
        return bytes;
    }
}
