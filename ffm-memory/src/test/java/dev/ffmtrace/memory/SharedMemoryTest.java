package dev.ffmtrace.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.internal.Native;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

class SharedMemoryTest {
    @Test
    void twoMappingsOfOneFileSeeTheSameBytes() {
        try (SharedMemory first = SharedMemory.create("two-views", 4096)) {
            int copy = Native.fcntl(first.fd(), 1030 /* F_DUPFD_CLOEXEC */, 0);
            try (SharedMemory second = SharedMemory.attach(copy, 4096, Seals.REQUIRED)) {
                first.segment().set(Layouts.LONG_UNALIGNED, 100, 0x1122334455667788L);
                assertEquals(0x1122334455667788L, second.segment().get(Layouts.LONG_UNALIGNED, 100));
                assertEquals((byte) 0x88, second.segment().get(Layouts.BYTE, 100), "little-endian");
            }
        }
    }

    @Test
    void segmentIsPageAlignedAndUsableForAtomics() {
        try (SharedMemory memory = SharedMemory.create("aligned", 8192)) {
            assertEquals(0, memory.segment().address() % Native.pageSize());
            AtomicSegment atomics = new AtomicSegment(memory.segment());
            assertTrue(atomics.compareAndSetLong(8, 0, 42));
            assertEquals(42, memory.segment().get(Layouts.LONG, 8));
        }
    }

    @Test
    void closedMemoryGivesAClearError() {
        SharedMemory memory = SharedMemory.create("closed", 4096);
        MemorySegment segment = memory.segment();
        int fd = memory.fd();
        memory.close();
        memory.close();
        assertEquals("shared memory (fd " + fd + ") is closed",
                assertThrows(IllegalStateException.class, memory::segment).getMessage());
        assertThrows(IllegalStateException.class, () -> segment.get(Layouts.BYTE, 0),
                "a segment kept past close is dead, not dangling");
        assertThrows(NativeException.class, () -> Native.fstat(fd), "the fd is closed");
    }
}
