package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.trackevent.TrackEventReader;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import perfetto.protos.TraceOuterClass.Trace;
import perfetto.protos.TracePacketOuterClass.TracePacket;
import perfetto.protos.TrackEventOuterClass.TrackEvent;

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

        byte[] bytes = Files.readAllBytes(trace);
        Trace parsed = Trace.parseFrom(bytes);
        Map<Integer, Integer> packetsPerSequence = new HashMap<>();
        int statsPackets = 0;
        for (TracePacket packet : parsed.getPacketList()) {
            assertTrue(packet.hasTrustedUid() && packet.hasTrustedPacketSequenceId());
            if (packet.getTrustedPacketSequenceId() == TracingSession.SERVICE_SEQUENCE_ID) {
                if (packet.hasTraceStats()) {
                    statsPackets++;
                    assertEquals(2, packet.getTraceStats().getBufferStatsCount());
                } else {
                    assertTrue(packet.hasClockSnapshot(), "the service writes only clock snapshots and stats");
                }
                continue;
            }
            assertTrue(packet.hasTrustedPid());
            packetsPerSequence.merge(packet.getTrustedPacketSequenceId(), 1, Integer::sum);
        }
        assertEquals(1, statsPackets);
        assertEquals(6, packetsPerSequence.size(), "an events and a counters sequence per thread");

        TrackEventReader.Decoded decoded = TrackEventReader.read(MemorySegment.ofArray(bytes));
        assertEquals(0, decoded.lossMarkers(), "nothing lost in a short recording");
        assertEquals(0, decoded.undecodable());
        assertTrue(decoded.tracks().size() >= 1 + 3 * 3, "the process track, and thread, queue and counter tracks per thread");
        Map<Long, Integer> depth = new HashMap<>();
        long slices = 0;
        for (TrackEventReader.Event event : decoded.events()) {
            assertTrue(decoded.tracks().containsKey(event.trackUuid()), "every event's track is described");
            if (event.type() == TrackEvent.Type.TYPE_SLICE_BEGIN_VALUE) {
                depth.merge(event.trackUuid(), 1, Integer::sum);
                slices++;
            } else if (event.type() == TrackEvent.Type.TYPE_SLICE_END_VALUE) {
                assertTrue(depth.merge(event.trackUuid(), -1, Integer::sum) >= 0, "no end without a begin");
            }
        }
        assertTrue(depth.values().stream().allMatch(d -> d == 0), "every slice on every track is closed: " + depth);
        assertTrue(slices > 10);
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
