package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.trackevent.TrackEventReader;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import perfetto.protos.TraceOuterClass.Trace;
import perfetto.protos.TracePacketOuterClass.TracePacket;
import perfetto.protos.TrackDescriptorOuterClass.TrackDescriptor;
import perfetto.protos.TrackEventOuterClass.TrackEvent;

/** The main job: a session from the bundled two-buffer config, end to end into a trace file. */
class RecordCommandTest {
    @TempDir
    Path dir;

    @Test
    void recordsAWholeTraceFromTheBundledConfig() throws Exception {
        Path config = shortDemoConfig();
        Path trace = dir.resolve("demo.pftrace");
        Path snapshot = dir.resolve("snapshot.pftrace");
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("record", "--config", config.toString(),
                "--out", trace.toString(), "--threads", "3", "--snapshot", snapshot.toString());
        assertEquals(0, run.exit(), run.err() + run.out());
        assertEquals("", run.err(), "the demo producer offers every data source of the config: no warning");
        Trace snapshotTrace = Trace.parseFrom(Files.readAllBytes(snapshot));
        assertTrue(snapshotTrace.getPacketCount() > 1, "the snapshot holds packets and a stats packet");
        assertTrue(run.out().contains("buffer #0 \"events\" (RING_BUFFER, 8,192 KiB)"), run.out());
        assertTrue(run.out().contains("buffer #1 \"counters\" (DISCARD, 1,024 KiB)"), run.out());

        byte[] bytes = Files.readAllBytes(trace);
        Trace parsed = Trace.parseFrom(bytes);
        Map<Integer, Integer> packetsPerSequence = new HashMap<>();
        Map<Integer, Integer> provenance = new HashMap<>();
        int statsPackets = 0;
        for (TracePacket packet : parsed.getPacketList()) {
            assertTrue(packet.hasTrustedUid() && packet.hasTrustedPacketSequenceId());
            if (packet.getTrustedPacketSequenceId() == TracingSession.SERVICE_SEQUENCE_ID) {
                if (packet.hasTraceStats()) {
                    statsPackets++;
                    assertEquals(2, packet.getTraceStats().getBufferStatsCount());
                } else if (packet.hasTraceProvenance()) {
                    packet.getTraceProvenance().getBuffersList().forEach(buffer -> buffer.getSequencesList()
                            .forEach(sequence -> provenance.put(sequence.getId(), sequence.getProducerId())));
                } else {
                    assertTrue(packet.hasClockSnapshot() || packet.hasTraceConfig() || packet.hasTraceUuid()
                            || packet.hasSystemInfo() || packet.hasServiceEvent(),
                            "the service writes clock snapshots, the config, the uuid, the provenance, the system, "
                                    + "its events and stats");
                }
                continue;
            }
            assertTrue(packet.hasTrustedPid());
            packetsPerSequence.merge(packet.getTrustedPacketSequenceId(), 1, Integer::sum);
        }
        assertEquals(1, statsPackets);
        assertEquals(3 + 1, packetsPerSequence.size(), "a track_event sequence per thread, and the counters'");
        assertEquals(packetsPerSequence.keySet(), provenance.keySet(), "trace_provenance names every sequence");
        assertEquals(1, Set.copyOf(provenance.values()).size(), "all of them the demo producer's");

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
        // The counters data source samples at each of the service's flushes (250 ms) and at the stop.
        long heapSamples = decoded.events().stream().filter(event -> event.counterValue() != null
                && "JVM heap in use (bytes)".equals(decoded.tracks().get(event.trackUuid()).name())).count();
        assertTrue(heapSamples >= 2, "heap samples: " + heapSamples);
        // Each of the three threads writes one request at least: its request, parse and handle slices.
        assertTrue(slices >= 3 * 3, "slices: " + slices);
    }

