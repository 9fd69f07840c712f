package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.tracing.trackevent.TrackEventReader;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import jdk.jfr.Configuration;
import jdk.jfr.Recording;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code ffmtrace jfr} on a recording of this JVM, a cut one and a file that is none. */
class JfrCommandTest {
    @TempDir
    static Path dir;
    static Path recording;

    @BeforeAll
    static void recordThisJvm() throws Exception {
        recording = dir.resolve("this.jfr");
        try (Recording jfr = new Recording(Configuration.getConfiguration("profile"))) {
            jfr.start();
            System.gc();
            jfr.stop();
            jfr.dump(recording);
        }
    }

    @Test
    void aRecordingBecomesATraceOfThisProcess() throws Exception {
        Path out = dir.resolve("this.pftrace");
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("jfr", "--quiet", recording.toString(), "-o", out.toString());
        assertEquals(0, run.exit(), run.err());
        assertEquals("", run.err());
        assertTrue(run.out().startsWith("wrote " + out + ": "), run.out());
        TrackEventReader.Decoded trace = TrackEventReader.read(MemorySegment.ofArray(Files.readAllBytes(out)));
        assertTrue(trace.tracks().values().stream()
                .anyMatch(t -> t.processName() != null && t.pid() == ProcessHandle.current().pid()), trace::toString);
        assertTrue(trace.tracks().values().stream().anyMatch(t -> t.name() != null && t.name().startsWith("GC ")));
    }

    @Test
    void aCutRecordingIsConvertedAsFarAsItReadsAndExits2WithOneLine() throws Exception {
        byte[] whole = Files.readAllBytes(recording);
        byte[] cut = Arrays.copyOf(whole, whole.length + whole.length / 2);
        System.arraycopy(whole, 0, cut, whole.length, whole.length / 2);
        Path input = dir.resolve("cut.jfr");
        Files.write(input, cut);
        Path out = dir.resolve("cut.pftrace");
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("jfr", "--quiet", input.toString(), "-o", out.toString());
        assertEquals(2, run.exit(), run.err());
        assertEquals(1, run.err().lines().count(), run.err());
        assertTrue(run.err().startsWith("ffmtrace jfr: " + input + ": unreadable after event "), run.err());
        assertTrue(Files.size(out) > 0);
    }

    @Test
    void whatIsNoRecordingExits2AndLeavesNoTrace() throws Exception {
        Path input = dir.resolve("not.jfr");
        Files.writeString(input, "not a recording");
        Path out = dir.resolve("not.pftrace");
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("jfr", input.toString(), "-o", out.toString());
        assertEquals(2, run.exit());
        assertEquals(1, run.err().lines().count(), run.err());
        assertTrue(run.err().startsWith("ffmtrace jfr: " + input + " is not a readable JFR recording: "), run.err());
        assertFalse(Files.exists(out));
    }
}
