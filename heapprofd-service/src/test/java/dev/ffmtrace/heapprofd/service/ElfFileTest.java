package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.memory.testing.CPrograms;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The ELF reader against real files, checked with binutils' own reading of them (nm,
 * readelf): the test program, with its .symtab, and libc, stripped to its .dynsym; then
 * mutated ELF bytes, which it must refuse or read without an exception, in bounded time;
 * what it reads of them answers for symbols and CFI rules without one either.
 */
class ElfFileTest {
    @TempDir
    Path dir;

    private static Path program() {
        return CPrograms.program("heapprofd_pattern");
    }

    @Test
    void everyFunctionOfTheTestProgramIsFoundFromItsFirstToItsLastByte() throws Exception {
        ElfFile elf = ElfFile.read(program().toString());
        assertNotNull(elf);
        int checked = 0;
        for (String[] symbol : run("nm", "-S", "--defined-only", program().toString())) {
            if (symbol.length == 4 && (symbol[2].equals("t") || symbol[2].equals("T"))) {
                long address = Long.parseUnsignedLong(symbol[0], 16);
                long size = Long.parseUnsignedLong(symbol[1], 16);
                assertEquals(symbol[3], elf.functionAt(address));
                assertEquals(symbol[3], elf.functionAt(address + size - 1));
                assertNotEquals(symbol[3], elf.functionAt(address + size));
                checked++;
            }
        }
        assertTrue(checked >= 6, "a, b, c, deep, main and _start at least: " + checked);
        assertNull(elf.functionAt(0x10), "the ELF header is no function");
    }

    @Test
    void fileOffsetsBecomeAddressesThroughTheLoadSegments() throws Exception {
        ElfFile elf = ElfFile.read(program().toString());
        int loads = 0;
        for (String[] header : run("readelf", "-lW", program().toString())) {
            if (header.length > 5 && header[0].equals("LOAD")) {
                long offset = Long.decode(header[1]);
                long vaddr = Long.decode(header[2]);
                long fileSize = Long.decode(header[4]);
                assertEquals(vaddr, elf.vaddrOf(offset));
                assertEquals(vaddr + fileSize - 1, elf.vaddrOf(offset + fileSize - 1));
                loads++;
            }
        }
        assertTrue(loads >= 2);
        assertEquals(-1, elf.vaddrOf(Files.size(program()) + 4096));
    }

    @Test
    void theBuildIdIsTheGnuNotes() throws Exception {
        assertEquals(buildId(program()), ElfFile.read(program().toString()).buildId());
        assertEquals(buildId(libc()), ElfFile.read(libc().toString()).buildId());
    }

    @Test
    void libcsDynamicSymbolsNameItsFunctions() throws Exception {
        ElfFile elf = ElfFile.read(libc().toString());
        assertNotNull(elf);
        // Aliases share an address (malloc and __libc_malloc): any of them names it.
        Map<Long, Set<String>> names = new HashMap<>();
        List<long[]> functions = new ArrayList<>();
        for (String[] symbol : run("nm", "-D", "-S", "--defined-only", libc().toString())) {
            if (symbol.length == 4 && (symbol[2].equals("T") || symbol[2].equals("W") || symbol[2].equals("i"))) {
                String name = symbol[3].contains("@") ? symbol[3].substring(0, symbol[3].indexOf('@')) : symbol[3];
                long address = Long.parseUnsignedLong(symbol[0], 16);
                names.computeIfAbsent(address, _ -> new HashSet<>()).add(name);
                functions.add(new long[] {address, Long.parseUnsignedLong(symbol[1], 16)});
            }
        }
        assertTrue(functions.size() > 1000, "libc has thousands of functions: " + functions.size());
        for (long[] function : functions) {
            String found = elf.functionAt(function[0] + function[1] / 2);
            assertNotNull(found);
        }
        for (long[] function : functions) {
            String found = elf.functionAt(function[0]);
            assertTrue(names.get(function[0]).contains(found), found + " at 0x" + Long.toHexString(function[0]));
        }
    }

