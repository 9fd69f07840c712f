package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.memory.Os;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A client's memory as one unwind sees it (Perfetto's StackOverlayMemory): the words of
 * the stack copy its record carries, and beyond the copy, the process itself through the
 * {@code /proc/PID/mem} fd it sent at the handshake, read a page at a time and kept for the
 * rest of the unwind. Reads of the process fail where nothing is mapped, once it has exited,
 * or when the fd is not a process's memory at all; each failure is counted. One per
 * connection, used by its thread only.
 */
final class StackOverlayMemory implements AutoCloseable {
    private static final long PAGE = 4096;

    private final int memFd;
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment page = arena.allocate(PAGE, 8);
    private long pageAddress = -1;
    private long stackPointer;
    private MemorySegment stack = MemorySegment.NULL;
    private long stackOffset;
    private long stackSize;
    private long value;
    private long remoteReads;
    private long failedReads;

    /** @param memFd the client's {@code /proc/PID/mem} fd, or -1 to read nothing beyond the copy */
    StackOverlayMemory(int memFd) {
        this.memFd = memFd;
    }

    /**
     * Starts an unwind over the copy of the memory at {@code stackPointer}: the
     * {@code stackSize} bytes of {@code stack} at {@code stackOffset} (read in place: a
     * record's copy needs no view of its own).
     */
    void reset(long stackPointer, MemorySegment stack, long stackOffset, long stackSize) {
        this.stackPointer = stackPointer;
        this.stack = stack;
        this.stackOffset = stackOffset;
        this.stackSize = stackSize;
        this.pageAddress = -1;
    }

    /** Reads the 8-byte word at {@code address} into {@link #value()}; false if it cannot be read. */
    boolean readWord(long address) {
        long inStack = address - stackPointer;
        if (Long.compareUnsigned(address, stackPointer) >= 0 && stackSize >= 8
                && Long.compareUnsigned(inStack, stackSize - 8) <= 0) {
            value = stack.get(Layouts.LONG_UNALIGNED, stackOffset + inStack);
            return true;
        }
        // Beyond the copy only aligned words are read, so that a word never spans two pages.
        long pageStart = address & -PAGE;
        if ((address & 7) != 0 || pageStart != pageAddress && (memFd < 0 || !readPage(pageStart))) {
            failedReads++;
            return false;
        }
        value = page.get(Layouts.LONG_UNALIGNED, address - pageStart);
        return true;
    }

    private boolean readPage(long address) {
        remoteReads++;
        pageAddress = -1;
        if (address < 0 || Os.pread(memFd, page, address) != PAGE) {
            return false;
        }
        pageAddress = address;
        return true;
    }

    /** The word the last successful {@link #readWord} read. */
    long value() {
        return value;
    }

    /** Reads of the process's memory, a page each. */
    long remoteReads() {
        return remoteReads;
    }

    /** Words that could not be read. */
    long failedReads() {
        return failedReads;
    }

    @Override
    public void close() {
        arena.close();
    }
}