    @Test
    void theJvmConfigPutsThisJvmsOwnTimelineBesideTheDemosSlices() throws Exception {
        Path config = dir.resolve("jvm.pbtxt");
        Files.writeString(config, Files.readString(Path.of("../configs/jvm.pbtxt"))
                .replace("duration_ms: 4000", "duration_ms: 2500"));
        Path trace = dir.resolve("jvm.pftrace");
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("record", "--config", config.toString(), "--out",
                trace.toString(), "--threads", "2");
        assertEquals(0, run.exit(), run.err() + run.out());
        assertEquals("", run.err(), "the demo producer offers jvm as well: no warning");
        TrackEventReader.Decoded decoded = TrackEventReader.read(MemorySegment.ofArray(Files.readAllBytes(trace)));
        assertEquals(0, decoded.undecodable());
        Map<String, Long> counters = new HashMap<>();
        long slices = 0;
        for (TrackEventReader.Event event : decoded.events()) {
            if (event.type() == TrackEvent.Type.TYPE_SLICE_BEGIN_VALUE) {
                slices++;
            } else if (event.counterValue() != null || event.doubleCounterValue() != null) {
                counters.merge(decoded.tracks().get(event.trackUuid()).name(), 1L, Long::sum);
            }
        }
        assertTrue(slices >= 2 * 3, "the demo's slices: " + slices);
        // JFR's periodic events, at the recording's start and each second: the JVM's CPU and its threads.
        assertTrue(counters.containsKey("JVM user CPU %"), counters::toString);
        assertTrue(counters.containsKey("Java threads"), counters::toString);
    }

    @Test
    void theServiceStopsTheRecordingAfterItsDurationWhateverTheFlushPeriod() throws Exception {
        Path config = dir.resolve("slow-flush.pbtxt");
        Files.writeString(config, Files.readString(Path.of("../configs/demo.pbtxt"))
                .replace("duration_ms: 2000", "duration_ms: 500").replace("flush_period_ms: 250", "flush_period_ms: 3600000"));
        Path trace = dir.resolve("slow-flush.pftrace");
        long start = System.nanoTime();
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("record", "--config", config.toString(), "--out",
                trace.toString(), "--threads", "1");
        long elapsedMs = (System.nanoTime() - start) / 1_000_000;
        assertEquals(0, run.exit(), run.err() + run.out());
        // A stop held back by the flush period would take an hour.
        assertTrue(elapsedMs < 60_000, "a 500 ms session with an hour's flush period took " + elapsedMs + " ms");
        TrackEventReader.Decoded decoded = TrackEventReader.read(MemorySegment.ofArray(Files.readAllBytes(trace)));
        // The one thread's first request at least: five events on its track, two on its queue's.
        assertTrue(decoded.events().size() >= 7, "the stop's flush took the events: " + decoded.events().size());
    }

    @Test
    void aSessionTheServiceStopsAtOnceHasItsSnapshotAndEveryWritersFirstEvents() throws Exception {
        // The service stops the session 1 ms after its start: before the command's loop looks at the clock.
        Path config = dir.resolve("at-once.pbtxt");
        Files.writeString(config, Files.readString(Path.of("../configs/demo.pbtxt"))
                .replace("duration_ms: 2000", "duration_ms: 1"));
        Path trace = dir.resolve("at-once.pftrace");
        Path snapshot = dir.resolve("at-once-snapshot.pftrace");
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("record", "--config", config.toString(),
                "--out", trace.toString(), "--threads", "2", "--snapshot", snapshot.toString(), "--c-producer");
        assertEquals(0, run.exit(), run.err() + run.out());
        assertTrue(run.out().contains("  snapshot of "), run.out());
        assertTrue(Trace.parseFrom(Files.readAllBytes(snapshot)).getPacketCount() > 1, "the snapshot was taken at the stop");
        TrackEventReader.Decoded decoded = TrackEventReader.read(MemorySegment.ofArray(Files.readAllBytes(trace)));
        Map<String, Integer> eventsPerTrack = new HashMap<>();
        for (TrackEventReader.Event event : decoded.events()) {
            TrackEventReader.TrackInfo track = decoded.tracks().get(event.trackUuid());
            eventsPerTrack.merge(track.name() != null ? track.name() : track.threadName(), 1, Integer::sum);
        }
        for (int i = 0; i < 2; i++) {
            // The stop waited for each thread's first request: five events on its track, two on its queue's, a counter.
            assertTrue(eventsPerTrack.getOrDefault("demo worker " + i, 0) >= 5, eventsPerTrack.toString());
            assertTrue(eventsPerTrack.getOrDefault("queue " + i, 0) >= 2, eventsPerTrack.toString());
            assertTrue(eventsPerTrack.getOrDefault("queue depth " + i, 0) >= 1, eventsPerTrack.toString());
        }
        // The C producer's first iteration, written as soon as it was started: five events and the step's length.
        assertTrue(eventsPerTrack.getOrDefault("c producer main", 0) >= 5, eventsPerTrack.toString());
        assertTrue(eventsPerTrack.getOrDefault("c step length", 0) >= 1, eventsPerTrack.toString());
    }

