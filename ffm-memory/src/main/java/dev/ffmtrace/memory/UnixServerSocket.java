package dev.ffmtrace.memory;

import dev.ffmtrace.memory.internal.Native;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
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
        return listen(address, backlog, -1);
    }

    /**
     * Binds, sets a filesystem socket's permission bits to {@code mode} (connecting needs
     * write permission), then listens: no peer can connect while the file still has the
     * umask's bits. An abstract name has no permissions; {@code mode} is ignored there.
     *
     * @param mode permission bits such as {@code 0600}, or -1 to keep what the umask gave
     * @throws IllegalArgumentException if {@code mode} is not -1 and has bits outside {@code 0777}
     */
    public static UnixServerSocket listen(UnixAddress address, int backlog, int mode) {
        if (mode != -1 && (mode & ~0777) != 0) {
            throw new IllegalArgumentException("socket mode " + Integer.toOctalString(mode) + " is not within 0777");
        }
        int fd = Native.socket(Native.AF_UNIX, Native.SOCK_STREAM | Native.SOCK_CLOEXEC, 0);
        try (Arena arena = Arena.ofConfined()) {
            Native.bind(fd, address.toSockaddr(arena), address.sockaddrLength(), address.toString());
            if (mode != -1 && !address.isAbstract()) {
                setMode(address, mode);
            }
            Native.listen(fd, backlog);
            return new UnixServerSocket(fd, address);
        } catch (RuntimeException e) {
            MemoryFile.closeQuietly(fd);
            throw e;
        }
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
