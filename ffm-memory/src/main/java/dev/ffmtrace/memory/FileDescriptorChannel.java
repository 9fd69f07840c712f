package dev.ffmtrace.memory;

import dev.ffmtrace.memory.internal.Native;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.time.Duration;

/**
 * A blocking channel that writes to a file descriptor it owns and closes once: one a peer
 * sent over a socket (the output of Perfetto's {@code write_into_file}), or a file opened
 * here. Writes go through the descriptor's own file offset and flags, so a pipe, or a file
 * opened for appending, is written as its opener meant. Writes and closing may come from
 * any thread; they take turns.
 *
 * <p>Adopted with a write timeout, a descriptor that is not a regular file (a pipe, a
 * socket) is written only once {@code poll} says it takes bytes, at most {@value #PIPE_BUF}
 * at a time (what a pipe that polls writable takes without blocking), and a write that can
 * put nothing there for the whole timeout fails: a reader that stopped reading costs its
 * writer that long, not for ever.
 */
public final class FileDescriptorChannel implements WritableByteChannel {
    /** Bytes copied to native memory per write(2). */
    private static final int COPY_SIZE = 64 * 1024;
    /** Linux's PIPE_BUF: a pipe that polls writable has room for this many bytes. */
    private static final int PIPE_BUF = 4096;

    /** The longest one poll waits, so that a wait sees a timeout shortened meanwhile. */
    private static final long POLL_SLICE_MILLIS = 100;

    private final int fd;
    /** Whether writes poll for room first: adopted with a timeout, and not a regular file. */
    private final boolean polls;
    /** How long a write waits for the descriptor to take bytes, if it {@link #polls}. */
    private volatile long writeTimeoutMillis;
    private Arena arena;
    private MemorySegment staging;
    private boolean closed;

    private FileDescriptorChannel(int fd, long writeTimeoutMillis) {
        this.fd = fd;
        this.polls = writeTimeoutMillis > 0;
        this.writeTimeoutMillis = writeTimeoutMillis;
    }

    /** A channel owning {@code fd}, such as one {@link StreamSocket#receive} handed over. */
    public static FileDescriptorChannel adopt(int fd) {
        return adopt(fd, Duration.ZERO);
    }

    /**
     * A channel owning {@code fd} whose writes fail once the descriptor, unless a regular
     * file, took no byte for {@code writeTimeout} (zero: they wait for ever).
     */
    public static FileDescriptorChannel adopt(int fd, Duration writeTimeout) {
        if (fd < 0) {
            throw new IllegalArgumentException("not a file descriptor: " + fd);
        }
        if (writeTimeout.isNegative()) {
            throw new IllegalArgumentException("negative write timeout: " + writeTimeout);
        }
        boolean waits = !writeTimeout.isZero() && !Native.fstat(fd).isRegularFile();
        return new FileDescriptorChannel(fd, waits ? Math.max(1, writeTimeout.toMillis()) : 0);
    }

    /** Opens an existing file for writing from its start, without truncating it (close-on-exec). */
    public static FileDescriptorChannel openForWriting(Path path) {
        return new FileDescriptorChannel(Native.open(path.toString(), Native.O_WRONLY | Native.O_CLOEXEC, 0), 0);
    }

    /**
     * Shortens the write timeout to {@code timeout} if it is longer, for writes from now on
     * and for one waiting now (counted from when its wait began): a service that is shutting
     * down gives a reader that stopped reading less time. No effect on a channel whose
     * writes do not wait (a regular file, no timeout). Any thread may call it, during a write.
     */
    public void shortenWriteTimeout(Duration timeout) {
        if (polls) {
            writeTimeoutMillis = Math.min(writeTimeoutMillis, Math.max(1, timeout.toMillis()));
        }
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
                    long piece = length - done;
                    if (polls) {
                        awaitRoom();
                        piece = Math.min(piece, PIPE_BUF);
                    }
                    done += Native.write(fd, staging.asSlice(done), piece);
                }
            } catch (NativeException e) {
                throw new IOException(e.getMessage(), e);
            }
            source.position(source.position() + length);
            total += length;
        }
        return total;
    }

    /** Waits until the descriptor takes bytes; fails once it took none for the write timeout. */
    private void awaitRoom() throws IOException {
        long start = System.nanoTime();
        while (true) {
            long timeout = writeTimeoutMillis;
            long waited = (System.nanoTime() - start) / 1_000_000;
            if (waited >= timeout) {
                throw new IOException("fd " + fd + " took no bytes for " + timeout + " ms");
            }
            if (Native.pollWritable(fd, Math.min(timeout - waited, POLL_SLICE_MILLIS))) {
                return;
            }
        }
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
