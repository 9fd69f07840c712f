package dev.ffmtrace.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Os.pread and Os.readFile: positional reads of files and of a process's memory through /proc/PID/mem. */
class OsReadTest {
    @TempDir
    Path dir;

    @Test
    void preadReadsAtAnOffsetAndZeroAtTheEnd() throws IOException {
        byte[] bytes = new byte[10_000];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) (i * 7);
        }
        Path file = Files.write(dir.resolve("f"), bytes);
        int fd = Os.openReadOnly(file);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment into = arena.allocate(100);
            assertEquals(100, Os.pread(fd, into, 5_000));
            assertArrayEquals(Arrays.copyOfRange(bytes, 5_000, 5_100), into.toArray(ValueLayout.JAVA_BYTE));
            assertEquals(40, Os.pread(fd, into, 9_960), "cut at the end of the file");
            assertEquals(0, Os.pread(fd, into, 10_000));
            // The fd's position never moved: a read from 0 starts the file.
            assertEquals(100, Os.pread(fd, into, 0));
            assertEquals(bytes[99], into.get(ValueLayout.JAVA_BYTE, 99));
            assertThrows(IllegalArgumentException.class, () -> Os.pread(fd, MemorySegment.ofArray(new byte[8]), 0));
            assertThrows(IllegalArgumentException.class, () -> Os.pread(fd, into, -1));
        } finally {
            Os.closeFd(fd);
        }
    }

    @Test
    void readFileReadsAWholeFileAgainFromTheStartAndCutsAtTheBound() throws IOException {
        byte[] bytes = new byte[200_000];
        Arrays.fill(bytes, (byte) 'x');
        bytes[199_999] = 'y';
        int fd = Os.openReadOnly(Files.write(dir.resolve("big"), bytes));
        try {
            assertArrayEquals(bytes, Os.readFile(fd, 1 << 20));
            assertArrayEquals(bytes, Os.readFile(fd, 1 << 20), "read again from offset 0");
            assertArrayEquals(Arrays.copyOf(bytes, 70_000), Os.readFile(fd, 70_000));
            assertEquals(0, Os.readFile(fd, 0).length);
        } finally {
            Os.closeFd(fd);
        }
        int closed = Os.openReadOnly(dir.resolve("big"));
        Os.closeFd(closed);
        NativeException e = assertThrows(NativeException.class, () -> Os.readFile(closed, 100));
        assertEquals("EBADF", e.errnoName());
    }

    @Test
    void readFileReadsProcMapsWhoseSizeStatDoesNotKnow() {
        int fd = Os.openReadOnly(Path.of("/proc/self/maps"));
        try {
            String maps = new String(Os.readFile(fd, 16 << 20), StandardCharsets.US_ASCII);
            assertTrue(maps.contains("[stack]"), maps);
            assertTrue(maps.endsWith("\n"));
        } finally {
            Os.closeFd(fd);
        }
    }

    @Test
    void preadOfProcMemReadsMemoryAndFailsWithEioWhereNothingIsMapped() {
        int fd = Os.openReadOnly(Path.of("/proc/self/mem"));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment secret = arena.allocate(64, 8);
            secret.set(ValueLayout.JAVA_LONG, 8, 0x0123_4567_89ab_cdefL);
            MemorySegment into = arena.allocate(16, 8);
            assertEquals(16, Os.pread(fd, into, secret.address()));
            assertEquals(0x0123_4567_89ab_cdefL, into.get(ValueLayout.JAVA_LONG, 8));
            // Page 0 is never mapped.
            assertEquals(-Os.EIO, Os.pread(fd, into, 0));
        } finally {
            Os.closeFd(fd);
        }
    }
}
