package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ffmtrace protovm} prints what Perfetto's own VM prints for the same files (the
 * expected lines are protovm_ref's, from scripts/build-protovm-ref), and its ABORT reasons.
 */
class ProtoVmCommandTest {
    @TempDir
    Path dir;

    private Path file(String name, String hex) throws Exception {
        return Files.write(dir.resolve(name), HexFormat.of().parseHex(hex));
    }

    @Test
    void aMergeWithinAndPastItsLimit() throws Exception {
        // A program of one instruction, merge, with no version field: 4 bytes.
        String program = file("merge.pb", "12021a00").toString();
        String patch = file("0801.pb", "0801").toString();
        ConvertAndDumpTest.Run within = ConvertAndDumpTest.run("protovm", program, "96", "-", patch);
        assertEquals(0, within.exit(), within.err());
        assertEquals("init mem=4 state=\n"
                + "patch[0] " + patch + " status=OK mem=100 state=0801\n"
                + "clone mem=6 state=0801\n", within.out());

        ConvertAndDumpTest.Run past = ConvertAndDumpTest.run("protovm", program, "95", "-", patch);
        assertEquals(0, past.exit(), past.err());
        String[] lines = past.out().split("\n");
        assertEquals("patch[0] " + patch + " status=ABORT mem=4 state=", lines[1]);
        assertTrue(lines[2].startsWith("  | Failed to allocate element (48 bytes). Memory limit: 95"), past.out());
        assertEquals("clone mem=4 state=", lines[lines.length - 1]);
    }

    @Test
    void anUnreadableFileIsAnErrorNotAStackTrace() throws Exception {
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("protovm", dir.resolve("none.pb").toString(), "96", "-");
        assertEquals(1, run.err().lines().count(), run.err());
        assertTrue(run.err().contains("cannot read program"), run.err());
        assertTrue(run.exit() != 0);
    }
}
