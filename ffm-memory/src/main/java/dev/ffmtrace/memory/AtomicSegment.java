package dev.ffmtrace.memory;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

/**
 * Atomic and ordered access to 8-, 16-, 32- and 64-bit little-endian values in a
 * segment: the only memory-ordering primitives ffmtrace uses, for memory shared with
 * other threads and other processes.
 *
 * <p>Every accessor names its ordering, so a reader sees each fence at the call site:
 * plain, {@code Opaque} (C++ relaxed), {@code Acquire}/{@code Release}, {@code Volatile}
 * (seq_cst), and the read-modify-writes {@code compareAndSet}, {@code compareAndExchange},
 * {@code getAndAdd} and {@code getAndSet}. Offsets are bytes from the segment's start
 * and must be naturally aligned for their width.
 *
 * <p>The segment's alignment is checked once, here: its base must allow 8-byte
 * alignment, which rules out heap segments over {@code byte[]} (the JDK refuses aligned
 * int and long access on them). The 8- and 16-bit read-modify-writes work on the
 * enclosing aligned 32-bit word, so that word must lie inside the segment. The only
 * per-access checks left are the JDK's own bounds, liveness and alignment checks.
 */
public final class AtomicSegment {
    private static final VarHandle BYTE_HANDLE = Layouts.BYTE.varHandle();
    private static final VarHandle SHORT_HANDLE = Layouts.SHORT.varHandle();
    private static final VarHandle INT_HANDLE = Layouts.INT.varHandle();
    private static final VarHandle LONG_HANDLE = Layouts.LONG.varHandle();

    private final MemorySegment segment;

    /**
     * @throws IllegalArgumentException if the segment cannot hold 8-byte aligned values,
     *         e.g. a heap segment over a {@code byte[]} or a native segment at an odd address
     */
    public AtomicSegment(MemorySegment segment) {
        if (segment.maxByteAlignment() < Long.BYTES) {
            throw new IllegalArgumentException("atomics need a segment aligned to 8 bytes; this one allows "
                    + segment.maxByteAlignment() + (segment.isNative() ? " (native address 0x"
                    + Long.toHexString(segment.address()) + ")" : " (a heap segment: use native memory)"));
        }
        this.segment = segment;
    }

    public MemorySegment segment() {
        return segment;
    }

    // ---- byte ----

    /** Plain load: no ordering. */
    public byte getByte(long offset) {
        return (byte) BYTE_HANDLE.get(segment, offset);
    }

    /** Plain store: no ordering. */
    public void putByte(long offset, byte value) {
        BYTE_HANDLE.set(segment, offset, value);
    }

    /** Opaque load (C++ relaxed): atomic and coherent, no ordering with other locations. */
    public byte getByteOpaque(long offset) {
        return (byte) BYTE_HANDLE.getOpaque(segment, offset);
    }

    /** Opaque store (C++ relaxed). */
    public void putByteOpaque(long offset, byte value) {
        BYTE_HANDLE.setOpaque(segment, offset, value);
    }

    /** Acquire load: later loads and stores stay after it. */
    public byte getByteAcquire(long offset) {
        return (byte) BYTE_HANDLE.getAcquire(segment, offset);
    }

    /** Release store (Agrona's "ordered"): earlier loads and stores stay before it. */
    public void putByteRelease(long offset, byte value) {
        BYTE_HANDLE.setRelease(segment, offset, value);
    }

    /** Volatile (sequentially consistent) load. */
    public byte getByteVolatile(long offset) {
        return (byte) BYTE_HANDLE.getVolatile(segment, offset);
    }

    /** Volatile (sequentially consistent) store. */
    public void putByteVolatile(long offset, byte value) {
        BYTE_HANDLE.setVolatile(segment, offset, value);
    }

    /**
     * Sequentially consistent compare-and-set, done as a CAS on the aligned 32-bit word
     * holding the value (the JDK offers no 8-bit CAS on segments).
     */
    public boolean compareAndSetByte(long offset, byte expected, byte value) {
        long word = offset & ~3L;
        int shift = (int) (offset - word) * 8;
        int mask = 0xFF << shift;
        while (true) {
            int old = (int) INT_HANDLE.getVolatile(segment, word);
            if (((byte) (old >>> shift)) != expected) {
                return false;
            }
            int updated = (old & ~mask) | (((value & 0xFF)) << shift);
            if (INT_HANDLE.compareAndSet(segment, word, old, updated)) {
                return true;
            }
        }
    }

    /** Sequentially consistent get-and-set (exchange), on the enclosing 32-bit word. */
    public byte getAndSetByte(long offset, byte value) {
        long word = offset & ~3L;
        int shift = (int) (offset - word) * 8;
        int mask = 0xFF << shift;
        while (true) {
            int old = (int) INT_HANDLE.getVolatile(segment, word);
            int updated = (old & ~mask) | (((value & 0xFF)) << shift);
            if (INT_HANDLE.compareAndSet(segment, word, old, updated)) {
                return (byte) (old >>> shift);
            }
        }
    }

