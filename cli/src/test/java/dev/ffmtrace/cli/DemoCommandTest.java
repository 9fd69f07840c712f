package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The README's main job: a second JVM writes into a sealed memfd this process created. */
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
}
