package dev.ffmtrace.protovm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Every case of golden.txt, written by scripts/protovm-golden from Perfetto's own C++ VM:
 * after each patch the same status, memory use and state bytes, then the same for a
 * read-only clone.
 */
class GoldenCasesTest {
    private static final HexFormat HEX = HexFormat.of();

    record Case(String name, byte[] program, long limit, byte[] state, List<byte[]> patches, List<String> expected) {
    }

    static List<Case> cases() throws IOException {
        List<Case> cases = new ArrayList<>();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(Objects.requireNonNull(
                GoldenCasesTest.class.getResourceAsStream("golden.txt")), StandardCharsets.UTF_8))) {
            String name = null;
            byte[] program = null;
            byte[] state = null;
            long limit = 0;
            List<byte[]> patches = new ArrayList<>();
            List<String> expected = new ArrayList<>();
            for (String line; (line = in.readLine()) != null; ) {
                if (line.startsWith("#") || line.isEmpty()) {
                    continue;
                }
                int space = line.indexOf(' ');
                String key = space < 0 ? line : line.substring(0, space);
                String value = space < 0 ? "" : line.substring(space + 1);
                switch (key) {
                    case "case" -> {
                        name = value;
                        patches = new ArrayList<>();
                        expected = new ArrayList<>();
                    }
                    case "program" -> program = HEX.parseHex(value);
                    case "limit" -> limit = Long.parseLong(value);
                    case "state" -> state = value.equals("-") ? null : HEX.parseHex(value);
                    case "patch" -> patches.add(HEX.parseHex(value));
                    case "expect" -> expected.add(value);
                    case "end" -> cases.add(new Case(name, program, limit, state, patches, expected));
                    default -> throw new IOException("golden.txt: unknown line " + line);
                }
            }
        }
        return cases;
    }

    /** The lines protovm_ref prints for a case, without the abort stack and the patch file names. */
    static List<String> run(Case c) {
        List<String> lines = new ArrayList<>();
        ProtoVm vm = new ProtoVm(MemorySegment.ofArray(c.program()), c.limit(),
                c.state() == null ? null : MemorySegment.ofArray(c.state()));
        lines.add("init " + describe(vm));
        for (int i = 0; i < c.patches().size(); i++) {
            Status status = vm.applyPatch(MemorySegment.ofArray(c.patches().get(i)));
            lines.add("patch[" + i + "] status=" + status + " " + describe(vm));
        }
        lines.add("clone " + describe(vm.cloneReadOnly()));
        return lines;
    }

    private static String describe(ProtoVm vm) {
        return "mem=" + vm.memoryUsageBytes() + " state=" + HEX.formatHex(vm.serializeState());
    }

    @TestFactory
    Stream<DynamicTest> eachCaseMatchesPerfettosVm() throws IOException {
        List<Case> cases = cases();
        assertTrue(cases.size() > 300, "golden.txt holds " + cases.size() + " cases");
        return cases.stream().map(c -> DynamicTest.dynamicTest(c.name(),
                () -> assertEquals(String.join("\n", c.expected()), String.join("\n", run(c)))));
    }
}