    private Path shortDemoConfig() throws Exception {
        Path config = dir.resolve("short.pbtxt");
        Files.writeString(config, Files.readString(Path.of("../configs/demo.pbtxt"))
                .replace("duration_ms: 2000", "duration_ms: 600"));
        return config;
    }

    @Test
    void aCProducerProcessWritesItsOwnSequenceIntoTheSameTrace() throws Exception {
        Path trace = dir.resolve("c.pftrace");
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("record", "--config", shortDemoConfig().toString(),
                "--out", trace.toString(), "--threads", "2", "--c-producer");
        assertEquals(0, run.exit(), run.err() + run.out());
        Matcher started = Pattern.compile("c producer pid (\\d+) writes into its own SMB").matcher(run.out());
        assertTrue(started.find(), run.out());
        int cPid = Integer.parseInt(started.group(1));
        int jvmPid = (int) ProcessHandle.current().pid();
        assertNotEquals(jvmPid, cPid);
        Matcher summary = Pattern.compile("c producer pid " + cPid + ": ([\\d,]+) packets written, 0 iterations dropped "
                + "\\(SMB full\\), [\\d,]+ chunks moved\n").matcher(run.out());
        assertTrue(summary.find(), run.out());
        long written = Long.parseLong(summary.group(1).replace(",", ""));
        assertTrue(ProcessHandle.of(cPid).isEmpty(), "the C producer was waited for");

        byte[] bytes = Files.readAllBytes(trace);
        Set<Integer> cSequences = new HashSet<>();
        List<TracePacket> cPackets = new ArrayList<>();
        long jvmPackets = 0;
        for (TracePacket packet : Trace.parseFrom(bytes).getPacketList()) {
            if (packet.getTrustedPid() == cPid) {
                cSequences.add(packet.getTrustedPacketSequenceId());
                cPackets.add(packet);
            } else if (packet.getTrustedPid() == jvmPid) {
                jvmPackets++;
            }
        }
        assertEquals(1, cSequences.size(), "the C producer writes one sequence");
        assertEquals(written, cPackets.size(), "every packet the C producer wrote up to its stop is in the trace");
        // Each of the two threads' first request at least: seven events and a counter.
        assertTrue(jvmPackets >= 2 * 8, "the Java demo's packets are there too: " + jvmPackets);
        TracePacket first = cPackets.getFirst();
        assertTrue(first.getFirstPacketOnSequence());
        assertEquals(TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED_VALUE, first.getSequenceFlags());
        TrackDescriptor process = null;
        TrackDescriptor thread = null;
        TrackDescriptor counter = null;
        for (TracePacket packet : cPackets) {
            TrackDescriptor descriptor = packet.getTrackDescriptor();
            if (descriptor.hasProcess()) {
                process = descriptor;
            } else if (descriptor.hasThread()) {
                thread = descriptor;
            } else if (descriptor.hasCounter()) {
                counter = descriptor;
            }
        }
        assertNotNull(process);
        assertNotNull(thread);
        assertNotNull(counter);
        assertEquals(cPid, process.getProcess().getPid());
        assertEquals("ffmtrace c producer", process.getProcess().getProcessName());
        assertEquals(process.getUuid(), thread.getParentUuid());
        assertEquals(cPid, thread.getThread().getPid());
        assertTrue(thread.getThread().getTid() > 0 && thread.getThread().hasThreadName());

        TrackEventReader.Decoded decoded = TrackEventReader.read(MemorySegment.ofArray(bytes));
        assertEquals(0, decoded.undecodable());
        assertEquals(0, decoded.lossMarkers());
        Map<Long, Integer> depth = new HashMap<>();
        Map<String, Integer> cEvents = new HashMap<>();
        for (TrackEventReader.Event event : decoded.events()) {
            assertTrue(decoded.tracks().containsKey(event.trackUuid()), "every event's track is described");
            if (event.type() == TrackEvent.Type.TYPE_SLICE_BEGIN_VALUE) {
                depth.merge(event.trackUuid(), 1, Integer::sum);
            } else if (event.type() == TrackEvent.Type.TYPE_SLICE_END_VALUE) {
                assertTrue(depth.merge(event.trackUuid(), -1, Integer::sum) >= 0, "no end without a begin");
            }
            if (event.trackUuid() == thread.getUuid() && event.name() != null) {
                cEvents.merge(event.name(), 1, Integer::sum);
            } else if (event.trackUuid() == counter.getUuid()) {
                assertTrue(event.counterValue() != null && event.counterValue() > 0, "the C step's length in ns");
                cEvents.merge("counter", 1, Integer::sum);
            }
        }
        assertTrue(depth.values().stream().allMatch(d -> d == 0), "every slice on every track is closed: " + depth);
        // The counters data source samples at each of the service's flushes (250 ms) and at the stop.
        long heapSamples = decoded.events().stream().filter(event -> event.counterValue() != null
                && "JVM heap in use (bytes)".equals(decoded.tracks().get(event.trackUuid()).name())).count();
        assertTrue(heapSamples >= 2, "heap samples: " + heapSamples);
        assertEquals(0, depth.getOrDefault(thread.getUuid(), 0));
        int iterations = cEvents.getOrDefault("c work", 0);
        assertTrue(iterations >= 1, "the C producer writes an iteration as soon as it is started: " + cEvents);
        assertEquals(Map.of("c work", iterations, "c step", iterations, "c tick", iterations, "counter", iterations), cEvents);
        assertTrue(decoded.tracks().get(process.getUuid()).processName().equals("ffmtrace c producer"));
    }

