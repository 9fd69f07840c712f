package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.memory.Os;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

/** A process's perf map as the service takes it: read when it changed, refused when it is not the process's own file. */
class JitSymbolsTest {
    private static final int PID = 4242;

    @TempDir
    Path dir;

    private Path map() {
        return dir.resolve("perf-" + PID + ".map");
    }

    @Test
    void theMapIsReadWhenItAppearsAndAgainOnlyWhenItChanged() throws Exception {
        JitSymbols symbols = new JitSymbols(dir, PID, Os.uid());
        assertSame(PerfMap.EMPTY, symbols.current(), "no map yet: frames keep their addresses");

        Files.writeString(map(), "1000 10 void Main.run()\n");
        PerfMap first = symbols.current();
        assertEquals("void Main.run()", first.nameAt(0x1000));
        assertSame(first, symbols.current(), "an unchanged file is not read again");

        Files.writeString(map(), "1000 10 void Main.run()\n2000 10 void Main.stop()\n");
        Files.setLastModifiedTime(map(), FileTime.from(Instant.now().plusSeconds(5)));
        PerfMap second = symbols.current();
        assertNotSame(first, second);
        assertEquals("void Main.stop()", second.nameAt(0x2008));
        assertEquals(0, symbols.refused());
    }

    @Test
    void aLinkAnotherUsersFileADirectoryAndAFileOverTheBoundAreRefusedAndCounted() throws Exception {
        Path elsewhere = Files.writeString(dir.resolve("secret"), "1000 10 secret\n");
        Files.createSymbolicLink(map(), elsewhere);
        JitSymbols symbols = new JitSymbols(dir, PID, Os.uid());
        assertSame(PerfMap.EMPTY, symbols.current(), "a link is not followed");
        assertEquals(1, symbols.refused());
        assertSame(PerfMap.EMPTY, symbols.current());
        assertEquals(1, symbols.refused(), "refused once per change of the file");

        Files.delete(map());
        Files.writeString(map(), "1000 10 void Main.run()\n");
        JitSymbols otherUser = new JitSymbols(dir, PID, Os.uid() + 1);
        assertSame(PerfMap.EMPTY, otherUser.current(), "a file the process's uid does not own is not its map");
        assertEquals(1, otherUser.refused());

        Files.delete(map());
        Files.createDirectory(map());
        JitSymbols directory = new JitSymbols(dir, PID, Os.uid());
        assertSame(PerfMap.EMPTY, directory.current());
        assertEquals(1, directory.refused());

        Files.delete(map());
        try (RandomAccessFile sparse = new RandomAccessFile(map().toFile(), "rw")) {
            sparse.setLength(JitSymbols.MAX_BYTES + 1L);
        }
        JitSymbols huge = new JitSymbols(dir, PID, Os.uid());
        assertSame(PerfMap.EMPTY, huge.current());
        assertEquals(1, huge.refused());
    }
}
