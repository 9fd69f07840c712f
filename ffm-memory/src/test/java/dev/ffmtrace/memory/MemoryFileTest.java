package dev.ffmtrace.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.internal.Native;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

class MemoryFileTest {
    @Test
    void createdMemfdIsSizedAndSealedAgainstResize() {
        try (MemoryFile file = MemoryFile.create("sealed", 8192)) {
            assertEquals(MemoryFile.Backing.MEMFD, file.backing());
            assertEquals(8192, Native.fstat(file.fd()).size());
            assertEquals(Native.F_SEAL_SHRINK | Native.F_SEAL_GROW | Native.F_SEAL_SEAL, file.seals());
            assertTrue(file.isSealedAgainstResize());
        }
    }

    @Test
    void sealedMemfdRefusesShrinkGrowAndNewSeals() {
        try (MemoryFile file = MemoryFile.create("sealed", 8192)) {
            NativeException shrink = assertThrows(NativeException.class, () -> Native.ftruncate(file.fd(), 4096));
            assertEquals("EPERM", shrink.errnoName());
            assertEquals("ftruncate(" + file.fd() + ", 4096) failed: EPERM (Operation not permitted)", shrink.getMessage());
            NativeException grow = assertThrows(NativeException.class, () -> Native.ftruncate(file.fd(), 16384));
            assertEquals(Native.EPERM, grow.errno());
            NativeException seal = assertThrows(NativeException.class,
                    () -> Native.fcntl(file.fd(), Native.F_ADD_SEALS, Native.F_SEAL_WRITE));
            assertEquals(Native.EPERM, seal.errno());
            assertEquals(8192, Native.fstat(file.fd()).size());
        }
    }

    @Test
    void devShmFallbackIsUnlinkedAndUnsealed() throws Exception {
        String name = "ffmtrace-fallback-" + System.nanoTime();
        try (MemoryFile file = MemoryFile.create(name, 4096, MemoryFile.Backing.DEV_SHM)) {
            assertEquals(MemoryFile.Backing.DEV_SHM, file.backing());
            assertEquals(4096, Native.fstat(file.fd()).size());
            assertFalse(file.isSealedAgainstResize());
            try (Stream<Path> shm = Files.list(Path.of("/dev/shm"))) {
                assertTrue(shm.noneMatch(p -> p.getFileName().toString().startsWith(name)), "file must be unlinked");
            }
        }
    }

    @Test
    void badSizesAndNamesAreRejectedClearly() {
        assertEquals("shared memory size must be positive, got 0",
                assertThrows(IllegalArgumentException.class, () -> MemoryFile.create("x", 0)).getMessage());
        assertEquals("shared memory size must be positive, got -4096",
                assertThrows(IllegalArgumentException.class, () -> MemoryFile.create("x", -4096)).getMessage());
        assertEquals("shared memory needs a name",
                assertThrows(IllegalArgumentException.class, () -> MemoryFile.create("", 4096)).getMessage());
        assertEquals("shared memory name contains a NUL byte: a?b",
                assertThrows(IllegalArgumentException.class, () -> MemoryFile.create("a\0b", 4096)).getMessage());
        assertEquals("shared memory name is longer than 249 bytes",
                assertThrows(IllegalArgumentException.class, () -> MemoryFile.create("n".repeat(250), 4096)).getMessage());
    }

    @Test
    void attachChecksSizeAndClosesTheFdItWasGiven() {
        try (MemoryFile owner = MemoryFile.create("attach", 4096)) {
            int copy = Native.fcntl(owner.fd(), 1030 /* F_DUPFD_CLOEXEC */, 0);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> MemoryFile.attach(copy, 8192, Seals.REQUIRED));
            assertEquals("fd " + copy + " is 4096 bytes, expected 8192", e.getMessage());
            NativeException closed = assertThrows(NativeException.class, () -> Native.fstat(copy));
            assertEquals("EBADF", closed.errnoName());
        }
    }

    @Test
    void aFileIsTheSameAsItsOtherDescriptorsAndNoOtherFile() {
        try (MemoryFile first = MemoryFile.create("same", 4096);
             MemoryFile again = MemoryFile.attach(MemoryFile.duplicate(first.fd()));
             MemoryFile reopened = MemoryFile.open(Path.of("/proc/self/fd/" + first.fd()), Seals.NOT_REQUIRED);
             MemoryFile other = MemoryFile.create("same", 4096)) {
            assertTrue(first.isSameFileAs(again));
            assertTrue(reopened.isSameFileAs(first));
            assertFalse(first.isSameFileAs(other));
            assertFalse(other.isSameFileAs(again));
        }
    }

    @Test
    void attachRefusesAClosedFd() {
        int fd;
        try (MemoryFile file = MemoryFile.create("closed", 4096)) {
            fd = file.fd();
        }
        NativeException e = assertThrows(NativeException.class, () -> MemoryFile.attach(fd, 4096, Seals.NOT_REQUIRED));
        assertEquals("fstat(" + fd + ") failed: EBADF (Bad file descriptor)", e.getMessage());
    }

    @Test
    void attachRefusesAnFdOfTheWrongKind() {
        int socket = Native.socket(Native.AF_UNIX, Native.SOCK_STREAM | Native.SOCK_CLOEXEC, 0);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> MemoryFile.attach(socket, 4096, Seals.NOT_REQUIRED));
        assertEquals("fd " + socket + " is not a shared memory file (st_mode 0140777)", e.getMessage());
        assertThrows(NativeException.class, () -> Native.fstat(socket), "the refused fd is closed");
        assertEquals("not a file descriptor: -1",
                assertThrows(IllegalArgumentException.class, () -> MemoryFile.attach(-1, 4096, Seals.NOT_REQUIRED)).getMessage());
    }

    @Test
    void attachCanRequireResizeSeals() {
        try (MemoryFile unsealed = MemoryFile.create("unsealed", 4096, MemoryFile.Backing.DEV_SHM)) {
            int copy = Native.fcntl(unsealed.fd(), 1030, 0);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> MemoryFile.attach(copy, 4096, Seals.REQUIRED));
            assertTrue(e.getMessage().startsWith("fd " + copy + " is not sealed against shrinking and growing"), e.getMessage());
            int again = Native.fcntl(unsealed.fd(), 1030, 0);
            try (MemoryFile attached = MemoryFile.attach(again, 4096, Seals.NOT_REQUIRED)) {
                assertEquals(4096, attached.size());
            }
        }
    }

    @Test
    void closesExactlyOnce() {
        MemoryFile file = MemoryFile.create("once", 4096);
        int fd = file.fd();
        file.close();
        file.close();
        assertTrue(file.isClosed());
        assertEquals("memory file (fd " + fd + ") is closed",
                assertThrows(IllegalStateException.class, file::fd).getMessage());
    }
}
