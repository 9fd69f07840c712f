package dev.ffmtrace.heapprofd.service;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.constraints.StringLength;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

/** A JVM's perf map: HotSpot's lines, the lookup, the frames it names and those it leaves, and garbage. */
class PerfMapTest {
    private static PerfMap parse(String text) {
        return PerfMap.parse(text.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void hotSpotsLinesNameTheCodeTheyCover() {
        // Lines as JDK 25's -XX:+DumpPerfMapAtExit writes them, out of address order as it does.
        PerfMap map = parse("""
                0x00007f80bfece500 0x0000000000000158 long jdk.internal.misc.Unsafe.allocateMemory0(long)
                0x00007f80b841a880 0x00000000000011b8 long Alloc.allocateNative(int)
                0x00007f80bf93fd60 0x00000000000194c8 Interpreter
                7f80b8400000 80 I2C/C2I adapters
                """);
        assertEquals(4, map.size());
        assertEquals(0, map.skipped());
        assertEquals("long Alloc.allocateNative(int)", map.nameAt(0x00007f80b841a880L));
        assertEquals("long Alloc.allocateNative(int)", map.nameAt(0x00007f80b841a880L + 0x11b7));
        assertNull(map.nameAt(0x00007f80b841a880L + 0x11b8), "the end is not in the code");
        assertEquals("Interpreter", map.nameAt(0x00007f80bf950000L));
        assertEquals("I2C/C2I adapters", map.nameAt(0x7f80b840007fL), "without 0x, as perf-map-agent writes");
        assertNull(map.nameAt(0x7f80b8400080L));
        assertNull(map.nameAt(0x1000));
        assertNull(map.nameAt(-1L), "addresses compare unsigned");
    }

    @Test
    void framesInAnonymousMemoryAreNamedAndOthersLeftAsTheyAre() {
        PerfMap map = parse("7f0000001000 100 void Main.run()\n");
        Frame.Module codeCache = new Frame.Module("", null, 0x7f0000000000L, 0x7f0000010000L, 0, 0);
        Frame jit = new Frame("[anon]+0x1010", codeCache, 0x1010);
        assertEquals(new Frame("void Main.run()", codeCache, 0x1010), map.named(jit));
        Frame.Module memfd = new Frame.Module("/memfd:jit (deleted)", null, 0x7f0000001000L, 0x7f0000002000L, 0, 0);
        assertEquals("void Main.run()", map.named(new Frame("memfd:jit+0x10", memfd, 0x10)).name(),
                "a deleted memfd is in no file on disk either");

        Frame unmapped = new Frame("[anon]+0x5000", codeCache, 0x5000);
        assertSame(unmapped, map.named(unmapped), "a pc the map does not cover keeps its address");
        Frame.Module library = new Frame.Module("/usr/lib/libc.so.6", "ab", 0x7f0000001000L, 0x7f0000002000L, 0, 0);
        Frame inLibrary = new Frame("malloc", library, 0x10);
        assertSame(inLibrary, map.named(inLibrary), "a file's frames are its symbols'");
        Frame java = Frame.java("Main.run");
        assertSame(java, map.named(java));
        assertSame(jit, PerfMap.EMPTY.named(jit));
    }

    @Test
    void linesThatAreNotEntriesOrOverlapAreSkippedAndCounted() {
        PerfMap map = parse("""
                2000 1000 b
                1000 1000 a
                2800 100 overlaps-b
                x000 10 not-hex
                10000000000000000 10 seventeen-digits
                4000 0 empty
                4000 10
                5000 10\s\s
                ffffffffffffff00 200 wraps
                6000
                7000 10 c\r

                8000 10 d
                """);
        assertEquals(4, map.size(), "a, b, c and d");
        assertEquals(8, map.skipped());
        assertEquals("c", map.nameAt(0x7005), "a carriage return ends the name");
        assertEquals("d", map.nameAt(0x8000));
    }

    @Test
    void aLineLongerThanTheBoundIsSkipped() {
        String longName = "m".repeat(PerfMap.MAX_LINE_BYTES);
        PerfMap map = parse("1000 10 " + longName + "\n2000 10 short\n");
        assertEquals(1, map.size());
        assertEquals(1, map.skipped());
        assertNull(map.nameAt(0x1000));
    }

    @Property(tries = 1000)
    void garbageNeverThrows(@ForAll @Size(max = 400) byte[] garbage, @ForAll long pc) {
        PerfMap map = PerfMap.parse(garbage);
        map.nameAt(pc);
        map.named(new Frame("[anon]+0x0", new Frame.Module("", null, pc, pc + 1, 0, 0), 0));
    }

    @Property(tries = 300)
    void everyEntryIsFoundAtItsFirstAndLastByteAmongLinesInAnyOrder(
            @ForAll @Size(max = 40) List<@IntRange(min = 1, max = 5000) Integer> sizes,
            @ForAll @Size(max = 20) List<@StringLength(max = 30) String> garbage, @ForAll Random random) {
        List<String> lines = new ArrayList<>();
        long[] starts = new long[sizes.size()];
        long at = 0x7f0000000000L;
        for (int i = 0; i < sizes.size(); i++) {
            starts[i] = at;
            lines.add(Long.toHexString(at) + " " + Integer.toHexString(sizes.get(i)) + " method " + i);
            // Code after code, or after a gap.
            at += sizes.get(i) + (i % 3 == 0 ? 0 : 64);
        }
        // Garbage that is no entry: a line that starts with a letter past f.
        garbage.forEach(line -> lines.add("g" + line.replace('\n', ' ')));
        Collections.shuffle(lines, random);
        PerfMap map = parse(String.join("\n", lines));
        assertEquals(sizes.size(), map.size());
        assertEquals(garbage.size(), map.skipped());
        for (int i = 0; i < sizes.size(); i++) {
            assertEquals("method " + i, map.nameAt(starts[i]));
            assertEquals("method " + i, map.nameAt(starts[i] + sizes.get(i) - 1));
            String after = map.nameAt(starts[i] + sizes.get(i));
            assertEquals(i % 3 == 0 && i + 1 < sizes.size() ? "method " + (i + 1) : null, after);
        }
    }
}
