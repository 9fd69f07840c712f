package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/** {@code ffmtrace demo}: a second JVM writes into a sealed memfd this process created. */
class DemoCommandTest {
    @Test
    void peerProcessWritesAndOwnerReads() {
        PrintStream original = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        int exit;
        try {
            System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
            exit = FfmtraceCommand.commandLine().execute("demo");
        } finally {
            System.setOut(original);
        }
        String out = captured.toString(StandardCharsets.UTF_8);
        assertEquals(0, exit, out);
        assertTrue(out.contains("sealed against resize: true"), out);
        assertTrue(out.matches("(?s).*read from the shared memory: \"hello from pid \\d+, written straight into the shared mapping\".*"), out);
        assertTrue(out.contains("memfd still 65536 bytes"), out);
    }

    /** A peer that never connects, and one that dies first, each as a shell script in place of the second JVM. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "exec sleep 600 | did not connect within 2 s",
            "exit 3 | exited with status 3 before connecting"})
    void aPeerThatNeverConnectsIsAOneLineError(String script, String expected, @TempDir Path dir) throws Exception {
        Path peer = dir.resolve("peer.sh");
        Files.writeString(peer, "#!/bin/bash\n" + script + "\n");
        Files.setPosixFilePermissions(peer, PosixFilePermissions.fromString("rwx------"));
        CliProcess demo = CliProcess.start("", List.of(), "demo", "--timeout", "2", "--peer-program", peer.toString());
        ConvertAndDumpTest.Run run = demo.await();
        assertEquals(1, run.exit(), run.err() + run.out());
        assertTrue(run.err().matches("ffmtrace demo: the peer \\(pid \\d+\\) " + Pattern.quote(expected) + "\n"), run.err());
    }
}