    @Test
    void whatIsNotAnElfFileIsNull() throws IOException {
        assertNull(ElfFile.read(Files.writeString(dir.resolve("text"), "#!/bin/sh\necho not an ELF file\n").toString()));
        assertNull(ElfFile.read(dir.toString()), "a directory");
        assertNull(ElfFile.read("/dev/zero"), "a device");
        assertNull(ElfFile.read(dir.resolve("missing").toString()));
        assertNull(ElfFile.read("/bad\0path"));
        byte[] elf = Files.readAllBytes(program());
        byte[] big = elf.clone();
        big[5] = 2;
        assertNull(ElfFile.read(Files.write(dir.resolve("big-endian"), big).toString()));
        ElfFile headerOnly = ElfFile.read(Files.write(dir.resolve("cut"), java.util.Arrays.copyOf(elf, 64)).toString());
        assertEquals(0, headerOnly.symbolCount(), "its tables are past the end: none is read");
    }

    private static final byte[] PROGRAM = readProgram();

    private static byte[] readProgram() {
        try {
            return Files.readAllBytes(program());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The test program's bytes with a few of them changed, most in its headers and tables,
     * which is where a reader can go wrong, sometimes cut short: read or refused, never
     * thrown out, and never for long.
     */
    /**
     * The order of a table's addresses, lowest first as unsigned, ties in index order: the
     * same whether they fit the packed sort (a real file's, with many ties here) or not.
     */
    @Property(tries = 300)
    void theOrderOfAddressesIsTheirStableUnsignedSort(@ForAll long seed) {
        Random random = new Random(seed);
        int count = random.nextInt(300);
        long[] addresses = new long[count + random.nextInt(3)];
        boolean anyAddress = random.nextBoolean();
        for (int i = 0; i < addresses.length; i++) {
            addresses[i] = anyAddress && random.nextInt(8) == 0 ? random.nextLong() : random.nextInt(64) * 0x1000L;
        }
        List<Integer> expected = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            expected.add(i);
        }
        expected.sort((x, y) -> Long.compareUnsigned(addresses[x], addresses[y]));
        assertEquals(expected, Arrays.stream(ElfFile.unsignedOrder(addresses, count)).boxed().toList());
    }

    @Property(tries = 1500)
    void mutatedElfBytesAreReadOrRefusedNeverThrown(@ForAll long seed) {
        Random random = new Random(seed);
        byte[] bytes = PROGRAM.clone();
        int length = random.nextInt(8) == 0 ? random.nextInt(bytes.length) : bytes.length;
        int mutations = 1 + random.nextInt(16);
        for (int i = 0; i < mutations; i++) {
            int at = switch (random.nextInt(4)) {
                case 0 -> random.nextInt(64);
                case 1 -> 64 + random.nextInt(13 * 56);
                case 2 -> Math.max(0, bytes.length - 1 - random.nextInt(40 * 64));
                default -> random.nextInt(bytes.length);
            };
            bytes[at] = switch (random.nextInt(4)) {
                case 0 -> 0;
                case 1 -> (byte) 0xff;
                case 2 -> (byte) 0x7f;
                default -> (byte) random.nextInt();
            };
        }
        byte[] file = java.util.Arrays.copyOf(bytes, length);
        ElfFile elf = assertTimeoutPreemptively(Duration.ofSeconds(10), () -> ElfFile.read(new ElfFile.Source() {
            @Override
            public long size() {
                return file.length;
            }

            @Override
            public int read(long offset, byte[] into) {
                int n = (int) Math.max(0, Math.min(into.length, file.length - offset));
                if (n == 0) {
                    return 0;
                }
                System.arraycopy(file, (int) offset, into, 0, n);
                return n;
            }
        }));
        if (elf != null) {
            for (int i = 0; i < 64; i++) {
                long address = random.nextInt(0x5000);
                elf.functionAt(address);
                elf.vaddrOf(address);
                if (elf.callFrameInfo() != null) {
                    elf.callFrameInfo().ruleAt(address);
                }
            }
            elf.buildId();
        }
    }

    private static Path libc() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
            int path = line.indexOf('/');
            if (path > 0 && line.substring(line.lastIndexOf('/') + 1).startsWith("libc.so")) {
                return Path.of(line.substring(path));
            }
        }
        throw new AssertionError("this process maps no libc");
    }

    private static String buildId(Path file) throws Exception {
        for (String[] words : run("readelf", "-n", file.toString())) {
            if (words.length == 3 && words[0].equals("Build") && words[1].equals("ID:")) {
                return words[2];
            }
        }
        throw new AssertionError("readelf finds no build id in " + file);
    }

    /** A binutils tool's output, each line split into words. */
    static List<String[]> run(String... command) throws Exception {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, process.exitValue(), out);
        List<String[]> lines = new ArrayList<>();
        for (String line : out.split("\n")) {
            lines.add(line.trim().split("\\s+"));
        }
        return lines;
    }
}
