package dev.ffmtrace.memory;

import dev.ffmtrace.memory.internal.Native;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A {@link MemoryFile} mapped read-write and shared ({@code MAP_SHARED}) into one
 * {@link MemorySegment}.
 *
 * <p>The segment's lifetime is a shared {@link Arena} owned by this object: {@link #close()}
 * closes the arena (after which any access to the segment fails), unmaps the memory and
 * closes the file, exactly once.
 */
public final class SharedMemory implements AutoCloseable {
    private final MemoryFile file;
    private final Arena arena;
    private final MemorySegment segment;
    private final long address;
    private final int fd;
    private final AtomicBoolean closed = new AtomicBoolean();

    private SharedMemory(MemoryFile file, Arena arena, MemorySegment segment, long address) {
        this.file = file;
        this.arena = arena;
        this.segment = segment;
        this.address = address;
        this.fd = file.fd();
    }

    /** Creates a sealed memfd (see {@link MemoryFile#create(String, long)}) and maps it. */
    public static SharedMemory create(String name, long size) {
        return map(MemoryFile.create(name, size));
    }

    /**
     * Checks and maps an fd received from a peer, at the size {@code fstat} gives, sealed
     * or not (see {@link MemoryFile#attach(int)}); takes ownership of the fd.
     */
    public static SharedMemory attach(int fd) {
        return map(MemoryFile.attach(fd));
    }

    /** Checks and maps an fd received from a peer (see {@link MemoryFile#attach(int, Seals)}); takes ownership of it. */
    public static SharedMemory attach(int fd, Seals seals) {
        return map(MemoryFile.attach(fd, seals));
    }

    /**
     * Checks and maps an fd received from a peer that must be {@code expectedSize} bytes
     * (see {@link MemoryFile#attach(int, long, Seals)}); takes ownership of it.
     */
    public static SharedMemory attach(int fd, long expectedSize, Seals seals) {
        return map(MemoryFile.attach(fd, expectedSize, seals));
    }

    /** Opens and maps shared memory by its path (see {@link MemoryFile#open}). */
    public static SharedMemory open(Path path, Seals seals) {
        return map(MemoryFile.open(path, seals));
    }

    /** Maps {@code file}, taking ownership of it: it is closed with this object, or at once if mapping fails. */
    public static SharedMemory map(MemoryFile file) {
        long address;
        try {
            address = Native.mmap(0, file.size(), Native.PROT_READ | Native.PROT_WRITE, Native.MAP_SHARED, file.fd(), 0);
        } catch (RuntimeException e) {
            file.close();
            throw e;
        }
        Arena arena = Arena.ofShared();
        MemorySegment segment = MemorySegment.ofAddress(address).reinterpret(file.size(), arena, null);
        return new SharedMemory(file, arena, segment, address);
    }

    /** The mapped bytes; aligned to the page size, so {@link AtomicSegment} accepts it. */
    public MemorySegment segment() {
        if (closed.get()) {
            throw new IllegalStateException("shared memory (fd " + fd + ") is closed");
        }
        return segment;
    }

    public MemoryFile file() {
        return file;
    }

    /** The fd, for sending to a peer; it stays owned by this object. */
    public int fd() {
        return file.fd();
    }

    public long size() {
        return file.size();
    }

    public boolean isClosed() {
        return closed.get();
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                arena.close();
                Native.munmap(address, file.size());
            } finally {
                file.close();
            }
        }
    }
}
