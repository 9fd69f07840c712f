package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.memory.testing.CPrograms;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

/** The service's ELF files: read once for every connection, again once rebuilt, never another file's. */
class ElfFilesTest {
    @Test
    void aFileIsReadOnceUntilItChangesInPlace(@TempDir Path dir) throws Exception {
        Path library = dir.resolve("libpattern.so");
        Files.copy(CPrograms.program("heapprofd_pattern"), library);
        long inode = (Long) Files.getAttribute(library, "unix:ino");
        ElfFiles files = new ElfFiles();

        ElfFile first = files.get(library.toString(), inode);
        assertNotNull(first);
        assertSame(first, files.get(library.toString(), inode), "a second process's lookup");

        // Rebuilt in place (the inode kept, as cp over it keeps it): read again.
        Files.write(library, new byte[16], StandardOpenOption.APPEND);
        assertEquals(inode, (long) (Long) Files.getAttribute(library, "unix:ino"));
        ElfFile rebuilt = files.get(library.toString(), inode);
        assertNotNull(rebuilt);
        assertNotSame(first, rebuilt);

        assertNull(files.get(library.toString(), inode + 1), "the file at the path is not the one mapped");
        assertNull(files.get(dir.resolve("gone.so").toString(), inode));
    }
}
