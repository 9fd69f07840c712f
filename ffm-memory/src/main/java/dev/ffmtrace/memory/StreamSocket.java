package dev.ffmtrace.memory;

import dev.ffmtrace.memory.internal.Native;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A connected stream socket: a Unix domain socket, which can carry file descriptors
 * (SCM_RIGHTS) and tells who the peer is (SO_PEERCRED), or a TCP connection (no
 * descriptors, no credentials; Nagle's delay off, since its traffic is small requests
 * and replies).
 *
 * <p>Sends never raise SIGPIPE (MSG_NOSIGNAL): a vanished peer is an EPIPE result or
 * exception. {@link #trySendByte} is the non-blocking wake-up heapprofd's client sends
 * after each record; it reports a full socket and a closed peer as distinct results.
 */
public final class StreamSocket implements AutoCloseable {
    /** The outcome of a non-blocking single-byte send. */
    public enum SendResult { SENT, WOULD_BLOCK, PEER_CLOSED }

    /** Bytes and descriptors taken off the socket by one {@link #receive} call; 0 bytes means end of stream. */
    public record Received(int bytes, int[] fds) {
    }

    /** Linux's SCM_MAX_FD: at most this many descriptors travel in one message. */
    public static final int MAX_FDS_PER_MESSAGE = 253;

    private static final int[] NO_FDS = new int[0];
    private static final ThreadLocal<MemorySegment> SIGNAL_BYTE =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(1));

    private final int fd;
    private final boolean unix;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** How long one send may wait for the peer to take its bytes; 0 for ever. */
    private volatile long sendTimeoutNanos;
    /**
     * The native message, I/O vector, control and data buffers of each direction, made on
     * first use and reused, so that a socket's steady traffic allocates no native memory
     * per call. Freed by the GC with the socket (an automatic arena): a thread may still
     * be inside a call when another closes the socket.
     */
    private final Scratch receiving = new Scratch();
    private final Scratch sending = new Scratch();

    /** One direction's buffers; guarded by itself. */
    private static final class Scratch {
        private final Arena arena = Arena.ofAuto();
        private MemorySegment message;
        private MemorySegment iov;
        private MemorySegment control;
        private MemorySegment data = MemorySegment.NULL;
        /** The descriptors of the last receive; a shared empty array when none came, as is usual. */
        private int[] fds = NO_FDS;

        /** The message, pointing at a data buffer of at least {@code size} bytes, with no control. */
        MemorySegment message(long size) {
            if (message == null) {
                message = arena.allocate(Native.MSGHDR_SIZE, 8);
                iov = arena.allocate(Native.IOVEC_SIZE, 8);
                control = arena.allocate(controlSpace(MAX_FDS_PER_MESSAGE + 1), 8);
            }
            if (data.byteSize() < size) {
                data = arena.allocate(Math.max(size, 2 * data.byteSize()));
            }
            message.fill((byte) 0);
            iov.set(Layouts.LONG, 0, data.address());
            iov.set(Layouts.LONG, 8, size);
            message.set(Layouts.LONG, Native.MSGHDR_IOV_OFFSET, iov.address());
            message.set(Layouts.LONG, Native.MSGHDR_IOVLEN_OFFSET, 1);
            return message;
        }

        /** Points the I/O vector {@code offset} bytes further into the data, for the rest of a partial send. */
        void advance(long offset, long size) {
            iov.set(Layouts.LONG, 0, data.address() + offset);
            iov.set(Layouts.LONG, 8, size - offset);
            message.set(Layouts.LONG, Native.MSGHDR_CONTROL_OFFSET, 0L);
            message.set(Layouts.LONG, Native.MSGHDR_CONTROLLEN_OFFSET, 0L);
        }
    }

    /** Takes {@code fd}, a connected socket; for TCP, turns Nagle's delay off (closing it if that fails). */
    StreamSocket(int fd, boolean unix) {
        this.fd = fd;
        this.unix = unix;
        if (!unix) {
            try {
                Native.setIntOption(fd, Native.IPPROTO_TCP, Native.TCP_NODELAY, 1);
            } catch (RuntimeException e) {
                MemoryFile.closeQuietly(fd);
                throw e;
            }
        }
    }

    public static StreamSocket connect(StreamAddress address) {
        int fd = Native.socket(SocketAddresses.family(address), Native.SOCK_STREAM | Native.SOCK_CLOEXEC, 0);
        try (Arena arena = Arena.ofConfined()) {
            Native.connect(fd, SocketAddresses.sockaddr(address, arena), SocketAddresses.length(address),
                    address.toString());
        } catch (RuntimeException e) {
            MemoryFile.closeQuietly(fd);
            throw e;
        }
        return new StreamSocket(fd, address instanceof UnixAddress);
    }

    /**
     * The address this end of a TCP connection is bound to (getsockname).
     *
     * @throws IllegalStateException on a Unix domain socket
     */
    public TcpAddress localAddress() {
        checkOpen();
        if (unix) {
            throw new IllegalStateException("not a TCP connection");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment sockaddr = arena.allocate(Native.SOCKADDR_STORAGE_SIZE, 8);
            Native.getsockname(fd, sockaddr);
            return TcpAddress.fromSockaddr(sockaddr);
        }
    }

    /** Whether this is a Unix domain socket: only these carry descriptors and know their peer's credentials. */
    public boolean isUnix() {
        return unix;
    }

    /** Sends all of {@code data}; the descriptors, if any, travel with its first byte. The fds stay open here. */
    public void send(byte[] data, int... fds) {
        sendMessage(data, data.length, fds);
    }

    /**
     * Bounds each later send: one whose bytes the peer has not all taken within
     * {@code timeout} (a peer that stopped reading) fails with a {@link NativeException}
     * of errno ETIMEDOUT, its message cut short, so the stream is broken: shut the socket
     * down. As Perfetto's IPC host, which gives a client 10 s to take a send. Zero, the
     * default, waits for ever.
     */
    public void setSendTimeout(Duration timeout) {
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("negative send timeout " + timeout);
        }
        sendTimeoutNanos = timeout.toNanos();
    }

    /**
     * Sends the first {@code length} bytes of {@code data}, with {@code fd} if it is not
     * negative (it stays open here): for a caller that reuses one buffer for its messages.
     */
    public void sendBytes(byte[] data, int length, int fd) {
        Objects.checkFromIndexSize(0, length, data.length);
        sendMessage(data, length, fd < 0 ? NO_FDS : new int[] {fd});
    }

    private void sendMessage(byte[] data, int length, int[] fds) {
        checkOpen();
        if (length == 0) {
            throw new IllegalArgumentException("a send needs at least one byte (descriptors cannot travel alone)");
        }
        if (fds.length > MAX_FDS_PER_MESSAGE) {
            throw new IllegalArgumentException(fds.length + " descriptors in one message, at most " + MAX_FDS_PER_MESSAGE);
        }
        if (fds.length > 0 && !unix) {
            throw new IllegalArgumentException("a TCP connection carries no descriptors");
        }
        synchronized (sending) {
            MemorySegment message = sending.message(length);
            MemorySegment.copy(data, 0, sending.data, Layouts.BYTE, 0, length);
            if (fds.length > 0) {
                long space = controlSpace(fds.length);
                MemorySegment control = sending.control;
                control.set(Layouts.LONG, 0, Native.CMSG_HEADER_SIZE + 4L * fds.length);
                control.set(Layouts.INT, Native.CMSG_LEVEL_OFFSET, Native.SOL_SOCKET);
                control.set(Layouts.INT, Native.CMSG_TYPE_OFFSET, Native.SCM_RIGHTS);
                MemorySegment.copy(fds, 0, control, Layouts.INT_UNALIGNED, Native.CMSG_HEADER_SIZE, fds.length);
                message.set(Layouts.LONG, Native.MSGHDR_CONTROL_OFFSET, control.address());
                message.set(Layouts.LONG, Native.MSGHDR_CONTROLLEN_OFFSET, space);
            }
            long timeout = sendTimeoutNanos;
            long deadline = System.nanoTime() + timeout;
            int flags = Native.MSG_NOSIGNAL | (timeout > 0 ? Native.MSG_DONTWAIT : 0);
            long sent = 0;
            while (sent < length) {
                long part = Native.sendmsg(fd, message, flags);
                if (part == -Native.EAGAIN) {
                    awaitRoom(deadline, timeout);
                    continue;
                }
                sent += part;
                if (sent < length) {
                    // The descriptors went with the first byte; the rest goes without them.
                    sending.advance(sent, length);
                }
            }
        }
    }

    /** Waits until the socket takes bytes again, or fails the send at {@code deadline}. */
    private void awaitRoom(long deadline, long timeout) {
        long left = deadline - System.nanoTime();
        // Rounded up: poll waits whole milliseconds, and 0 would not wait at all.
        if (left <= 0 || !Native.pollWritable(fd, (left + 999_999) / 1_000_000)) {
            throw new NativeException("sendmsg(" + fd + ") within " + timeout / 1_000_000 + " ms", Native.ETIMEDOUT);
        }
    }

    /**
     * Receives up to {@code into.length} bytes and up to {@code maxFds} descriptors, which
     * the caller then owns (they are close-on-exec). If the peer sent more descriptors than
     * {@code maxFds}, the kernel drops the rest; this method closes the ones that did
     * arrive and throws, so nothing leaks.
     */
    public Received receive(byte[] into, int maxFds) {
        checkMaxFds(maxFds);
        synchronized (receiving) {
            int received = receiveLocked(into, maxFds);
            return new Received(received, receiving.fds);
        }
    }

    /**
     * As {@link #receive(byte[], int)} with up to {@code fds.length} descriptors, without
     * allocating: the descriptors go to the start of {@code fds}, the rest of it is set to
     * -1. Returns the bytes received, 0 at end of stream.
     */
    public int receive(byte[] into, int[] fds) {
        checkMaxFds(fds.length);
        synchronized (receiving) {
            int received = receiveLocked(into, fds.length);
            int[] arrived = receiving.fds;
            Arrays.fill(fds, -1);
            System.arraycopy(arrived, 0, fds, 0, arrived.length);
            return received;
        }
    }

    private static void checkMaxFds(int maxFds) {
        if (maxFds < 0 || maxFds > MAX_FDS_PER_MESSAGE) {
            throw new IllegalArgumentException("maxFds must be 0.." + MAX_FDS_PER_MESSAGE + ", got " + maxFds);
        }
    }

    /** One recvmsg into {@code into}; the descriptors that came are left in {@code receiving.fds}. */
    private int receiveLocked(byte[] into, int maxFds) {
        checkOpen();
        if (into.length == 0) {
            throw new IllegalArgumentException("receive buffer is empty");
        }
        MemorySegment message = receiving.message(into.length);
        long controlSize = maxFds == 0 ? 0 : controlSpace(maxFds);
        MemorySegment control = receiving.control;
        message.set(Layouts.LONG, Native.MSGHDR_CONTROL_OFFSET, controlSize == 0 ? 0L : control.address());
        message.set(Layouts.LONG, Native.MSGHDR_CONTROLLEN_OFFSET, controlSize);

        int received = (int) Native.recvmsg(fd, message, Native.MSG_CMSG_CLOEXEC);
        int[] fds = controlSize == 0 ? NO_FDS
                : descriptors(control, message.get(Layouts.LONG, Native.MSGHDR_CONTROLLEN_OFFSET));
        // The control buffer is rounded up to 8 bytes, so one more fd than asked can fit.
        if (fds.length > maxFds || (message.get(Layouts.INT, Native.MSGHDR_FLAGS_OFFSET) & Native.MSG_CTRUNC) != 0) {
            for (int descriptor : fds) {
                MemoryFile.closeQuietly(descriptor);
            }
            throw new IllegalStateException("peer sent more than " + maxFds
                    + " descriptors; the extra ones were dropped by the kernel and the rest closed");
        }
        MemorySegment.copy(receiving.data, Layouts.BYTE, 0, into, 0, received);
        receiving.fds = fds;
        return received;
    }

    /**
     * Closes descriptors that {@link #receive} handed over and the caller does not keep
     * (a peer sent them where none were expected); negative values are skipped.
     */
    public static void closeReceived(int... fds) {
        for (int descriptor : fds) {
            if (descriptor >= 0) {
                MemoryFile.closeQuietly(descriptor);
            }
        }
    }

    /** Sends one byte without blocking (heapprofd's wake-up signal). */
    public SendResult trySendByte(byte value) {
        checkOpen();
        MemorySegment scratch = SIGNAL_BYTE.get();
        scratch.set(Layouts.BYTE, 0, value);
        long result = Native.send(fd, scratch, 1, Native.MSG_DONTWAIT | Native.MSG_NOSIGNAL);
        if (result == 1) {
            return SendResult.SENT;
        }
        return result == -Native.EPIPE ? SendResult.PEER_CLOSED : SendResult.WOULD_BLOCK;
    }

    /**
     * The peer's pid, uid and gid as the kernel recorded them: the service's trusted identity of a producer.
     *
     * @throws IllegalStateException on a TCP connection, whose peer the kernel cannot vouch for
     */
    public PeerCredentials peerCredentials() {
        checkOpen();
        if (!unix) {
            throw new IllegalStateException("a TCP connection has no peer credentials");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment credentials = arena.allocate(12, 4);
            MemorySegment length = arena.allocate(Layouts.INT);
            length.set(Layouts.INT, 0, 12);
            Native.getsockopt(fd, Native.SOL_SOCKET, Native.SO_PEERCRED, credentials, length);
            return new PeerCredentials(credentials.get(Layouts.INT, 0), credentials.get(Layouts.INT, 4),
                    credentials.get(Layouts.INT, 8));
        }
    }

    public int fd() {
        checkOpen();
        return fd;
    }

    /**
     * Shuts both directions down without closing: a thread blocked in {@link #receive}
     * sees end of stream, and the fd number stays taken until {@link #close()}, so the
     * thread that owns the socket can close it without racing another thread's call.
     */
    public void shutdown() {
        // Under the lock close() takes, so that a concurrent close cannot free the number
        // for another file between the check and the call. Not the send or receive locks:
        // shutting down is how another thread fails a blocked send.
        synchronized (closed) {
            if (!closed.get()) {
                Native.shutdownQuietly(fd, Native.SHUT_RDWR);
            }
        }
    }

    /** Shuts the connection down (waking a thread blocked in receive) and closes it; later calls do nothing. */
    @Override
    public void close() {
        synchronized (closed) {
            if (closed.compareAndSet(false, true)) {
                Native.shutdownQuietly(fd, Native.SHUT_RDWR);
                Native.close(fd);
            }
        }
    }

    private void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException("socket (fd " + fd + ") is closed");
        }
    }

    /** CMSG_SPACE for {@code count} ints: the header plus the data rounded up to 8 bytes. */
    private static long controlSpace(int count) {
        return Native.CMSG_HEADER_SIZE + ((4L * count + 7) & ~7L);
    }

    /** The descriptors in every SCM_RIGHTS message of a received control buffer. */
    private static int[] descriptors(MemorySegment control, long length) {
        int[] fds = NO_FDS;
        long offset = 0;
        length = Math.min(length, control.byteSize());
        while (offset + Native.CMSG_HEADER_SIZE <= length) {
            long cmsgLength = control.get(Layouts.LONG, offset);
            if (cmsgLength < Native.CMSG_HEADER_SIZE || offset + cmsgLength > length) {
                break;
            }
            if (control.get(Layouts.INT, offset + Native.CMSG_LEVEL_OFFSET) == Native.SOL_SOCKET
                    && control.get(Layouts.INT, offset + Native.CMSG_TYPE_OFFSET) == Native.SCM_RIGHTS) {
                int count = (int) ((cmsgLength - Native.CMSG_HEADER_SIZE) / 4);
                int start = fds.length;
                fds = Arrays.copyOf(fds, start + count);
                MemorySegment.copy(control, Layouts.INT_UNALIGNED, offset + Native.CMSG_HEADER_SIZE, fds, start, count);
            }
            offset += (cmsgLength + 7) & ~7L;
        }
        return fds;
    }
}