    @Test
    void aCProducerThatCannotRunIsOneLineAndStatus2() throws Exception {
        Path missing = dir.resolve("no-such-program");
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("record", "--config", shortDemoConfig().toString(),
                "--out", dir.resolve("x.pftrace").toString(), "--c-producer=" + missing);
        assertEquals(2, run.exit());
        assertTrue(run.err().startsWith("ffmtrace record: no C producer program at " + missing + " ("), run.err());
        assertEquals(1, run.err().lines().count(), run.err());

        Path countersOnly = dir.resolve("counters.pbtxt");
        Files.writeString(countersOnly, "buffers { size_kb: 64 }\ndata_sources { config { name: \"counters\" } }\n");
        run = ConvertAndDumpTest.run("record", "--config", countersOnly.toString(),
                "--out", dir.resolve("y.pftrace").toString(), "--c-producer");
        assertEquals(2, run.exit());
        assertEquals("ffmtrace record: --c-producer: the config does not start data source \"track_event\", which the C producer writes\n",
                run.err());
    }

    @Test
    void aDataSourceNoProducerOffersIsAWarningOnStderr() throws Exception {
        Path config = dir.resolve("unknown.pbtxt");
        Files.writeString(config, "buffers { size_kb: 256 }\n"
                + "data_sources { config { name: \"track_event\" } }\n"
                + "data_sources { config { name: \"gpu.counters\" } }\n"
                + "duration_ms: 200\nflush_period_ms: 100\n");
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("record", "--config", config.toString(),
                "--out", dir.resolve("x.pftrace").toString(), "--threads", "1");
        assertEquals(0, run.exit(), run.err() + run.out());
        assertEquals("ffmtrace record: warning: data source \"gpu.counters\" (#1): no connected producer has registered it"
                + " (the session starts it when one does)\n", run.err());
    }

    @Test
    void anInvalidConfigIsRefusedWithItsReason() throws Exception {
        Path config = dir.resolve("bad.pbtxt");
        Files.writeString(config, "buffers { name: \"a\" size_kb: 64 }\nbuffers { name: \"a\" size_kb: 64 }\n");
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("record", "--config", config.toString(),
                "--out", dir.resolve("x.pftrace").toString());
        assertEquals(2, run.exit());
        assertEquals("ffmtrace record: " + config + ": invalid TraceConfig: duplicate buffer name \"a\": buffers #0 and #1\n", run.err());
    }
}
