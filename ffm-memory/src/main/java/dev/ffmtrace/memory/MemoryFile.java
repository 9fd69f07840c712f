package dev.ffmtrace.memory;

import dev.ffmtrace.memory.internal.Native;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A file of anonymous shared memory, owned by this object and closed exactly once.
 *
 * <p>{@link #create} makes a {@code memfd} (close-on-exec, sealing allowed), sizes it and
 * seals it against shrinking, growing and further sealing, so a peer that receives the
 * fd can write the memory but never truncate it under our mapping (a shrunk mapping
 * raises SIGBUS, which kills the JVM). Where memfd is unavailable it falls back to a
 * file under {@code /dev/shm} that is unlinked right after opening; such a file cannot
 * be sealed, which {@link #isSealedAgainstResize()} reports.
 *
 * <p>{@link #attach} adopts an fd received from a peer after checking with
 * {@code fstat} that it is a regular shared memory file (of the expected size, if one is
 * given) and, when {@link Seals#REQUIRED}, that the resize seals are in place;
 * {@link #open} does the same for a {@code /proc/PID/fd/N} or {@code /dev/shm} path.
 */
public final class MemoryFile implements AutoCloseable {
    /** Where the memory comes from. */
    public enum Backing { MEMFD, DEV_SHM }

    /** The seals {@link #create} applies. */
    public static final int RESIZE_SEALS = Native.F_SEAL_SHRINK | Native.F_SEAL_GROW;

    private static final long ANY_SIZE = -1;

    /** memfd names are limited to 249 bytes (NAME_MAX minus the "memfd:" prefix). */
    private static final int MAX_NAME_BYTES = 249;

    private final int fd;
    private final long size;
    private final Backing backing;
    private final AtomicBoolean closed = new AtomicBoolean();

    private MemoryFile(int fd, long size, Backing backing) {
        this.fd = fd;
        this.size = size;
        this.backing = backing;
    }

    /** A sealed memfd of {@code size} bytes, or an unlinked /dev/shm file where memfd is unavailable. */
    public static MemoryFile create(String name, long size) {
        checkName(name);
        checkSize(size);
        int fd;
        try {
            fd = Native.memfdCreate(name, Native.MFD_CLOEXEC | Native.MFD_ALLOW_SEALING);
        } catch (NativeException e) {
            if (!memfdUnavailable(e.errno())) {
                throw e;
            }
            return create(name, size, Backing.DEV_SHM);
        }
        return sizeAndSeal(fd, size, Backing.MEMFD);
    }

    /** Like {@link #create(String, long)}, with the backing chosen by the caller. */
    public static MemoryFile create(String name, long size, Backing backing) {
        checkName(name);
        checkSize(size);
        if (backing == Backing.MEMFD) {
            return sizeAndSeal(Native.memfdCreate(name, Native.MFD_CLOEXEC | Native.MFD_ALLOW_SEALING), size, backing);
        }
        String path = "/dev/shm/" + name.replace('/', '_') + "-" + ProcessHandle.current().pid()
                + "-" + Long.toHexString(ThreadLocalRandom.current().nextLong());
        int fd = Native.open(path, Native.O_RDWR | Native.O_CREAT | Native.O_EXCL | Native.O_CLOEXEC, 0600);
        try {
            Native.unlink(path);
        } catch (NativeException e) {
            closeQuietly(fd);
            throw e;
        }
        return sizeAndSeal(fd, size, backing);
    }

    /**
     * Adopts {@code fd}, received from a peer, at the size {@code fstat} gives; the file
     * need not be sealed (see {@link #attach(int, long, Seals)}).
     */
    public static MemoryFile attach(int fd) {
        return attach(fd, ANY_SIZE, Seals.NOT_REQUIRED);
    }

    /** Adopts {@code fd} at the size {@code fstat} gives, demanding {@code seals}. */
    public static MemoryFile attach(int fd, Seals seals) {
        return attach(fd, ANY_SIZE, seals);
    }

    /**
     * Adopts {@code fd}, received from a peer: checks that it is an open, non-empty regular
     * file of exactly {@code expectedSize} bytes and, if {@code seals} is
     * {@link Seals#REQUIRED}, that it is sealed against shrinking and growing. Ownership of
     * the fd passes to this object in every case: if a check fails the fd is closed before
     * the exception is thrown. To keep your own fd, pass {@link #duplicate(int)}'s copy.
     *
     * @throws IllegalArgumentException if the fd is negative, of the wrong kind, empty, of the
     *         wrong size or not sealed as required
     * @throws NativeException if {@code fstat} fails (e.g. EBADF for a closed fd, which
     *         is then not closed again)
     */
    public static MemoryFile attach(int fd, long expectedSize, Seals seals) {
        if (fd < 0) {
            throw new IllegalArgumentException("not a file descriptor: " + fd);
        }
        try {
            if (expectedSize != ANY_SIZE) {
                checkSize(expectedSize);
            }
            Native.FileStatus status = Native.fstat(fd);
            if (!status.isRegularFile()) {
                throw new IllegalArgumentException("fd " + fd + " is not a shared memory file (st_mode 0"
                        + Integer.toOctalString(status.mode()) + ")");
            }
            if (status.size() == 0) {
                throw new IllegalArgumentException("fd " + fd + " is an empty file");
            }
            if (expectedSize != ANY_SIZE && status.size() != expectedSize) {
                throw new IllegalArgumentException("fd " + fd + " is " + status.size()
                        + " bytes, expected " + expectedSize);
            }
            if (seals == Seals.REQUIRED && (seals(fd) & RESIZE_SEALS) != RESIZE_SEALS) {
                throw new IllegalArgumentException("fd " + fd + " is not sealed against shrinking and growing (seals 0x"
                        + Integer.toHexString(seals(fd)) + ")");
            }
            return new MemoryFile(fd, status.size(), Backing.MEMFD);
        } catch (NativeException e) {
            if (e.errno() != Native.EBADF) {
                closeQuietly(fd);
            }
            throw e;
        } catch (RuntimeException e) {
            closeQuietly(fd);
            throw e;
        }
    }

    /**
     * Opens shared memory someone else created by its path: another process's fd as
     * {@code /proc/PID/fd/N} (which needs the permission to inspect that process), or a
     * file under {@code /dev/shm}. The file is opened read-write with its own fd, which this
     * object owns; then checked as {@link #attach(int, Seals)} checks it.
     *
     * @throws NativeException if the path cannot be opened (ENOENT, EACCES, ...)
     */
    public static MemoryFile open(Path path, Seals seals) {
        String name = path.toString();
        if (name.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("path contains a NUL byte: " + name.replace('\0', '?'));
        }
        return attach(Native.open(name, Native.O_RDWR | Native.O_CLOEXEC, 0), ANY_SIZE, seals);
    }

    /** Opens {@code /dev/shm/<name>}, a POSIX shared memory object (see {@link #open(Path, Seals)}). */
    public static MemoryFile openShm(String name, Seals seals) {
        if (name.isEmpty() || name.indexOf('/') >= 0) {
            throw new IllegalArgumentException("a /dev/shm name is one non-empty path element, got \"" + name + "\"");
        }
        return open(Path.of("/dev/shm", name), seals);
    }

    /**
     * A new fd (close-on-exec) for the same open file as {@code fd}, for handing to an
     * {@code attach} that takes ownership while the caller keeps {@code fd}.
     */
    public static int duplicate(int fd) {
        return Native.fcntl(fd, Native.F_DUPFD_CLOEXEC, 0);
    }

    public int fd() {
        checkOpen();
        return fd;
    }

    public long size() {
        return size;
    }

    public Backing backing() {
        return backing;
    }

    /** The file's current seals ({@code F_GET_SEALS}); 0 for a file that cannot be sealed. */
    public int seals() {
        checkOpen();
        return seals(fd);
    }

    /**
     * The file's size now, from {@code fstat}: differs from {@link #size()} only if someone
     * resized the file, which a file sealed against resizing forbids.
     */
    public long currentSize() {
        checkOpen();
        return Native.fstat(fd).size();
    }

    /**
     * Whether {@code other} is the same file, opened through another descriptor (the same
     * device and inode): a memfd received from a peer in this very process is.
     */
    public boolean isSameFileAs(MemoryFile other) {
        checkOpen();
        other.checkOpen();
        Native.FileStatus mine = Native.fstat(fd);
        Native.FileStatus theirs = Native.fstat(other.fd);
        return mine.device() == theirs.device() && mine.inode() == theirs.inode();
    }

    /**
     * Sets the file's size ({@code ftruncate}). Memory mapped beyond the new size faults
     * on access, so only resize a file nobody maps past it; {@link #size()} stays the size
     * the file was created or attached with.
     *
     * @throws NativeException EPERM if the file is sealed against the change
     */
    public void resize(long newSize) {
        checkOpen();
        if (newSize < 0) {
            throw new IllegalArgumentException("a file size cannot be negative, got " + newSize);
        }
        Native.ftruncate(fd, newSize);
    }

    public boolean isSealedAgainstResize() {
        return (seals() & RESIZE_SEALS) == RESIZE_SEALS;
    }

    public boolean isClosed() {
        return closed.get();
    }

    /** Closes the fd; later calls do nothing. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            Native.close(fd);
        }
    }

    void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException("memory file (fd " + fd + ") is closed");
        }
    }

    private static MemoryFile sizeAndSeal(int fd, long size, Backing backing) {
        try {
            Native.ftruncate(fd, size);
            if (backing == Backing.MEMFD) {
                Native.fcntl(fd, Native.F_ADD_SEALS, RESIZE_SEALS | Native.F_SEAL_SEAL);
            }
            return new MemoryFile(fd, size, backing);
        } catch (RuntimeException e) {
            closeQuietly(fd);
            throw e;
        }
    }

    private static int seals(int fd) {
        try {
            return Native.fcntl(fd, Native.F_GET_SEALS, 0);
        } catch (NativeException e) {
            if (e.errno() == Native.EINVAL) {
                return 0;
            }
            throw e;
        }
    }

    private static boolean memfdUnavailable(int errno) {
        return errno == Native.ENOSYS || errno == Native.EPERM || errno == Native.EACCES;
    }

    static void closeQuietly(int fd) {
        try {
            Native.close(fd);
        } catch (NativeException ignored) {
            // Already failing: the first error is the one worth reporting.
        }
    }

    private static void checkName(String name) {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("shared memory needs a name");
        }
        if (name.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("shared memory name contains a NUL byte: " + name.replace('\0', '?'));
        }
        if (name.getBytes(StandardCharsets.UTF_8).length > MAX_NAME_BYTES) {
            throw new IllegalArgumentException("shared memory name is longer than " + MAX_NAME_BYTES + " bytes");
        }
    }

    static void checkSize(long size) {
        if (size <= 0) {
            throw new IllegalArgumentException("shared memory size must be positive, got " + size);
        }
    }
}
