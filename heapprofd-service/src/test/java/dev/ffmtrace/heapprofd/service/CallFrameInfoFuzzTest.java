package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.memory.testing.CPrograms;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * .eh_frame and .eh_frame_hdr bytes a file made up: garbage, and the test program's and
 * libc's own sections with a few bytes changed or cut short. Each is read, and asked for
 * the rule at many pcs, without an exception, and never for long.
 */
class CallFrameInfoFuzzTest {
    /** A file's .eh_frame and .eh_frame_hdr, their addresses, and the address range of its .text. */
    private record Sections(byte[] frames, long framesAddress, byte[] header, long headerAddress, long text,
                            long textSize) {
    }

    private static final List<Sections> FILES = List.of(sections(CPrograms.program("heapprofd_pattern")),
            sections(libc()));

    @Property(tries = 1000)
    void garbageIsReadOrRefusedNeverThrown(@ForAll long seed) {
        Random random = new Random(seed);
        byte[] frames = new byte[random.nextInt(4096)];
        random.nextBytes(frames);
        if (frames.length > 64 && random.nextBoolean()) {
            // A sound CIE first, so that the garbage after it is read as its FDEs.
            byte[] cie = {0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 0x10, 1, 0x1b, 0x0c, 7, 8, (byte) 0x90, 1, 0, 0};
            System.arraycopy(cie, 0, frames, 0, cie.length);
        }
        byte[] header = null;
        if (random.nextBoolean()) {
            header = new byte[random.nextInt(512)];
            random.nextBytes(header);
            byte[] sound = {1, 0x1b, 0x03, 0x3b};
            System.arraycopy(sound, 0, header, 0, Math.min(sound.length, header.length));
        }
        byte[] headerBytes = header;
        assertTimeoutPreemptively(Duration.ofSeconds(10), () -> {
            CallFrameInfo cfi = CallFrameInfo.of(frames, 0x2000, headerBytes, 0x1f00);
            for (int i = 0; i < 256; i++) {
                cfi.ruleAt(i < 128 ? random.nextLong() : random.nextInt(0x10000));
            }
        });
    }

    @Property(tries = 1000)
    void mutatedSectionsAreReadOrRefusedNeverThrown(@ForAll long seed) {
        Random random = new Random(seed);
        Sections file = FILES.get(random.nextInt(FILES.size()));
        byte[] frames = mutate(file.frames(), random);
        byte[] header = random.nextInt(4) == 0 ? null : mutate(file.header(), random);
        assertTimeoutPreemptively(Duration.ofSeconds(10), () -> {
            CallFrameInfo cfi = CallFrameInfo.of(frames, file.framesAddress(), header, file.headerAddress());
            for (int i = 0; i < 256; i++) {
                cfi.ruleAt(file.text() + (long) (random.nextDouble() * file.textSize()));
            }
        });
    }

    /** A copy of {@code bytes} with a few changed, sometimes cut short. */
    private static byte[] mutate(byte[] bytes, Random random) {
        byte[] mutated = bytes.clone();
        int mutations = random.nextInt(17);
        for (int i = 0; i < mutations; i++) {
            // Most where the CIEs, the first FDEs and the header's table start.
            int at = random.nextBoolean() ? random.nextInt(Math.min(256, mutated.length)) : random.nextInt(mutated.length);
            mutated[at] = switch (random.nextInt(4)) {
                case 0 -> 0;
                case 1 -> (byte) 0xff;
                case 2 -> (byte) 0x7f;
                default -> (byte) random.nextInt();
            };
        }
        return random.nextInt(8) == 0 ? Arrays.copyOf(mutated, random.nextInt(mutated.length)) : mutated;
    }

    private static Sections sections(Path file) {
        try {
            long[] frames = section(file, ".eh_frame");
            long[] header = section(file, ".eh_frame_hdr");
            long[] text = section(file, ".text");
            byte[] bytes = Files.readAllBytes(file);
            return new Sections(Arrays.copyOfRange(bytes, (int) frames[1], (int) (frames[1] + frames[2])), frames[0],
                    Arrays.copyOfRange(bytes, (int) header[1], (int) (header[1] + header[2])), header[0], text[0], text[2]);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** A section's address, file offset and size, as readelf lists them. */
    private static long[] section(Path file, String name) throws Exception {
        for (String[] words : ElfFileTest.run("readelf", "-SW", file.toString())) {
            for (int i = 0; i + 4 < words.length; i++) {
                if (words[i].equals(name)) {
                    return new long[] {Long.parseUnsignedLong(words[i + 2], 16), Long.parseUnsignedLong(words[i + 3], 16),
                            Long.parseUnsignedLong(words[i + 4], 16)};
                }
            }
        }
        throw new AssertionError(file + " has no " + name);
    }

    private static Path libc() {
        try {
            return CallFrameInfoTest.libc();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
