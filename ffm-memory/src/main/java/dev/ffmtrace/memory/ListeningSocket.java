package dev.ffmtrace.memory;

import dev.ffmtrace.memory.internal.Native;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A listening stream socket, Unix domain or TCP. Closing it wakes a thread blocked in
 * {@link #accept()}.
 */
public final class ListeningSocket implements AutoCloseable {
    private final int fd;
    private final StreamAddress address;
    private final AtomicBoolean closed = new AtomicBoolean();

    private ListeningSocket(int fd, StreamAddress address) {
        this.fd = fd;
        this.address = address;
    }

    /**
     * Binds and listens. A filesystem path must not exist yet; it is removed again on
     * {@link #close()}. A TCP address may be in TIME_WAIT from an earlier listener
     * (SO_REUSEADDR), and port 0 lets the kernel choose.
     */
    public static ListeningSocket listen(StreamAddress address, int backlog) {
        return listen(address, backlog, -1);
    }

    /**
     * Binds, sets a filesystem socket's permission bits to {@code mode} (connecting needs
     * write permission), then listens: no peer can connect while the file still has the
     * umask's bits. An abstract name and a TCP address have no permissions; {@code mode}
     * is ignored there.
     *
     * @param mode permission bits such as {@code 0600}, or -1 to keep what the umask gave
     * @throws IllegalArgumentException if {@code mode} is not -1 and has bits outside {@code 0777}
     */
    public static ListeningSocket listen(StreamAddress address, int backlog, int mode) {
        if (mode != -1 && (mode & ~0777) != 0) {
            throw new IllegalArgumentException("socket mode " + Integer.toOctalString(mode) + " is not within 0777");
        }
        int fd = Native.socket(SocketAddresses.family(address), Native.SOCK_STREAM | Native.SOCK_CLOEXEC, 0);
        try (Arena arena = Arena.ofConfined()) {
            if (address instanceof TcpAddress) {
                Native.setIntOption(fd, Native.SOL_SOCKET, Native.SO_REUSEADDR, 1);
            }
            Native.bind(fd, SocketAddresses.sockaddr(address, arena), SocketAddresses.length(address),
                    address.toString());
            if (mode != -1 && address instanceof UnixAddress unix && !unix.isAbstract()) {
                setMode(unix, mode);
            }
            Native.listen(fd, backlog);
            return new ListeningSocket(fd, address instanceof TcpAddress ? boundAddress(fd, arena) : address);
        } catch (RuntimeException e) {
            MemoryFile.closeQuietly(fd);
            throw e;
        }
    }

    /** Where a TCP socket is bound: the port the kernel chose, if the address asked for 0. */
    private static TcpAddress boundAddress(int fd, Arena arena) {
        MemorySegment sockaddr = arena.allocate(Native.SOCKADDR_STORAGE_SIZE, 8);
        Native.getsockname(fd, sockaddr);
        return TcpAddress.fromSockaddr(sockaddr);
    }

    private static void setMode(UnixAddress address, int mode) {
        Set<PosixFilePermission> permissions = EnumSet.noneOf(PosixFilePermission.class);
        PosixFilePermission[] bits = PosixFilePermission.values(); // OWNER_READ first, 0400
        for (int i = 0; i < bits.length; i++) {
            if ((mode & (0400 >> i)) != 0) {
                permissions.add(bits[i]);
            }
        }
        try {
            Files.setPosixFilePermissions(Path.of(address.name()), permissions);
        } catch (IOException e) {
            try {
                Files.deleteIfExists(Path.of(address.name()));
            } catch (IOException ignored) {
                // The chmod's failure is the one to report.
            }
            throw new UncheckedIOException("cannot set the mode of " + address, e);
        }
    }

    /** Blocks until a peer connects. */
    public StreamSocket accept() {
        if (closed.get()) {
            throw new IllegalStateException("server socket " + address + " is closed");
        }
        return new StreamSocket(Native.accept(fd, Native.SOCK_CLOEXEC), address instanceof UnixAddress);
    }

    /** The address the socket is bound to; for TCP, with the port the kernel chose if it was asked for 0. */
    public StreamAddress address() {
        return address;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            Native.shutdownQuietly(fd, Native.SHUT_RDWR);
            Native.close(fd);
            if (address instanceof UnixAddress unix && !unix.isAbstract()) {
                try {
                    Files.deleteIfExists(Path.of(unix.name()));
                } catch (java.io.IOException ignored) {
                    // The socket is closed; a leftover name only blocks a later bind, which says so.
                }
            }
        }
    }
}
