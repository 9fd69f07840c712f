package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import perfetto.protos.TraceOuterClass.Trace;
import perfetto.protos.TracePacketOuterClass.TracePacket;

/** The main job: a session from the bundled two-buffer config, end to end into a trace file. */
class RecordCommandTest {
    @TempDir
    Path dir;

    @Test
    void recordsAWholeTraceFromTheBundledConfig() throws Exception {
        Path config = dir.resolve("short.pbtxt");
        Files.writeString(config, Files.readString(Path.of("../configs/demo.pbtxt"))
                .replace("duration_ms: 2000", "duration_ms: 600"));
        Path trace = dir.resolve("demo.pftrace");
        Path snapshot = dir.resolve("snapshot.pftrace");
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("record", "--config", config.toString(),
                "--out", trace.toString(), "--threads", "3", "--snapshot", snapshot.toString());
        assertEquals(0, run.exit(), run.err() + run.out());
        Trace snapshotTrace = Trace.parseFrom(Files.readAllBytes(snapshot));
        assertTrue(snapshotTrace.getPacketCount() > 1, "the snapshot holds packets and a stats packet");
        assertTrue(run.out().contains("buffer #0 \"events\" (RING_BUFFER, 8,192 KiB)"), run.out());
        assertTrue(run.out().contains("buffer #1 \"counters\" (DISCARD, 1,024 KiB)"), run.out());

        Trace parsed = Trace.parseFrom(Files.readAllBytes(trace));
        DumpCommand.Summary summary = new DumpCommand.Summary();
        Map<Integer, Integer> packetsPerSequence = new HashMap<>();
        int statsPackets = 0;
        for (TracePacket packet : parsed.getPacketList()) {
            summary.add(packet);
            if (packet.hasTraceStats()) {
                statsPackets++;
                assertEquals(2, packet.getTraceStats().getBufferStatsCount());
                continue;
            }
            assertTrue(packet.hasTrustedPid() && packet.hasTrustedUid() && packet.hasTrustedPacketSequenceId());
            packetsPerSequence.merge(packet.getTrustedPacketSequenceId(), 1, Integer::sum);
        }
        assertEquals(1, statsPackets);
        assertEquals(6, packetsPerSequence.size(), "an events and a counters sequence per thread");
        assertEquals(0, summary.losses, "nothing lost in a short recording");
        assertEquals(0, summary.unbalancedEnds);
        assertTrue(summary.trackNames.size() >= 1 + 3 * 3, "the process track, and thread, queue and counter tracks per thread");
        for (var open : summary.openSlices.values()) {
            assertTrue(open.isEmpty(), "every slice on every track is closed");
        }
        assertTrue(summary.slicesPerTrack.values().stream().mapToLong(c -> c[0]).sum() > 10);
    }

    @Test
    void anInvalidConfigIsRefusedWithItsReason() throws Exception {
        Path config = dir.resolve("bad.pbtxt");
        Files.writeString(config, "buffers { name: \"a\" size_kb: 64 }\nbuffers { name: \"a\" size_kb: 64 }\n");
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("record", "--config", config.toString(),
                "--out", dir.resolve("x.pftrace").toString());
        assertEquals(2, run.exit());
        assertEquals(config + ": invalid TraceConfig: duplicate buffer name \"a\": buffers #0 and #1\n", run.err());
    }
}
