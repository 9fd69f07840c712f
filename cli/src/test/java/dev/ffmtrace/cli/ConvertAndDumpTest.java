package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code convert} and {@code dump}: text format to a trace file and back, with the summary. */
class ConvertAndDumpTest {
    @TempDir
    Path dir;

    record Run(int exit, String out, String err) {
    }

    static Run run(String... args) {
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream stdout = new ByteArrayOutputStream();
        ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(stdout, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(stderr, true, StandardCharsets.UTF_8));
            int exit = FfmtraceCommand.commandLine().execute(args);
            return new Run(exit, stdout.toString(StandardCharsets.UTF_8), stderr.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
    }

    @Test
    void convertDumpAndConvertAgainGiveTheSameBytes() throws Exception {
        Path example = Path.of("src/test/resources/examples/track_events.pbtxt");
        Path binary = dir.resolve("trace.pftrace");
        Run converted = run("convert", example.toString(), binary.toString());
        assertEquals(0, converted.exit(), converted.err());
        assertTrue(converted.out().startsWith("wrote 12 packets"), converted.out());

        Run dumped = run("dump", binary.toString());
        assertEquals(0, dumped.exit(), dumped.err());
        assertTrue(dumped.out().contains("track_event {\n    type: TYPE_SLICE_BEGIN"), dumped.out());
        assertTrue(dumped.out().contains("# summary: 12 packets, 4 track descriptors, 0 packets after a data loss"), dumped.out());
        assertTrue(dumped.out().contains("# track 1002 \"request-worker (tid 4201)\": 2 slices, 1 instants, 0 counter values, 0 slices left open"),
                dumped.out());
        assertTrue(dumped.out().contains("# track 1004 \"queue depth\": 0 slices, 0 instants, 1 counter values"), dumped.out());
        assertEquals(List.of("# slices named \"Charge\": 1", "# slices named \"HandleRequest\": 1", "# slices named \"ValidateCart\": 1"),
                dumped.out().lines().filter(line -> line.startsWith("# slices named ")).toList());

        Path dumpedText = dir.resolve("dumped.pbtxt");
        Files.writeString(dumpedText, dumped.out());
        Path again = dir.resolve("again.pftrace");
        assertEquals(0, run("convert", dumpedText.toString(), again.toString()).exit());
        assertArrayEquals(Files.readAllBytes(binary), Files.readAllBytes(again), "the dump is the same trace");
    }

    @Test
    void badInputIsReportedWithItsPosition() throws Exception {
        Path broken = dir.resolve("broken.pbtxt");
        Files.writeString(broken, "packet {\n  timestamp: \"soon\"\n}\n");
        Run run = run("convert", broken.toString(), dir.resolve("x.pftrace").toString());
        assertEquals(2, run.exit());
        assertEquals(broken + ":2:14: Couldn't parse integer: For input string: \"\"soon\"\"\n", run.err(), "the position once");

        Path notATrace = dir.resolve("noise.pftrace");
        Files.write(notATrace, new byte[] {0x0a, 0x7f, 0x01});
        Run dump = run("dump", notATrace.toString());
        assertEquals(2, dump.exit());
        assertTrue(dump.err().contains("not a valid trace file"), dump.err());
    }

    @Test
    void previousPacketDroppedAcceptsOlderPerfettosBoolSpelling() {
        String text = "packet { previous_packet_dropped: true debug: \"previous_packet_dropped: true\" }\n"
                + "# previous_packet_dropped: false\npacket { previous_packet_dropped:false }\n"
                + "packet { not_previous_packet_dropped: true previous_packet_dropped: trueish }\n";
        assertEquals("packet { previous_packet_dropped: 1    debug: \"previous_packet_dropped: true\" }\n"
                + "# previous_packet_dropped: false\npacket { previous_packet_dropped:0     }\n"
                + "packet { not_previous_packet_dropped: true previous_packet_dropped: trueish }\n",
                ConvertCommand.boolLossFlagsAsNumbers(text), "only the field's own value, outside strings and comments");
    }
}
