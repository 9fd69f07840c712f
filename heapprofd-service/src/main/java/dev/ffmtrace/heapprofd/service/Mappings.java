package dev.ffmtrace.heapprofd.service;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A process's memory mappings as its {@code /proc/PID/maps} lists them, sorted by address,
 * to find the mapping that holds a pc or a stack address. The text comes through an fd the
 * client sent, so it is untrusted: a line that does not parse, a mapping that overlaps the
 * one before it, or one past {@value #MAX_MAPPINGS} is skipped and counted, never thrown.
 * Immutable.
 */
final class Mappings {
    /** More mappings than Linux's default {@code vm.max_map_count} (65,530) allows. */
    static final int MAX_MAPPINGS = 1 << 16;
    /** A path longer than Linux's PATH_MAX is not one. */
    private static final int MAX_PATH_BYTES = 4096;
    private static final String DELETED = " (deleted)";

    /**
     * One mapping: {@code [start, end)}, mapped from {@code offset} of the file at
     * {@code path} (empty for an anonymous mapping; in brackets for the kernel's, such as
     * {@code [stack]}), and the name frames show: the file's base name, or the path as the
     * kernel gives it (made once here, as each unwind asks for it).
     */
    record Mapping(long start, long end, long offset, boolean readable, boolean executable, long inode,
                   String path, String name) {
        /** Whether the file is on disk as it was mapped: a path, not replaced or removed since. */
        boolean isFile() {
            return Mappings.isFile(path);
        }

        /** Whether {@code address} is in {@code [start, end)}. */
        boolean holds(long address) {
            return Long.compareUnsigned(address - start, end - start) < 0;
        }
    }

    /** Whether a mapping of {@code path} is of a file on disk as it was mapped, as {@link Mapping#isFile} says. */
    static boolean isFile(String path) {
        return path.startsWith("/") && !path.endsWith(DELETED);
    }

    static final Mappings EMPTY = new Mappings(new Mapping[0], 0);

    private final Mapping[] mappings;
    private final long[] starts;
    private final int skipped;

    private Mappings(Mapping[] mappings, int skipped) {
        this.mappings = mappings;
        this.starts = new long[mappings.length];
        for (int i = 0; i < mappings.length; i++) {
            starts[i] = mappings[i].start();
        }
        this.skipped = skipped;
    }

    /** Parses the text of a {@code /proc/PID/maps}. */
    static Mappings parse(byte[] text) {
        List<Mapping> parsed = new ArrayList<>();
        int skipped = 0;
        int at = 0;
        while (at < text.length) {
            int end = at;
            while (end < text.length && text[end] != '\n') {
                end++;
            }
            Mapping mapping = parseLine(text, at, end);
            if (mapping == null || parsed.size() == MAX_MAPPINGS) {
                skipped++;
            } else {
                parsed.add(mapping);
            }
            at = end + 1;
        }
        parsed.sort((x, y) -> Long.compareUnsigned(x.start(), y.start()));
        List<Mapping> kept = new ArrayList<>(parsed.size());
        for (Mapping mapping : parsed) {
            if (!kept.isEmpty() && Long.compareUnsigned(mapping.start(), kept.getLast().end()) < 0) {
                skipped++;
            } else {
                kept.add(mapping);
            }
        }
        return new Mappings(kept.toArray(Mapping[]::new), skipped);
    }

    /** The mapping that holds {@code address}, or null. */
    Mapping find(long address) {
        int high = Addresses.lastAtOrBelow(starts, address);
        if (high < 0) {
            return null;
        }
        Mapping candidate = mappings[high];
        return candidate.holds(address) ? candidate : null;
    }

    int size() {
        return mappings.length;
    }

    /** Lines that were not mappings, overlapped another or were past the bound. */
    int skipped() {
        return skipped;
    }

    /** {@code start-end perms offset dev inode [path]}; null if the line is not that. */
    private static Mapping parseLine(byte[] text, int from, int to) {
        Cursor cursor = new Cursor(text, from, to);
        long start = cursor.hex('-');
        long end = cursor.hex(' ');
        if (cursor.failed || Long.compareUnsigned(start, end) >= 0 || cursor.at + 5 > to) {
            return null;
        }
        boolean readable = text[cursor.at] == 'r';
        boolean executable = text[cursor.at + 2] == 'x';
        cursor.at += 4;
        cursor.expect(' ');
        long offset = cursor.hex(' ');
        cursor.hex(':');
        cursor.hex(' ');
        long inode = cursor.decimal();
        if (cursor.failed) {
            return null;
        }
        while (cursor.at < to && text[cursor.at] == ' ') {
            cursor.at++;
        }
        if (to - cursor.at > MAX_PATH_BYTES) {
            return null;
        }
        String path = new String(text, cursor.at, to - cursor.at, StandardCharsets.UTF_8);
        return new Mapping(start, end, offset, readable, executable, inode, path, name(path));
    }

    /** The name frames show for the mapping of {@code path}, as {@link Mapping} says. */
    private static String name(String path) {
        if (!path.startsWith("/")) {
            return path.isEmpty() ? "[anon]" : path;
        }
        String file = path.endsWith(DELETED) ? path.substring(0, path.length() - DELETED.length()) : path;
        return file.substring(file.lastIndexOf('/') + 1);
    }

    /** Reads one line's fields; any misstep sets {@link #failed} rather than throwing. */
    private static final class Cursor {
        final byte[] text;
        final int end;
        int at;
        boolean failed;

        Cursor(byte[] text, int at, int end) {
            this.text = text;
            this.at = at;
            this.end = end;
        }

        /** Hexadecimal digits (at most 16) up to {@code separator}, which is skipped. */
        long hex(char separator) {
            long value = 0;
            int digits = 0;
            while (at < end && text[at] != separator) {
                int digit = Character.digit(text[at], 16);
                if (digit < 0 || ++digits > 16) {
                    failed = true;
                    return 0;
                }
                value = value << 4 | digit;
                at++;
            }
            if (digits == 0) {
                failed = true;
            }
            expect(separator);
            return value;
        }

        /** Decimal digits up to a space or the end of the line. */
        long decimal() {
            long value = 0;
            int digits = 0;
            while (at < end && text[at] != ' ') {
                int digit = text[at] - '0';
                if (digit < 0 || digit > 9 || ++digits > 19) {
                    failed = true;
                    return 0;
                }
                value = value * 10 + digit;
                at++;
            }
            if (digits == 0) {
                failed = true;
            }
            return value;
        }

        void expect(char separator) {
            if (at < end && text[at] == separator) {
                at++;
            } else {
                failed = true;
            }
        }
    }
}
