package dev.ffmtrace.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ffmtrace.memory.internal.Native;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

class RingMappingTest {
    private static final long PAGE = Native.pageSize();

    @Test
    void bytesWrittenAcrossTheEndAppearAtTheStart() {
        try (RingMapping mapping = RingMapping.map(MemoryFile.create("ring", PAGE + 2 * PAGE), PAGE, 16 * PAGE)) {
            MemorySegment ring = mapping.ring();
            long size = mapping.ringSize();
            assertEquals(2 * PAGE, size);
            assertEquals(2 * size, ring.byteSize());
            byte[] record = new byte[100];
            for (int i = 0; i < record.length; i++) {
                record[i] = (byte) (i + 1);
            }
            long start = size - 40;
            MemorySegment.copy(record, 0, ring, Layouts.BYTE, start, record.length);
            for (int i = 0; i < 60; i++) {
                assertEquals(record[40 + i], ring.get(Layouts.BYTE, i), "byte " + i + " wrapped to the start");
            }
            for (int i = 0; i < 40; i++) {
                assertEquals(record[i], ring.get(Layouts.BYTE, size - 40 + i));
            }
        }
    }

    @Test
    void headerIsTheFilesFirstPageAndRingFollowsIt() {
        MemoryFile file = MemoryFile.create("ring-header", 2 * PAGE);
        int copy = Native.fcntl(file.fd(), 1030 /* F_DUPFD_CLOEXEC */, 0);
        try (RingMapping mapping = RingMapping.map(file, PAGE, 0);
             SharedMemory flat = SharedMemory.attach(copy, 2 * PAGE, Seals.REQUIRED)) {
            mapping.header().set(Layouts.LONG, 8, 77);
            mapping.ring().set(Layouts.LONG, PAGE + 16, 99);
            assertEquals(77, flat.segment().get(Layouts.LONG, 8));
            assertEquals(99, flat.segment().get(Layouts.LONG, PAGE + 16));
        }
    }

    @Test
    void sizesMustBePageMultiples() {
        assertEquals("ring header size 100 is not a multiple of the page size " + PAGE,
                assertThrows(IllegalArgumentException.class,
                        () -> RingMapping.map(MemoryFile.create("r", 2 * PAGE), 100, 0)).getMessage());
        assertEquals("ring size " + (PAGE + 100) + " (file " + (2 * PAGE + 100) + " bytes minus header " + PAGE
                        + ") is not a positive multiple of the page size " + PAGE,
                assertThrows(IllegalArgumentException.class,
                        () -> RingMapping.map(MemoryFile.create("r", 2 * PAGE + 100), PAGE, 0)).getMessage());
        assertEquals("guard size 5 is not a multiple of the page size " + PAGE,
                assertThrows(IllegalArgumentException.class,
                        () -> RingMapping.map(MemoryFile.create("r", 2 * PAGE), PAGE, 5)).getMessage());
    }

    @Test
    void refusedFileIsClosed() {
        MemoryFile file = MemoryFile.create("r", PAGE);
        assertThrows(IllegalArgumentException.class, () -> RingMapping.map(file, PAGE, 0));
        assertEquals(true, file.isClosed());
    }
}
