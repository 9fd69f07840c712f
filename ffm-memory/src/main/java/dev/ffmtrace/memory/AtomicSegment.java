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
 *
 * <p>Every accessor also exists as a static method taking the segment first. Hot paths
 * keep their segment in a local and call those: C2 reloads fields after every fence, so
 * reaching the segment through this wrapper costs a chain of dependent loads before each
 * access that follows an ordered one. The static forms do not check the segment's
 * alignment up front; the JDK still refuses a misaligned access.
 *
 * <p>Over 500 lines for its API alone: about fifty accessors (each width and access mode,
 * each read-modify-write), each in both forms, and each a few lines around one
 * {@code VarHandle}.
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
        return getByte(segment, offset);
    }

    public static byte getByte(MemorySegment segment, long offset) {
        return (byte) BYTE_HANDLE.get(segment, offset);
    }

    /** Plain store: no ordering. */
    public void putByte(long offset, byte value) {
        putByte(segment, offset, value);
    }

    public static void putByte(MemorySegment segment, long offset, byte value) {
        BYTE_HANDLE.set(segment, offset, value);
    }

    /** Opaque load (C++ relaxed): atomic and coherent, no ordering with other locations. */
    public byte getByteOpaque(long offset) {
        return getByteOpaque(segment, offset);
    }

    public static byte getByteOpaque(MemorySegment segment, long offset) {
        return (byte) BYTE_HANDLE.getOpaque(segment, offset);
    }

    /** Opaque store (C++ relaxed). */
    public void putByteOpaque(long offset, byte value) {
        putByteOpaque(segment, offset, value);
    }

    public static void putByteOpaque(MemorySegment segment, long offset, byte value) {
        BYTE_HANDLE.setOpaque(segment, offset, value);
    }

    /** Acquire load: later loads and stores stay after it. */
    public byte getByteAcquire(long offset) {
        return getByteAcquire(segment, offset);
    }

    public static byte getByteAcquire(MemorySegment segment, long offset) {
        return (byte) BYTE_HANDLE.getAcquire(segment, offset);
    }

    /** Release store (Agrona's "ordered"): earlier loads and stores stay before it. */
    public void putByteRelease(long offset, byte value) {
        putByteRelease(segment, offset, value);
    }

    public static void putByteRelease(MemorySegment segment, long offset, byte value) {
        BYTE_HANDLE.setRelease(segment, offset, value);
    }

    /** Volatile (sequentially consistent) load. */
    public byte getByteVolatile(long offset) {
        return getByteVolatile(segment, offset);
    }

    public static byte getByteVolatile(MemorySegment segment, long offset) {
        return (byte) BYTE_HANDLE.getVolatile(segment, offset);
    }

    /** Volatile (sequentially consistent) store. */
    public void putByteVolatile(long offset, byte value) {
        putByteVolatile(segment, offset, value);
    }

    public static void putByteVolatile(MemorySegment segment, long offset, byte value) {
        BYTE_HANDLE.setVolatile(segment, offset, value);
    }

    /**
     * Sequentially consistent compare-and-set, done as a CAS on the aligned 32-bit word
     * holding the value (the JDK offers no 8-bit CAS on segments).
     */
    public boolean compareAndSetByte(long offset, byte expected, byte value) {
        return compareAndSetByte(segment, offset, expected, value);
    }

    public static boolean compareAndSetByte(MemorySegment segment, long offset, byte expected, byte value) {
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
        return getAndSetByte(segment, offset, value);
    }

    public static byte getAndSetByte(MemorySegment segment, long offset, byte value) {
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
        return getAndAddByte(segment, offset, delta);
    }

    public static byte getAndAddByte(MemorySegment segment, long offset, byte delta) {
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
        return getShort(segment, offset);
    }

    public static short getShort(MemorySegment segment, long offset) {
        return (short) SHORT_HANDLE.get(segment, offset);
    }

    /** Plain store: no ordering. */
    public void putShort(long offset, short value) {
        putShort(segment, offset, value);
    }

    public static void putShort(MemorySegment segment, long offset, short value) {
        SHORT_HANDLE.set(segment, offset, value);
    }

    /** Opaque load (C++ relaxed): atomic and coherent, no ordering with other locations. */
    public short getShortOpaque(long offset) {
        return getShortOpaque(segment, offset);
    }

    public static short getShortOpaque(MemorySegment segment, long offset) {
        return (short) SHORT_HANDLE.getOpaque(segment, offset);
    }

    /** Opaque store (C++ relaxed). */
    public void putShortOpaque(long offset, short value) {
        putShortOpaque(segment, offset, value);
    }

    public static void putShortOpaque(MemorySegment segment, long offset, short value) {
        SHORT_HANDLE.setOpaque(segment, offset, value);
    }

    /** Acquire load: later loads and stores stay after it. */
    public short getShortAcquire(long offset) {
        return getShortAcquire(segment, offset);
    }

    public static short getShortAcquire(MemorySegment segment, long offset) {
        return (short) SHORT_HANDLE.getAcquire(segment, offset);
    }

    /** Release store (Agrona's "ordered"): earlier loads and stores stay before it. */
    public void putShortRelease(long offset, short value) {
        putShortRelease(segment, offset, value);
    }

    public static void putShortRelease(MemorySegment segment, long offset, short value) {
        SHORT_HANDLE.setRelease(segment, offset, value);
    }

    /** Volatile (sequentially consistent) load. */
    public short getShortVolatile(long offset) {
        return getShortVolatile(segment, offset);
    }

    public static short getShortVolatile(MemorySegment segment, long offset) {
        return (short) SHORT_HANDLE.getVolatile(segment, offset);
    }

    /** Volatile (sequentially consistent) store. */
    public void putShortVolatile(long offset, short value) {
        putShortVolatile(segment, offset, value);
    }

    public static void putShortVolatile(MemorySegment segment, long offset, short value) {
        SHORT_HANDLE.setVolatile(segment, offset, value);
    }

    /**
     * Sequentially consistent compare-and-set, done as a CAS on the aligned 32-bit word
     * holding the value (the JDK offers no 16-bit CAS on segments).
     */
    public boolean compareAndSetShort(long offset, short expected, short value) {
        return compareAndSetShort(segment, offset, expected, value);
    }

    public static boolean compareAndSetShort(MemorySegment segment, long offset, short expected, short value) {
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
        return getAndSetShort(segment, offset, value);
    }

    public static short getAndSetShort(MemorySegment segment, long offset, short value) {
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
        return getAndAddShort(segment, offset, delta);
    }

    public static short getAndAddShort(MemorySegment segment, long offset, short delta) {
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
        return getInt(segment, offset);
    }

    public static int getInt(MemorySegment segment, long offset) {
        return (int) INT_HANDLE.get(segment, offset);
    }

    /** Plain store: no ordering. */
    public void putInt(long offset, int value) {
        putInt(segment, offset, value);
    }

    public static void putInt(MemorySegment segment, long offset, int value) {
        INT_HANDLE.set(segment, offset, value);
    }

    /** Opaque load (C++ relaxed): atomic and coherent, no ordering with other locations. */
    public int getIntOpaque(long offset) {
        return getIntOpaque(segment, offset);
    }

    public static int getIntOpaque(MemorySegment segment, long offset) {
        return (int) INT_HANDLE.getOpaque(segment, offset);
    }

    /** Opaque store (C++ relaxed). */
    public void putIntOpaque(long offset, int value) {
        putIntOpaque(segment, offset, value);
    }

    public static void putIntOpaque(MemorySegment segment, long offset, int value) {
        INT_HANDLE.setOpaque(segment, offset, value);
    }

    /** Acquire load: later loads and stores stay after it. */
    public int getIntAcquire(long offset) {
        return getIntAcquire(segment, offset);
    }

    public static int getIntAcquire(MemorySegment segment, long offset) {
        return (int) INT_HANDLE.getAcquire(segment, offset);
    }

    /** Release store (Agrona's "ordered"): earlier loads and stores stay before it. */
    public void putIntRelease(long offset, int value) {
        putIntRelease(segment, offset, value);
    }

    public static void putIntRelease(MemorySegment segment, long offset, int value) {
        INT_HANDLE.setRelease(segment, offset, value);
    }

    /** Volatile (sequentially consistent) load. */
    public int getIntVolatile(long offset) {
        return getIntVolatile(segment, offset);
    }

    public static int getIntVolatile(MemorySegment segment, long offset) {
        return (int) INT_HANDLE.getVolatile(segment, offset);
    }

    /** Volatile (sequentially consistent) store. */
    public void putIntVolatile(long offset, int value) {
        putIntVolatile(segment, offset, value);
    }

    public static void putIntVolatile(MemorySegment segment, long offset, int value) {
        INT_HANDLE.setVolatile(segment, offset, value);
    }

    /** Sequentially consistent compare-and-set. */
    public boolean compareAndSetInt(long offset, int expected, int value) {
        return compareAndSetInt(segment, offset, expected, value);
    }

    public static boolean compareAndSetInt(MemorySegment segment, long offset, int expected, int value) {
        return INT_HANDLE.compareAndSet(segment, offset, expected, value);
    }

    /** Sequentially consistent compare-and-exchange: returns the value found. */
    public int compareAndExchangeInt(long offset, int expected, int value) {
        return compareAndExchangeInt(segment, offset, expected, value);
    }

    public static int compareAndExchangeInt(MemorySegment segment, long offset, int expected, int value) {
        return (int) INT_HANDLE.compareAndExchange(segment, offset, expected, value);
    }

    /** Sequentially consistent get-and-add. */
    public int getAndAddInt(long offset, int delta) {
        return getAndAddInt(segment, offset, delta);
    }

    public static int getAndAddInt(MemorySegment segment, long offset, int delta) {
        return (int) INT_HANDLE.getAndAdd(segment, offset, delta);
    }

    /** Release get-and-add (C++ fetch_add with memory_order_release). */
    public int getAndAddIntRelease(long offset, int delta) {
        return getAndAddIntRelease(segment, offset, delta);
    }

    public static int getAndAddIntRelease(MemorySegment segment, long offset, int delta) {
        return (int) INT_HANDLE.getAndAddRelease(segment, offset, delta);
    }

    /** Sequentially consistent get-and-set (exchange). */
    public int getAndSetInt(long offset, int value) {
        return getAndSetInt(segment, offset, value);
    }

    public static int getAndSetInt(MemorySegment segment, long offset, int value) {
        return (int) INT_HANDLE.getAndSet(segment, offset, value);
    }

    /** Acquire get-and-set (C++ exchange with memory_order_acquire). */
    public int getAndSetIntAcquire(long offset, int value) {
        return getAndSetIntAcquire(segment, offset, value);
    }

    public static int getAndSetIntAcquire(MemorySegment segment, long offset, int value) {
        return (int) INT_HANDLE.getAndSetAcquire(segment, offset, value);
    }

    // ---- long ----

    /** Plain load: no ordering. */
    public long getLong(long offset) {
        return getLong(segment, offset);
    }

    public static long getLong(MemorySegment segment, long offset) {
        return (long) LONG_HANDLE.get(segment, offset);
    }

    /** Plain store: no ordering. */
    public void putLong(long offset, long value) {
        putLong(segment, offset, value);
    }

    public static void putLong(MemorySegment segment, long offset, long value) {
        LONG_HANDLE.set(segment, offset, value);
    }

    /** Opaque load (C++ relaxed): atomic and coherent, no ordering with other locations. */
    public long getLongOpaque(long offset) {
        return getLongOpaque(segment, offset);
    }

    public static long getLongOpaque(MemorySegment segment, long offset) {
        return (long) LONG_HANDLE.getOpaque(segment, offset);
    }

    /** Opaque store (C++ relaxed). */
    public void putLongOpaque(long offset, long value) {
        putLongOpaque(segment, offset, value);
    }

    public static void putLongOpaque(MemorySegment segment, long offset, long value) {
        LONG_HANDLE.setOpaque(segment, offset, value);
    }

    /** Acquire load: later loads and stores stay after it. */
    public long getLongAcquire(long offset) {
        return getLongAcquire(segment, offset);
    }

    public static long getLongAcquire(MemorySegment segment, long offset) {
        return (long) LONG_HANDLE.getAcquire(segment, offset);
    }

    /** Release store (Agrona's "ordered"): earlier loads and stores stay before it. */
    public void putLongRelease(long offset, long value) {
        putLongRelease(segment, offset, value);
    }

    public static void putLongRelease(MemorySegment segment, long offset, long value) {
        LONG_HANDLE.setRelease(segment, offset, value);
    }

    /** Volatile (sequentially consistent) load. */
    public long getLongVolatile(long offset) {
        return getLongVolatile(segment, offset);
    }

    public static long getLongVolatile(MemorySegment segment, long offset) {
        return (long) LONG_HANDLE.getVolatile(segment, offset);
    }

    /** Volatile (sequentially consistent) store. */
    public void putLongVolatile(long offset, long value) {
        putLongVolatile(segment, offset, value);
    }

    public static void putLongVolatile(MemorySegment segment, long offset, long value) {
        LONG_HANDLE.setVolatile(segment, offset, value);
    }

    /** Sequentially consistent compare-and-set. */
    public boolean compareAndSetLong(long offset, long expected, long value) {
        return compareAndSetLong(segment, offset, expected, value);
    }

    public static boolean compareAndSetLong(MemorySegment segment, long offset, long expected, long value) {
        return LONG_HANDLE.compareAndSet(segment, offset, expected, value);
    }

    /** Sequentially consistent compare-and-exchange: returns the value found. */
    public long compareAndExchangeLong(long offset, long expected, long value) {
        return compareAndExchangeLong(segment, offset, expected, value);
    }

    public static long compareAndExchangeLong(MemorySegment segment, long offset, long expected, long value) {
        return (long) LONG_HANDLE.compareAndExchange(segment, offset, expected, value);
    }

    /** Sequentially consistent get-and-add. */
    public long getAndAddLong(long offset, long delta) {
        return getAndAddLong(segment, offset, delta);
    }

    public static long getAndAddLong(MemorySegment segment, long offset, long delta) {
        return (long) LONG_HANDLE.getAndAdd(segment, offset, delta);
    }

    /** Release get-and-add (C++ fetch_add with memory_order_release). */
    public long getAndAddLongRelease(long offset, long delta) {
        return getAndAddLongRelease(segment, offset, delta);
    }

    public static long getAndAddLongRelease(MemorySegment segment, long offset, long delta) {
        return (long) LONG_HANDLE.getAndAddRelease(segment, offset, delta);
    }

    /** Sequentially consistent get-and-set (exchange). */
    public long getAndSetLong(long offset, long value) {
        return getAndSetLong(segment, offset, value);
    }

    public static long getAndSetLong(MemorySegment segment, long offset, long value) {
        return (long) LONG_HANDLE.getAndSet(segment, offset, value);
    }

    /** Acquire get-and-set (C++ exchange with memory_order_acquire). */
    public long getAndSetLongAcquire(long offset, long value) {
        return getAndSetLongAcquire(segment, offset, value);
    }

    public static long getAndSetLongAcquire(MemorySegment segment, long offset, long value) {
        return (long) LONG_HANDLE.getAndSetAcquire(segment, offset, value);
    }
}
