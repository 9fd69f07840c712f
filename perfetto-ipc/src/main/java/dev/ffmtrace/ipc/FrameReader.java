package dev.ffmtrace.ipc;

import dev.ffmtrace.memory.UnixSocket;
import java.util.ArrayDeque;
import java.util.Arrays;

/**
 * Cuts a byte stream into frames, as Perfetto's BufferedFrameDeserializer does: each
 * frame is a 4-byte little-endian payload size and that many bytes of IPCFrame. Bytes
 * may arrive split anywhere; a frame whose header and payload exceed the receive buffer
 * ({@link Frames#IPC_BUFFER_SIZE}) is a violation, and so is a descriptor that belongs to
 * no frame. After a violation the caller closes the connection and this reader.
 *
 * <p>Descriptors: Linux ends a read right after the message that carried descriptors,
 * and a Perfetto peer sends each frame, with its descriptor, in one message that starts
 * at the frame's first byte. So the descriptor of a read belongs to the last frame that
 * starts within that read's bytes (it may complete in a later read).
 *
 * <p>Zero-length frames are skipped, as Perfetto does. Not thread-safe.
 */
final class FrameReader implements AutoCloseable {
    static final int HEADER_SIZE = 4;

    private final byte[] buffer;
    private final ArrayDeque<ReceivedFrame> frames = new ArrayDeque<>();
    private int size;
    /** Stream position of buffer[0]. */
    private long bufferStart;
    /** A descriptor waiting for the incomplete frame at {@link #bufferStart}; -1 if none. */
    private int pendingFd = -1;
    private String violation;

    FrameReader() {
        this(Frames.IPC_BUFFER_SIZE);
    }

    FrameReader(int capacity) {
        if (capacity <= HEADER_SIZE) {
            throw new IllegalArgumentException("capacity " + capacity + " leaves no room for a payload");
        }
        buffer = new byte[capacity];
    }

    /**
     * Takes one read: {@code length} bytes of {@code data} and the descriptor that came
     * with them ({@code -1} if none), which this reader then owns. Complete frames become
     * available from {@link #poll()}. Returns false on a violation ({@link #violation()}).
     */
    boolean feed(byte[] data, int length, int fd) {
        if (violation != null) {
            UnixSocket.closeReceived(fd);
            return false;
        }
        long readBegin = bufferStart + size;
        long readEnd = readBegin + length;
        long fdOwner = -1;
        ReceivedFrame lastFrame = null;
        long lastFrameStart = -1;
        int offset = 0;
        while (offset < length) {
            int n = Math.min(length - offset, buffer.length - size);
            System.arraycopy(data, offset, buffer, size, n);
            size += n;
            offset += n;
            int consumed = 0;
            while (consumed < size) {
                long start = bufferStart + consumed;
                if (start >= readBegin && start < readEnd) {
                    fdOwner = start;
                }
                if (size - consumed < HEADER_SIZE) {
                    break;
                }
                long payload = Integer.toUnsignedLong(readIntLe(buffer, consumed));
                if (payload > buffer.length - HEADER_SIZE) {
                    violation = "frame of " + payload + " bytes exceeds the " + buffer.length + "-byte receive buffer";
                    UnixSocket.closeReceived(fd);
                    return false;
                }
                int frameSize = HEADER_SIZE + (int) payload;
                if (size - consumed < frameSize) {
                    break;
                }
                int frameFd = -1;
                if (pendingFd >= 0 && consumed == 0) {
                    frameFd = pendingFd;
                    pendingFd = -1;
                }
                if (payload > 0) {
                    lastFrame = new ReceivedFrame(
                            Arrays.copyOfRange(buffer, consumed + HEADER_SIZE, consumed + frameSize), frameFd);
                    lastFrameStart = start;
                    frames.add(lastFrame);
                } else if (frameFd >= 0) {
                    violation = "a descriptor came with an empty frame";
                    UnixSocket.closeReceived(frameFd, fd);
                    return false;
                }
                consumed += frameSize;
            }
            if (consumed > 0) {
                System.arraycopy(buffer, consumed, buffer, 0, size - consumed);
                size -= consumed;
                bufferStart += consumed;
            }
        }
        if (fd < 0) {
            return true;
        }
        if (fdOwner >= 0 && fdOwner == lastFrameStart && lastFrame.fd() < 0) {
            frames.removeLast();
            frames.add(new ReceivedFrame(lastFrame.payload(), fd));
            return true;
        }
        if (fdOwner >= 0 && fdOwner == bufferStart && size > 0 && pendingFd < 0) {
            pendingFd = fd;
            return true;
        }
        violation = "a descriptor came with no frame of its own";
        UnixSocket.closeReceived(fd);
        return false;
    }

    /** The next complete frame, or null. The caller owns its descriptor. */
    ReceivedFrame poll() {
        return frames.poll();
    }

    /** Why the last {@link #feed} failed, or null. */
    String violation() {
        return violation;
    }

    /** Bytes held for a frame not yet complete. */
    int buffered() {
        return size;
    }

    /** Closes the descriptors of frames not taken. */
    @Override
    public void close() {
        UnixSocket.closeReceived(pendingFd);
        pendingFd = -1;
        ReceivedFrame frame;
        while ((frame = frames.poll()) != null) {
            UnixSocket.closeReceived(frame.fd());
        }
    }

    private static int readIntLe(byte[] bytes, int at) {
        return (bytes[at] & 0xff) | (bytes[at + 1] & 0xff) << 8 | (bytes[at + 2] & 0xff) << 16 | (bytes[at + 3] & 0xff) << 24;
    }

    /** One frame's IPCFrame bytes, and the descriptor that came with it ({@code -1} if none). */
    record ReceivedFrame(byte[] payload, int fd) {
    }
}
