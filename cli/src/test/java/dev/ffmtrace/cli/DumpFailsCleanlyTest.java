package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import perfetto.protos.TraceOuterClass.Trace;

/** {@code dump} on bad packets and on inputs that can be read only once. */
class DumpFailsCleanlyTest {
    @TempDir
    Path dir;

    private Path example;
    private String exampleDump;

    @BeforeEach
    void convertTheExample() {
        example = dir.resolve("example.pftrace");
        ConvertAndDumpTest.Run converted = ConvertAndDumpTest.run("convert",
                "src/test/resources/examples/track_events.pbtxt", example.toString());
        assertEquals(0, converted.exit(), converted.err());
        ConvertAndDumpTest.Run dumped = ConvertAndDumpTest.run("dump", example.toString());
        assertEquals(0, dumped.exit(), dumped.err());
        exampleDump = dumped.out();
        assertTrue(exampleDump.contains("# summary: 12 packets, 4 track descriptors, "), exampleDump);
    }

    @Test
    void aMalformedPacketIsReportedAndTheDumpGoesOn() throws Exception {
        Trace trace = Trace.parseFrom(Files.readAllBytes(example));
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        Trace.newBuilder().addAllPacket(trace.getPacketList().subList(0, 6)).build().writeTo(bytes);
        int badOffset = bytes.size();
        // A packet whose first field, a varint, never ends within the packet.
        bytes.write(new byte[] {0x0a, 0x02, 0x08, (byte) 0x80});
        Trace.newBuilder().addAllPacket(trace.getPacketList().subList(6, 12)).build().writeTo(bytes);
        Path broken = dir.resolve("broken.pftrace");
        Files.write(broken, bytes.toByteArray());

        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("dump", broken.toString());
        assertEquals(trackLines(exampleDump), trackLines(run.out()), "the other packets are all in the summary");
        assertEquals(2, run.exit());
        assertEquals(1, run.err().lines().count(), run.err());
        assertTrue(run.err().startsWith("ffmtrace dump: " + broken + ": packet 7 at byte " + badOffset + " is malformed: "),
                run.err());
        assertTrue(run.out().contains("# packet 7 at byte " + badOffset + ": malformed, skipped\n"), run.out());
        assertTrue(run.out().contains("# summary: 13 packets, 4 track descriptors, 0 packets after a data loss, "
                + "0 trace_stats packets, 0 packets undecodable for lost incremental state, 1 malformed packets\n"), run.out());
        assertEquals(exampleDump.lines().filter(line -> line.equals("packet {")).count(),
                run.out().lines().filter(line -> line.equals("packet {")).count());
    }

    @Test
    void aTruncatedTraceStillGetsItsSummary() throws Exception {
        byte[] whole = Files.readAllBytes(example);
        Path truncated = dir.resolve("truncated.pftrace");
        Files.write(truncated, Arrays.copyOf(whole, whole.length - 3));
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("dump", truncated.toString());
        assertTrue(run.out().contains("# summary: 11 packets, "), run.out());
        assertEquals(2, run.exit());
        assertEquals(1, run.err().lines().count(), run.err());
        assertTrue(run.err().startsWith("ffmtrace dump: " + truncated + ": not a valid trace file at byte "), run.err());
    }

    @Test
    void aMissingFileOrADirectoryIsOneLine() {
        Path missing = dir.resolve("missing.pftrace");
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("dump", missing.toString());
        assertEquals(2, run.exit());
        assertEquals("ffmtrace dump: " + missing + ": no such file or directory\n", run.err());
        run = ConvertAndDumpTest.run("dump", dir.toString());
        assertEquals(2, run.exit());
        assertEquals("ffmtrace dump: " + dir + ": is a directory\n", run.err());
    }

    @Test
    void aFifoIsReadOnce() throws Exception {
        Path fifo = dir.resolve("trace.fifo");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start().waitFor());
        // The writer opens the FIFO once: a second open by the reader would wait forever.
        ConvertAndDumpTest.Run run = CliProcess.start("cat '" + example + "' > '" + fifo + "' &", List.of(),
                "dump", fifo.toString()).await();
        assertEquals(0, run.exit(), run.err());
        assertEquals(exampleDump, run.out());
    }

    @Test
    void aProcessSubstitutionIsReadOnce() throws Exception {
        // What bash makes of <(cat FILE): a pipe, opened as /dev/fd/N.
        ConvertAndDumpTest.Run run = CliProcess.start("exec 3< <(cat '" + example + "')", List.of(),
                "dump", "/dev/fd/3").await();
        assertEquals(0, run.exit(), run.err());
        assertEquals(exampleDump, run.out());
    }

    private static List<String> trackLines(String dump) {
        return dump.lines().filter(line -> line.startsWith("# track ")).toList();
    }
}