    /** Sequentially consistent get-and-add (wrapping at 8 bits), on the enclosing 32-bit word. */
    public byte getAndAddByte(long offset, byte delta) {
        long word = offset & ~3L;
        int shift = (int) (offset - word) * 8;
        int mask = 0xFF << shift;
        while (true) {
            int old = (int) INT_HANDLE.getVolatile(segment, word);
            byte current = (byte) (old >>> shift);
            int updated = (old & ~mask) | ((((current + delta) & 0xFF)) << shift);
            if (INT_HANDLE.compareAndSet(segment, word, old, updated)) {
                return current;
            }
        }
    }

    // ---- short ----

    /** Plain load: no ordering. */
    public short getShort(long offset) {
        return (short) SHORT_HANDLE.get(segment, offset);
    }

    /** Plain store: no ordering. */
    public void putShort(long offset, short value) {
        SHORT_HANDLE.set(segment, offset, value);
    }

    /** Opaque load (C++ relaxed): atomic and coherent, no ordering with other locations. */
    public short getShortOpaque(long offset) {
        return (short) SHORT_HANDLE.getOpaque(segment, offset);
    }

    /** Opaque store (C++ relaxed). */
    public void putShortOpaque(long offset, short value) {
        SHORT_HANDLE.setOpaque(segment, offset, value);
    }

    /** Acquire load: later loads and stores stay after it. */
    public short getShortAcquire(long offset) {
        return (short) SHORT_HANDLE.getAcquire(segment, offset);
    }

    /** Release store (Agrona's "ordered"): earlier loads and stores stay before it. */
    public void putShortRelease(long offset, short value) {
        SHORT_HANDLE.setRelease(segment, offset, value);
    }

    /** Volatile (sequentially consistent) load. */
    public short getShortVolatile(long offset) {
        return (short) SHORT_HANDLE.getVolatile(segment, offset);
    }

    /** Volatile (sequentially consistent) store. */
    public void putShortVolatile(long offset, short value) {
        SHORT_HANDLE.setVolatile(segment, offset, value);
    }

    /**
     * Sequentially consistent compare-and-set, done as a CAS on the aligned 32-bit word
     * holding the value (the JDK offers no 16-bit CAS on segments).
     */
    public boolean compareAndSetShort(long offset, short expected, short value) {
        long word = offset & ~3L;
        int shift = (int) (offset - word) * 8;
        int mask = 0xFFFF << shift;
        while (true) {
            int old = (int) INT_HANDLE.getVolatile(segment, word);
            if (((short) (old >>> shift)) != expected) {
                return false;
            }
            int updated = (old & ~mask) | (((value & 0xFFFF)) << shift);
            if (INT_HANDLE.compareAndSet(segment, word, old, updated)) {
                return true;
            }
        }
    }

    /** Sequentially consistent get-and-set (exchange), on the enclosing 32-bit word. */
    public short getAndSetShort(long offset, short value) {
        long word = offset & ~3L;
        int shift = (int) (offset - word) * 8;
        int mask = 0xFFFF << shift;
        while (true) {
            int old = (int) INT_HANDLE.getVolatile(segment, word);
            int updated = (old & ~mask) | (((value & 0xFFFF)) << shift);
            if (INT_HANDLE.compareAndSet(segment, word, old, updated)) {
                return (short) (old >>> shift);
            }
        }
    }

    /** Sequentially consistent get-and-add (wrapping at 16 bits), on the enclosing 32-bit word. */
    public short getAndAddShort(long offset, short delta) {
        long word = offset & ~3L;
        int shift = (int) (offset - word) * 8;
        int mask = 0xFFFF << shift;
        while (true) {
            int old = (int) INT_HANDLE.getVolatile(segment, word);
            short current = (short) (old >>> shift);
            int updated = (old & ~mask) | ((((current + delta) & 0xFFFF)) << shift);
            if (INT_HANDLE.compareAndSet(segment, word, old, updated)) {
                return current;
            }
        }
    }

    // ---- int ----

    /** Plain load: no ordering. */
    public int getInt(long offset) {
        return (int) INT_HANDLE.get(segment, offset);
    }

    /** Plain store: no ordering. */
    public void putInt(long offset, int value) {
        INT_HANDLE.set(segment, offset, value);
    }

    /** Opaque load (C++ relaxed): atomic and coherent, no ordering with other locations. */
    public int getIntOpaque(long offset) {
        return (int) INT_HANDLE.getOpaque(segment, offset);
    }

