package dev.ffmtrace.ipc;

import dev.ffmtrace.memory.StreamSocket;
import java.lang.foreign.MemorySegment;
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
 * <p>Complete frames are copied out of the receive buffer into a payload store; both
 * are reused, so that steady traffic allocates nothing. A frame taken with
 * {@link #next()} is readable until the next {@link #feed}.
 *
 * <p>Zero-length frames are skipped, as Perfetto does. Not thread-safe.
 */
final class FrameReader implements AutoCloseable {
    static final int HEADER_SIZE = 4;

    private final byte[] buffer;
    /** Payloads of the frames not yet taken, back to back; emptied by a feed once all were taken. */
    private byte[] payloads = new byte[4096];
    private MemorySegment payloadSegment = MemorySegment.ofArray(payloads);
    private int payloadsSize;
    /** Per complete frame, its payload's offset in {@link #payloads}, its length and its descriptor. */
    private int[] frameOffsets = new int[16];
    private int[] frameLengths = new int[16];
    private int[] frameFds = new int[16];
    private int frameCount;
    /** The frame {@link #next()} took last is {@code taken - 1}. */
    private int taken;
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
     * available from {@link #next()}. Returns false on a violation ({@link #violation()}).
     */
    boolean feed(byte[] data, int length, int fd) {
        if (violation != null) {
            StreamSocket.closeReceived(fd);
            return false;
        }
        if (taken == frameCount) {
            frameCount = 0;
            taken = 0;
            payloadsSize = 0;
        }
        long readBegin = bufferStart + size;
        long readEnd = readBegin + length;
        long fdOwner = -1;
        int lastFrame = -1;
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
                    StreamSocket.closeReceived(fd);
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
                    lastFrame = add(consumed + HEADER_SIZE, (int) payload, frameFd);
                    lastFrameStart = start;
                } else if (frameFd >= 0) {
                    violation = "a descriptor came with an empty frame";
                    StreamSocket.closeReceived(frameFd, fd);
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
        if (fdOwner >= 0 && fdOwner == lastFrameStart && frameFds[lastFrame] < 0) {
            frameFds[lastFrame] = fd;
            return true;
        }
        if (fdOwner >= 0 && fdOwner == bufferStart && size > 0 && pendingFd < 0) {
            pendingFd = fd;
            return true;
        }
        violation = "a descriptor came with no frame of its own";
        StreamSocket.closeReceived(fd);
        return false;
    }

    /** Copies a complete frame's payload out of the receive buffer; returns the frame's index. */
    private int add(int from, int length, int fd) {
        if (payloads.length - payloadsSize < length) {
            payloads = Arrays.copyOf(payloads, Math.max(payloadsSize + length, 2 * payloads.length));
            payloadSegment = MemorySegment.ofArray(payloads);
        }
        if (frameCount == frameOffsets.length) {
            frameOffsets = Arrays.copyOf(frameOffsets, 2 * frameCount);
            frameLengths = Arrays.copyOf(frameLengths, 2 * frameCount);
            frameFds = Arrays.copyOf(frameFds, 2 * frameCount);
        }
        System.arraycopy(buffer, from, payloads, payloadsSize, length);
        frameOffsets[frameCount] = payloadsSize;
        frameLengths[frameCount] = length;
        frameFds[frameCount] = fd;
        payloadsSize += length;
        return frameCount++;
    }

    /**
     * Takes the next complete frame, if any: its payload is then {@link #payloadLength()}
     * bytes at {@link #payloadOffset()} of {@link #payloads()}, and the caller owns its
     * {@link #fd()}.
     */
    boolean next() {
        if (taken == frameCount) {
            return false;
        }
        taken++;
        return true;
    }

    /** The segment the taken frame's payload is in; valid until the next {@link #feed}. */
    MemorySegment payloads() {
        return payloadSegment;
    }

    int payloadOffset() {
        return frameOffsets[taken - 1];
    }

    int payloadLength() {
        return frameLengths[taken - 1];
    }

    /** The descriptor that came with the taken frame, or -1. */
    int fd() {
        return frameFds[taken - 1];
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
        StreamSocket.closeReceived(pendingFd);
        pendingFd = -1;
        while (next()) {
            StreamSocket.closeReceived(fd());
        }
    }

    private static int readIntLe(byte[] bytes, int at) {
        return (bytes[at] & 0xff) | (bytes[at + 1] & 0xff) << 8 | (bytes[at + 2] & 0xff) << 16 | (bytes[at + 3] & 0xff) << 24;
    }
}
