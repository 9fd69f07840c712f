package dev.ffmtrace.heapprofd.service;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A JVM's perf map, the format {@code perf} reads to name JIT-compiled code: one line per
 * piece of code, {@code START SIZE NAME}, START and SIZE in hexadecimal (with or without
 * {@code 0x}), as HotSpot writes {@code /tmp/perf-PID.map} at exit
 * ({@code -XX:+DumpPerfMapAtExit}) or when asked ({@code jcmd PID Compiler.perfmap}).
 * Compiled methods are named by their signature, interpreter and stubs as HotSpot names
 * them ({@code Interpreter}, {@code I2C/C2I adapters}). The file is the profiled process's,
 * so untrusted: a line that does not parse, one longer than {@value #MAX_LINE_BYTES} bytes,
 * one past {@value #MAX_ENTRIES}, and one whose code overlaps the code before it (a map
 * appended to after the JIT reused some code space) are skipped and counted, never
 * thrown. Names are decoded when a pc is looked up, not at the parse. Immutable.
 */
final class PerfMap {
    /** More compiled methods than a large application's code cache holds at once. */
    static final int MAX_ENTRIES = 1 << 20;
    /** Longer than any method signature a JVM accepts to name. */
    static final int MAX_LINE_BYTES = 8192;

    static final PerfMap EMPTY = new PerfMap(new byte[0], new long[0], new long[0], new int[0], new int[0], 0);

    private final byte[] text;
    private final long[] starts;
    private final long[] ends;
    private final int[] nameFrom;
    private final int[] nameTo;
    private final int skipped;

    private PerfMap(byte[] text, long[] starts, long[] ends, int[] nameFrom, int[] nameTo, int skipped) {
        this.text = text;
        this.starts = starts;
        this.ends = ends;
        this.nameFrom = nameFrom;
        this.nameTo = nameTo;
        this.skipped = skipped;
    }

    private record Entry(long start, long end, int nameFrom, int nameTo) {
    }

    /** Parses a perf map's text, which the map keeps: the caller must not change it. */
    static PerfMap parse(byte[] text) {
        List<Entry> parsed = new ArrayList<>();
        int skipped = 0;
        int at = 0;
        while (at < text.length) {
            int end = at;
            while (end < text.length && text[end] != '\n') {
                end++;
            }
            Entry entry = end - at > MAX_LINE_BYTES ? null : parseLine(text, at, end);
            if (entry != null && parsed.size() < MAX_ENTRIES) {
                parsed.add(entry);
            } else if (end > at) {
                skipped++;
            }
            at = end + 1;
        }
        parsed.sort((x, y) -> Long.compareUnsigned(x.start(), y.start()));
        long[] starts = new long[parsed.size()];
        long[] ends = new long[parsed.size()];
        int[] nameFrom = new int[parsed.size()];
        int[] nameTo = new int[parsed.size()];
        int kept = 0;
        for (Entry entry : parsed) {
            if (kept > 0 && Long.compareUnsigned(entry.start(), ends[kept - 1]) < 0) {
                skipped++;
                continue;
            }
            starts[kept] = entry.start();
            ends[kept] = entry.end();
            nameFrom[kept] = entry.nameFrom();
            nameTo[kept] = entry.nameTo();
            kept++;
        }
        return new PerfMap(text, Arrays.copyOf(starts, kept), Arrays.copyOf(ends, kept),
                Arrays.copyOf(nameFrom, kept), Arrays.copyOf(nameTo, kept), skipped);
    }

    /** The name of the code that holds {@code pc}, or null. */
    String nameAt(long pc) {
        int high = Addresses.lastAtOrBelow(starts, pc);
        if (high < 0 || Long.compareUnsigned(pc, ends[high]) >= 0) {
            return null;
        }
        return new String(text, nameFrom[high], nameTo[high] - nameFrom[high], StandardCharsets.UTF_8);
    }

    /**
     * {@code frame} named by this map if its code is in no file on disk (JIT-compiled code
     * is in anonymous memory, or a deleted memfd) and the map names its pc; otherwise
     * {@code frame} itself.
     */
    Frame named(Frame frame) {
        Frame.Module module = frame.module();
        if (starts.length == 0 || module == Frame.Module.JAVA || module == Frame.Module.UNKNOWN
                || Mappings.isFile(module.path())) {
            return frame;
        }
        // The frame's pc, as the unwinder placed it: its offset in the mapping from the mapping's start.
        String name = nameAt(module.start() + frame.relPc() - module.offset());
        return name == null ? frame : new Frame(name, module, frame.relPc());
    }

    int size() {
        return starts.length;
    }

    /** Lines that were not entries, overlapped another or were past the bound. */
    int skipped() {
        return skipped;
    }

    /** {@code START SIZE NAME}; null if the line is not that, or its code would wrap the address space. */
    private static Entry parseLine(byte[] text, int from, int to) {
        int[] at = {from};
        long start = hex(text, at, to);
        if (start == -1 || !space(text, at, to)) {
            return null;
        }
        long size = hex(text, at, to);
        if (size <= 0 || !space(text, at, to)) {
            return null;
        }
        long end = start + size;
        if (Long.compareUnsigned(end, start) <= 0) {
            return null;
        }
        int nameTo = to;
        while (nameTo > at[0] && (text[nameTo - 1] == '\r' || text[nameTo - 1] == ' ')) {
            nameTo--;
        }
        return nameTo == at[0] ? null : new Entry(start, end, at[0], nameTo);
    }

    /**
     * One to sixteen hex digits, after an optional {@code 0x}, from {@code at[0]}, which is
     * moved past them; -1 if there are none or too many (and for all 64 bits set, which no
     * code starts at).
     */
    private static long hex(byte[] text, int[] at, int to) {
        int i = at[0];
        if (i + 1 < to && text[i] == '0' && (text[i + 1] == 'x' || text[i + 1] == 'X')) {
            i += 2;
        }
        long value = 0;
        int digits = 0;
        while (i < to && text[i] != ' ') {
            int digit = Character.digit(text[i], 16);
            if (digit < 0 || ++digits > 16) {
                return -1;
            }
            value = value << 4 | digit;
            i++;
        }
        at[0] = i;
        return digits == 0 ? -1 : value;
    }

    /** Skips the spaces at {@code at[0]}; false if there are none. */
    private static boolean space(byte[] text, int[] at, int to) {
        int i = at[0];
        while (i < to && text[i] == ' ') {
            i++;
        }
        boolean moved = i > at[0];
        at[0] = i;
        return moved;
    }
}