    /** Opaque store (C++ relaxed). */
    public void putIntOpaque(long offset, int value) {
        INT_HANDLE.setOpaque(segment, offset, value);
    }

    /** Acquire load: later loads and stores stay after it. */
    public int getIntAcquire(long offset) {
        return (int) INT_HANDLE.getAcquire(segment, offset);
    }

    /** Release store (Agrona's "ordered"): earlier loads and stores stay before it. */
    public void putIntRelease(long offset, int value) {
        INT_HANDLE.setRelease(segment, offset, value);
    }

    /** Volatile (sequentially consistent) load. */
    public int getIntVolatile(long offset) {
        return (int) INT_HANDLE.getVolatile(segment, offset);
    }

    /** Volatile (sequentially consistent) store. */
    public void putIntVolatile(long offset, int value) {
        INT_HANDLE.setVolatile(segment, offset, value);
    }

    /** Sequentially consistent compare-and-set. */
    public boolean compareAndSetInt(long offset, int expected, int value) {
        return INT_HANDLE.compareAndSet(segment, offset, expected, value);
    }

    /** Sequentially consistent compare-and-exchange: returns the value found. */
    public int compareAndExchangeInt(long offset, int expected, int value) {
        return (int) INT_HANDLE.compareAndExchange(segment, offset, expected, value);
    }

    /** Sequentially consistent get-and-add. */
    public int getAndAddInt(long offset, int delta) {
        return (int) INT_HANDLE.getAndAdd(segment, offset, delta);
    }

    /** Release get-and-add (C++ fetch_add with memory_order_release). */
    public int getAndAddIntRelease(long offset, int delta) {
        return (int) INT_HANDLE.getAndAddRelease(segment, offset, delta);
    }

    /** Sequentially consistent get-and-set (exchange). */
    public int getAndSetInt(long offset, int value) {
        return (int) INT_HANDLE.getAndSet(segment, offset, value);
    }

    /** Acquire get-and-set (C++ exchange with memory_order_acquire). */
    public int getAndSetIntAcquire(long offset, int value) {
        return (int) INT_HANDLE.getAndSetAcquire(segment, offset, value);
    }

    // ---- long ----

    /** Plain load: no ordering. */
    public long getLong(long offset) {
        return (long) LONG_HANDLE.get(segment, offset);
    }

    /** Plain store: no ordering. */
    public void putLong(long offset, long value) {
        LONG_HANDLE.set(segment, offset, value);
    }

    /** Opaque load (C++ relaxed): atomic and coherent, no ordering with other locations. */
    public long getLongOpaque(long offset) {
        return (long) LONG_HANDLE.getOpaque(segment, offset);
    }

    /** Opaque store (C++ relaxed). */
    public void putLongOpaque(long offset, long value) {
        LONG_HANDLE.setOpaque(segment, offset, value);
    }

    /** Acquire load: later loads and stores stay after it. */
    public long getLongAcquire(long offset) {
        return (long) LONG_HANDLE.getAcquire(segment, offset);
    }

    /** Release store (Agrona's "ordered"): earlier loads and stores stay before it. */
    public void putLongRelease(long offset, long value) {
        LONG_HANDLE.setRelease(segment, offset, value);
    }

    /** Volatile (sequentially consistent) load. */
    public long getLongVolatile(long offset) {
        return (long) LONG_HANDLE.getVolatile(segment, offset);
    }

    /** Volatile (sequentially consistent) store. */
    public void putLongVolatile(long offset, long value) {
        LONG_HANDLE.setVolatile(segment, offset, value);
    }

    /** Sequentially consistent compare-and-set. */
    public boolean compareAndSetLong(long offset, long expected, long value) {
        return LONG_HANDLE.compareAndSet(segment, offset, expected, value);
    }

    /** Sequentially consistent compare-and-exchange: returns the value found. */
    public long compareAndExchangeLong(long offset, long expected, long value) {
        return (long) LONG_HANDLE.compareAndExchange(segment, offset, expected, value);
    }

    /** Sequentially consistent get-and-add. */
    public long getAndAddLong(long offset, long delta) {
        return (long) LONG_HANDLE.getAndAdd(segment, offset, delta);
    }

    /** Release get-and-add (C++ fetch_add with memory_order_release). */
    public long getAndAddLongRelease(long offset, long delta) {
        return (long) LONG_HANDLE.getAndAddRelease(segment, offset, delta);
    }

    /** Sequentially consistent get-and-set (exchange). */
    public long getAndSetLong(long offset, long value) {
        return (long) LONG_HANDLE.getAndSet(segment, offset, value);
    }

    /** Acquire get-and-set (C++ exchange with memory_order_acquire). */
    public long getAndSetLongAcquire(long offset, long value) {
        return (long) LONG_HANDLE.getAndSetAcquire(segment, offset, value);
    }
}
