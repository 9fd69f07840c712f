package dev.ffmtrace.heapprofd.service;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The parser of /proc/PID/maps: real lines, this process's own maps, and garbage. */
class MappingsTest {
    private static Mappings parse(String text) {
        return Mappings.parse(text.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void linesBecomeMappingsFoundByAddress() {
        Mappings mappings = parse("""
                55d0c4a00000-55d0c4a01000 r--p 00000000 08:01 1311 /usr/bin/my program
                55d0c4a01000-55d0c4a02000 r-xp 00001000 08:01 1311 /usr/bin/my program
                7f1e2c000000-7f1e2c021000 rw-p 00000000 00:00 0
                7f1e2d028000-7f1e2d1bd000 r-xp 00028000 fe:01 98765                      /usr/lib/x86_64-linux-gnu/libc.so.6
                7f1e2d400000-7f1e2d401000 r-xp 00000000 00:01 2222 /memfd:jit (deleted)
                7ffc8e1e0000-7ffc8e201000 rw-p 00000000 00:00 0                          [stack]
                """);
        assertEquals(6, mappings.size());
        assertEquals(0, mappings.skipped());
        Mappings.Mapping text = mappings.find(0x55d0c4a01234L);
        assertEquals(0x55d0c4a01000L, text.start());
        assertEquals(0x1000, text.offset());
        assertTrue(text.executable() && text.readable());
        assertEquals("/usr/bin/my program", text.path(), "a path may hold spaces");
        assertEquals("my program", text.name());
        assertEquals(1311, text.inode());
        assertTrue(text.isFile());

        Mappings.Mapping libc = mappings.find(0x7f1e2d1bcfffL);
        assertEquals("libc.so.6", libc.name());
        assertEquals(0x28000, libc.offset());
        assertNull(mappings.find(0x7f1e2d1bd000L), "the end is not in the mapping");
        assertNull(mappings.find(0x1000));
        assertNull(mappings.find(-1L), "addresses compare unsigned");

        Mappings.Mapping anonymous = mappings.find(0x7f1e2c000000L);
        assertFalse(anonymous.executable());
        assertEquals("[anon]", anonymous.name());
        assertFalse(anonymous.isFile());
        Mappings.Mapping deleted = mappings.find(0x7f1e2d400010L);
        assertEquals("memfd:jit", deleted.name());
        assertFalse(deleted.isFile(), "a deleted file is not the one that was mapped");
        assertEquals("[stack]", mappings.find(0x7ffc8e200ff8L).name());
    }

    @Test
    void linesThatAreNotMappingsOrOverlapAreSkippedAndCounted() {
        Mappings mappings = parse("""
                2000-3000 r-xp 00000000 08:01 1 /b
                1000-2000 r-xp 00000000 08:01 1 /a
                2800-2900 r-xp 00000000 08:01 1 /overlaps-b
                3000-2000 r-xp 00000000 08:01 1 /ends-before-it-starts
                x000-4000 r-xp 00000000 08:01 1 /not-hex
                10000000000000000-10000000000000001 r-xp 00000000 08:01 1 /seventeen-digits
                5000-6000 r-xp
                6000-7000 r-xp 00000000 08:01 /no-inode

                7000-8000 r-xp 00000000 08:01 1 /c
                """);
        assertEquals(3, mappings.size(), "sorted by address: /a, /b, /c");
        assertEquals(7, mappings.skipped());
        assertEquals("/a", mappings.find(0x1fff).path());
        assertEquals("/b", mappings.find(0x2800).path());
        assertEquals("/c", mappings.find(0x7000).path());
    }

    @Test
    void thisProcesssOwnMapsHoldItsMemoryAndLibc() throws IOException {
        Mappings mappings = Mappings.parse(Files.readAllBytes(Path.of("/proc/self/maps")));
        assertEquals(0, mappings.skipped());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment segment = arena.allocate(100);
            Mappings.Mapping heap = mappings.find(segment.address());
            assertNotNull(heap);
            assertTrue(heap.readable());
        }
        long malloc = Linker.nativeLinker().defaultLookup().find("malloc").orElseThrow().address();
        Mappings.Mapping libc = mappings.find(malloc);
        assertTrue(libc.executable());
        assertTrue(libc.name().startsWith("libc"), libc.name());
    }

    @Property(tries = 1000)
    void garbageNeverThrows(@ForAll @Size(max = 400) byte[] garbage) {
        Mappings mappings = Mappings.parse(garbage);
        assertTrue(mappings.size() + mappings.skipped() <= garbage.length + 1);
        mappings.find(0x1000);
    }
}
