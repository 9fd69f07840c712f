package dev.ffmtrace.protovm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import org.junit.jupiter.api.Test;

/**
 * CanonicalProgram against canonical.txt, written by scripts/protovm-canonical-golden from
 * Perfetto's own cppgen VmProgram: every odd encoding re-serialises to traced's bytes.
 */
class CanonicalProgramTest {
    private static final HexFormat HEX = HexFormat.of();

    @Test
    void everyGoldenProgramReserialisesAsCppgenDoes() throws IOException {
        int cases = 0;
        List<String> wrong = new ArrayList<>();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(Objects.requireNonNull(
                getClass().getResourceAsStream("canonical.txt")), StandardCharsets.UTF_8))) {
            for (String line; (line = in.readLine()) != null; ) {
                if (line.startsWith("#")) {
                    continue;
                }
                String[] parts = line.split(" ");
                List<MemorySegment> inputs = Arrays.stream(parts[0].split(","))
                        .map(hex -> MemorySegment.ofArray(bytes(hex))).toList();
                byte[] actual = CanonicalProgram.of(inputs);
                if (!Arrays.equals(bytes(parts[1]), actual)) {
                    wrong.add("line " + (cases + 2) + ": " + parts[0] + " gave " + HEX.formatHex(actual));
                } else if (!Arrays.equals(actual, CanonicalProgram.of(MemorySegment.ofArray(actual)))) {
                    wrong.add("line " + (cases + 2) + ": the canonical form is not its own");
                }
                cases++;
            }
        }
        assertTrue(cases > 800, "golden cases read: " + cases);
        assertEquals(List.of(), wrong.subList(0, Math.min(5, wrong.size())), wrong.size() + " of " + cases + " differ");
    }

    @Test
    void theBytesAreCopiedBeforeTheyAreParsed() {
        byte[] program = HEX.parseHex("0801" + "1208" + "0a06" + "0801" + "12020803");
        MemorySegment shared = java.lang.foreign.Arena.ofAuto().allocate(program.length);
        MemorySegment.copy(MemorySegment.ofArray(program), 0, shared, 0, program.length);
        assertArrayEquals(program, CanonicalProgram.of(shared));
    }

    @Test
    void aScalarWrittenLengthDelimitedIsRefusedWhereTracedWouldReadAPointer() {
        // VmProgram{version: length-delimited}: cppgen reads the payload's address as the value.
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CanonicalProgram.of(MemorySegment.ofArray(HEX.parseHex("0a0101"))));
        assertTrue(e.getMessage().contains("field 1"), e.getMessage());
        // The same deep inside: an instruction's select's cursor.
        assertThrows(IllegalArgumentException.class,
                () -> CanonicalProgram.of(MemorySegment.ofArray(HEX.parseHex("1205" + "0a03" + "0a0101"))));
    }

    @Test
    void nestingPastWhatProtozeroWritesIsRefusedAndJustBelowItIsKept() {
        byte[] deepest = nestedInstructions(32);
        assertArrayEquals(deepest, CanonicalProgram.of(MemorySegment.ofArray(deepest)));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CanonicalProgram.of(MemorySegment.ofArray(nestedInstructions(33))));
        assertTrue(e.getMessage().contains("32"), e.getMessage());
    }

    /** {@code levels} instructions, each the only nested instruction of the one above it. */
    private static byte[] nestedInstructions(int levels) {
        byte[] body = new byte[0];
        for (int i = 0; i < levels; i++) {
            int fieldTag = i == levels - 1 ? 0x12 : 0x3a; // the outermost is VmProgram.instructions
            byte[] wrapped = new byte[body.length + 2];
            wrapped[0] = (byte) fieldTag;
            wrapped[1] = (byte) body.length;
            System.arraycopy(body, 0, wrapped, 2, body.length);
            body = wrapped;
        }
        return body;
    }

    private static byte[] bytes(String hex) {
        return hex.equals("-") ? new byte[0] : HEX.parseHex(hex);
    }
}
