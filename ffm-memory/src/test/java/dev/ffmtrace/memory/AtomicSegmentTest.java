package dev.ffmtrace.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

class AtomicSegmentTest {
    @Test
    void heapByteArraysAndOddAddressesAreRejectedOnce() {
        IllegalArgumentException heap = assertThrows(IllegalArgumentException.class,
                () -> new AtomicSegment(MemorySegment.ofArray(new byte[64])));
        assertEquals("atomics need a segment aligned to 8 bytes; this one allows 1 (a heap segment: use native memory)",
                heap.getMessage());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment odd = arena.allocate(64, 8).asSlice(4);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new AtomicSegment(odd));
            assertTrue(e.getMessage().startsWith("atomics need a segment aligned to 8 bytes; this one allows 4 (native address 0x"),
                    e.getMessage());
        }
    }

    @Test
    void intAndLongReadModifyWrites() {
        try (Arena arena = Arena.ofConfined()) {
            AtomicSegment a = new AtomicSegment(arena.allocate(64, 8));
            a.putIntRelease(4, 10);
            assertEquals(10, a.getIntAcquire(4));
            assertFalse(a.compareAndSetInt(4, 11, 12));
            assertTrue(a.compareAndSetInt(4, 10, 12));
            assertEquals(12, a.compareAndExchangeInt(4, 0, 5));
            assertEquals(12, a.getAndAddInt(4, 3));
            assertEquals(15, a.getAndAddIntRelease(4, 1));
            assertEquals(16, a.getAndSetIntAcquire(4, -1));
            assertEquals(-1, a.getIntVolatile(4));
            assertEquals(0, a.getInt(0), "the neighbour is untouched");

            a.putLongVolatile(8, Long.MAX_VALUE);
            assertEquals(Long.MAX_VALUE, a.getAndAddLong(8, 1));
            assertEquals(Long.MIN_VALUE, a.getLongOpaque(8));
            assertTrue(a.compareAndSetLong(8, Long.MIN_VALUE, 7));
            assertEquals(7, a.getAndSetLong(8, 8));
            assertEquals(8, a.getLong(8));
            assertEquals((byte) 8, a.segment().get(Layouts.BYTE, 8), "little-endian");
        }
    }

    @Test
    void theStaticFormsWorkOnTheSegmentTheyAreGiven() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment memory = arena.allocate(32, 8);
            AtomicSegment a = new AtomicSegment(memory);
            AtomicSegment.putLongRelease(memory, 16, 40);
            assertEquals(40, a.getLongAcquire(16), "the same bytes as the instance form");
            assertEquals(40, AtomicSegment.getAndAddLong(memory, 16, 2));
            assertEquals(42, AtomicSegment.compareAndExchangeLong(memory, 16, 42, 1));
            assertEquals(1, a.getLong(16));
            assertEquals(0, AtomicSegment.getAndSetByte(memory, 3, (byte) 9));
            assertEquals(9 << 24, a.getInt(0), "byte 3 of a little-endian int");
            assertThrows(IllegalArgumentException.class, () -> AtomicSegment.getLongVolatile(memory, 4),
                    "no alignment check up front, but the JDK still refuses a misaligned atomic");
            assertThrows(IndexOutOfBoundsException.class, () -> AtomicSegment.putIntOpaque(memory, 32, 1));
        }
    }

    @Test
    void byteReadModifyWritesTouchOnlyTheirByteAtEveryOffset() {
        try (Arena arena = Arena.ofConfined()) {
            AtomicSegment a = new AtomicSegment(arena.allocate(16, 8));
            for (int offset = 0; offset < 8; offset++) {
                a.putLong(0, 0x0101010101010101L);
                assertFalse(a.compareAndSetByte(offset, (byte) 0, (byte) 0x7f));
                assertTrue(a.compareAndSetByte(offset, (byte) 1, (byte) 0xfe));
                assertEquals((byte) 0xfe, a.getByteAcquire(offset));
                assertEquals((byte) 0xfe, a.getAndSetByte(offset, (byte) 0x80));
                assertEquals((byte) 0x80, a.getAndAddByte(offset, (byte) 0x7f));
                assertEquals((byte) 0xff, a.getAndAddByte(offset, (byte) 1), "wraps at 8 bits");
                assertEquals((byte) 0, a.getByteVolatile(offset));
                long expected = 0x0101010101010101L & ~(0xffL << (8 * offset));
                assertEquals(expected, a.getLong(0), "only byte " + offset + " changed");
            }
        }
    }

    @Test
    void shortReadModifyWritesTouchOnlyTheirHalfword() {
        try (Arena arena = Arena.ofConfined()) {
            AtomicSegment a = new AtomicSegment(arena.allocate(16, 8));
            for (int offset = 0; offset < 8; offset += 2) {
                a.putLong(0, 0x1111111111111111L);
                assertTrue(a.compareAndSetShort(offset, (short) 0x1111, (short) 0xffff));
                assertEquals((short) 0xffff, a.getAndAddShort(offset, (short) 2));
                assertEquals((short) 1, a.getAndSetShort(offset, (short) 0x2222));
                a.putShortRelease(offset, (short) 0x3333);
                assertEquals((short) 0x3333, a.getShortOpaque(offset));
                long expected = (0x1111111111111111L & ~(0xffffL << (8 * offset))) | (0x3333L << (8 * offset));
                assertEquals(expected, a.getLong(0));
            }
        }
    }

    @Test
    void misalignedOffsetsAreRefusedByTheAccess() {
        try (Arena arena = Arena.ofConfined()) {
            AtomicSegment a = new AtomicSegment(arena.allocate(16, 8));
            assertThrows(IllegalArgumentException.class, () -> a.getIntVolatile(2));
            assertThrows(IllegalArgumentException.class, () -> a.compareAndSetLong(4, 0, 1));
            assertThrows(IndexOutOfBoundsException.class, () -> a.getLongAcquire(16));
        }
    }
}
