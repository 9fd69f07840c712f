package dev.ffmtrace.memory;

import dev.ffmtrace.memory.internal.Native;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;

/** A listening Unix domain stream socket. Closing it wakes a thread blocked in {@link #accept()}. */
public final class UnixServerSocket implements AutoCloseable {
    private final int fd;
    private final UnixAddress address;
    private final AtomicBoolean closed = new AtomicBoolean();

    private UnixServerSocket(int fd, UnixAddress address) {
        this.fd = fd;
        this.address = address;
    }

    /** Binds and listens. A filesystem path must not exist yet; it is removed again on {@link #close()}. */
    public static UnixServerSocket listen(UnixAddress address, int backlog) {
        int fd = Native.socket(Native.AF_UNIX, Native.SOCK_STREAM | Native.SOCK_CLOEXEC, 0);
        try (Arena arena = Arena.ofConfined()) {
            Native.bind(fd, address.toSockaddr(arena), address.sockaddrLength(), address.toString());
            Native.listen(fd, backlog);
            return new UnixServerSocket(fd, address);
        } catch (RuntimeException e) {
            MemoryFile.closeQuietly(fd);
            throw e;
        }
    }

    /** Blocks until a peer connects. */
    public UnixSocket accept() {
        if (closed.get()) {
            throw new IllegalStateException("server socket " + address + " is closed");
        }
        return new UnixSocket(Native.accept(fd, Native.SOCK_CLOEXEC));
    }

    public UnixAddress address() {
        return address;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            Native.shutdownQuietly(fd, Native.SHUT_RDWR);
            Native.close(fd);
            if (!address.isAbstract()) {
                try {
                    Files.deleteIfExists(Path.of(address.name()));
                } catch (java.io.IOException ignored) {
                    // The socket is closed; a leftover name only blocks a later bind, which says so.
                }
            }
        }
    }
}
