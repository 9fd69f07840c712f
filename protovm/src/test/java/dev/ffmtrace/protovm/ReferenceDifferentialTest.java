package dev.ffmtrace.protovm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Random programs and patches run by ffmtrace and by Perfetto's own C++ VM (protovm_ref, from
 * scripts/build-protovm-ref) give the same status, memory and state after every patch. Runs
 * only when -Dffmtrace.protovm.ref names the reference binary (the module's
 * protovm-reference profile; CI checks golden.txt instead):
 * {@code ./mvnw -pl protovm -am test -Dtest=ReferenceDifferentialTest -Dsurefire.failIfNoSpecifiedTests=false
 * -Dffmtrace.protovm.ref=/tmp/protovm-ref/protovm_ref}; -Dffmtrace.protovm.cases sets how
 * many cases (default 2,000), -Dffmtrace.protovm.seed the seed.
 */
class ReferenceDifferentialTest {
    @Test
    void randomProgramsMatchPerfettosVm(@TempDir Path dir) throws Exception {
        String ref = System.getProperty("ffmtrace.protovm.ref", "");
        assertTrue(!ref.isEmpty() && Files.isExecutable(Path.of(ref)), "-Dffmtrace.protovm.ref=" + ref
                + " names no executable");
        int cases = Integer.getInteger("ffmtrace.protovm.cases", 2000);
        long seed = Long.getLong("ffmtrace.protovm.seed", 1);
        RandomPrograms random = new RandomPrograms(seed);
        int compared = 0;
        for (int i = 0; i < cases; i++) {
            byte[] program = random.program();
            long limit = random.limit();
            byte[] state = random.withState() ? random.message() : null;
            List<byte[]> patches = new ArrayList<>();
            for (int p = random.patches(); p > 0; p--) {
                patches.add(random.message());
            }
            List<String> expected = runReference(ref, dir, program, limit, state, patches);
            if (expected == null) {
                continue;
            }
            GoldenCasesTest.Case c = new GoldenCasesTest.Case("random " + seed + "/" + i, program, limit, state,
                    patches, expected);
            assertEquals(String.join("\n", expected), String.join("\n", GoldenCasesTest.run(c)),
                    c.name() + ": program " + java.util.HexFormat.of().formatHex(program));
            compared++;
        }
        System.out.println("ReferenceDifferentialTest: " + compared + " of " + cases + " cases compared");
    }

    /** The reference's lines, as golden.txt keeps them; null when it crashed. */
    private static List<String> runReference(String ref, Path dir, byte[] program, long limit, byte[] state,
                                             List<byte[]> patches) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(ref, write(dir, "program", program), Long.toString(limit),
                state == null ? "-" : write(dir, "state", state)));
        for (int i = 0; i < patches.size(); i++) {
            command.add(write(dir, "p" + i, patches.get(i)));
        }
        Process process = new ProcessBuilder(command).redirectErrorStream(false)
                .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (process.waitFor() != 0) {
            return null;
        }
        List<String> lines = new ArrayList<>();
        for (String line : out.split("\n")) {
            if (line.isEmpty() || line.startsWith("  | ")) {
                continue;
            }
            if (line.startsWith("patch[")) {
                String[] parts = line.split(" ");
                line = parts[0] + " " + String.join(" ", List.of(parts).subList(2, parts.length));
            }
            lines.add(line);
        }
        return lines;
    }

    private static String write(Path dir, String name, byte[] bytes) throws IOException {
        return Files.write(dir.resolve(name), bytes).toString();
    }
}
