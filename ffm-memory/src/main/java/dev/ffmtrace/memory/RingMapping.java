package dev.ffmtrace.memory;

import dev.ffmtrace.memory.internal.Native;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A {@link MemoryFile} of a header followed by a ring, mapped so the ring appears twice
 * back to back, followed by an inaccessible guard:
 *
 * <pre>
 *   file:     [ header H ][ ring R ]
 *   virtual:  [ header H ][ ring R ][ ring R again ][ guard G, PROT_NONE ]
 *             ^ segment() covers H + 2R              ^ not part of the segment
 * </pre>
 *
 * A record of at most R bytes starting anywhere in the ring is contiguous in memory, and a
 * write past the end of the first copy lands at the start of the ring. The whole range is
 * reserved first (private, PROT_NONE), then the two shared views are mapped over it with
 * MAP_FIXED, so nothing else can be placed between them. This is the mapping heapprofd's
 * SharedRingBuffer uses.
 */
public final class RingMapping implements AutoCloseable {
    private final MemoryFile file;
    private final Arena arena;
    private final MemorySegment segment;
    private final long reservation;
    private final long reservationSize;
    private final long headerSize;
    private final long ringSize;
    private final AtomicBoolean closed = new AtomicBoolean();

    private RingMapping(MemoryFile file, Arena arena, MemorySegment segment, long reservation,
                        long reservationSize, long headerSize, long ringSize) {
        this.file = file;
        this.arena = arena;
        this.segment = segment;
        this.reservation = reservation;
        this.reservationSize = reservationSize;
        this.headerSize = headerSize;
        this.ringSize = ringSize;
    }

    /**
     * Maps {@code file} as a header of {@code headerSize} bytes and a ring of the rest,
     * with a guard of {@code guardSize} bytes after the second copy. Takes ownership of
     * the file: it is closed with this object, or at once if mapping fails.
     *
     * @throws IllegalArgumentException if the header, ring or guard is not a multiple of
     *         the page size, or the ring is empty
     */
    public static RingMapping map(MemoryFile file, long headerSize, long guardSize) {
        long page = Native.pageSize();
        long ringSize = file.size() - headerSize;
        try {
            if (headerSize < 0 || headerSize % page != 0) {
                throw new IllegalArgumentException("ring header size " + headerSize
                        + " is not a multiple of the page size " + page);
            }
            if (ringSize <= 0 || ringSize % page != 0) {
                throw new IllegalArgumentException("ring size " + ringSize + " (file " + file.size()
                        + " bytes minus header " + headerSize + ") is not a positive multiple of the page size " + page);
            }
            if (guardSize < 0 || guardSize % page != 0) {
                throw new IllegalArgumentException("guard size " + guardSize + " is not a multiple of the page size " + page);
            }
        } catch (IllegalArgumentException e) {
            file.close();
            throw e;
        }
        long total = headerSize + 2 * ringSize + guardSize;
        long reservation;
        try {
            reservation = Native.mmap(0, total, Native.PROT_NONE,
                    Native.MAP_PRIVATE | Native.MAP_ANONYMOUS | Native.MAP_NORESERVE, -1, 0);
        } catch (RuntimeException e) {
            file.close();
            throw e;
        }
        try {
            int readWrite = Native.PROT_READ | Native.PROT_WRITE;
            int sharedFixed = Native.MAP_SHARED | Native.MAP_FIXED;
            Native.mmap(reservation, headerSize + ringSize, readWrite, sharedFixed, file.fd(), 0);
            Native.mmap(reservation + headerSize + ringSize, ringSize, readWrite, sharedFixed, file.fd(), headerSize);
        } catch (RuntimeException e) {
            Native.munmap(reservation, total);
            file.close();
            throw e;
        }
        Arena arena = Arena.ofShared();
        MemorySegment segment = MemorySegment.ofAddress(reservation).reinterpret(headerSize + 2 * ringSize, arena, null);
        return new RingMapping(file, arena, segment, reservation, total, headerSize, ringSize);
    }

    /** Header and both copies of the ring; the guard is outside it. */
    public MemorySegment segment() {
        if (closed.get()) {
            throw new IllegalStateException("ring mapping of " + ringSize + " bytes is closed");
        }
        return segment;
    }

    public MemorySegment header() {
        return segment().asSlice(0, headerSize);
    }

    /** The ring seen twice: {@code 2 * ringSize()} bytes, where byte {@code i + ringSize()} is byte {@code i}. */
    public MemorySegment ring() {
        return segment().asSlice(headerSize, 2 * ringSize);
    }

    public long headerSize() {
        return headerSize;
    }

    public long ringSize() {
        return ringSize;
    }

    public MemoryFile file() {
        return file;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                arena.close();
                Native.munmap(reservation, reservationSize);
            } finally {
                file.close();
            }
        }
    }
}
