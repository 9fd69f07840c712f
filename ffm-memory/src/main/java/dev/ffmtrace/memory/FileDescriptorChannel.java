package dev.ffmtrace.memory;

import dev.ffmtrace.memory.internal.Native;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;

/**
 * A blocking channel that writes to a file descriptor it owns and closes once: one a peer
 * sent over a socket (the output of Perfetto's {@code write_into_file}), or a file opened
 * here. Writes go through the descriptor's own file offset and flags, so a pipe, or a file
 * opened for appending, is written as its opener meant. Writes and closing may come from
 * any thread; they take turns.
 */
public final class FileDescriptorChannel implements WritableByteChannel {
    /** Bytes copied to native memory per write(2). */
    private static final int COPY_SIZE = 64 * 1024;

    private final int fd;
    private Arena arena;
    private MemorySegment staging;
    private boolean closed;

    private FileDescriptorChannel(int fd) {
        this.fd = fd;
    }

    /** A channel owning {@code fd}, such as one {@link UnixSocket#receive} handed over. */
    public static FileDescriptorChannel adopt(int fd) {
        if (fd < 0) {
            throw new IllegalArgumentException("not a file descriptor: " + fd);
        }
        return new FileDescriptorChannel(fd);
    }

    /** Opens an existing file for writing from its start, without truncating it (close-on-exec). */
    public static FileDescriptorChannel openForWriting(Path path) {
        return new FileDescriptorChannel(Native.open(path.toString(), Native.O_WRONLY | Native.O_CLOEXEC, 0));
    }

    /** The descriptor, to send to a peer (the peer gets its own copy); valid until {@link #close()}. */
    public int fd() {
        return fd;
    }

    /** Writes all of {@code source}'s remaining bytes; a failed write(2) is an {@link IOException} naming its errno. */
    @Override
    public synchronized int write(ByteBuffer source) throws IOException {
        if (closed) {
            throw new ClosedChannelException();
        }
        if (staging == null) {
            arena = Arena.ofShared();
            staging = arena.allocate(COPY_SIZE);
        }
        int total = 0;
        while (source.hasRemaining()) {
            int length = Math.min(source.remaining(), COPY_SIZE);
            MemorySegment.copy(MemorySegment.ofBuffer(source), 0, staging, 0, length);
            long done = 0;
            try {
                while (done < length) {
                    done += Native.write(fd, staging.asSlice(done), length - done);
                }
            } catch (NativeException e) {
                throw new IOException(e.getMessage(), e);
            }
            source.position(source.position() + length);
            total += length;
        }
        return total;
    }

    @Override
    public synchronized boolean isOpen() {
        return !closed;
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        MemoryFile.closeQuietly(fd);
        if (arena != null) {
            arena.close();
        }
    }
}
