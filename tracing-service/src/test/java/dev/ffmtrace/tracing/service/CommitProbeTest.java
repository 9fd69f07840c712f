package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.memory.testing.CPrograms;
import dev.ffmtrace.memory.testing.Peers;
import dev.ffmtrace.perfetto.protos.TestEvent;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.HeapBuffered;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The commit probe ({@code native/src/commit_probe.c}, what scripts/commit-latency runs
 * against traced and serve) through a {@link ProducerPort}: every chunk it commits comes
 * back, its report counts each one and orders its quantiles, and each commit's packet is
 * in the trace.
 */
class CommitProbeTest {
    private static final Pattern REPORT = Pattern.compile("P (\\d+) (\\d+) (\\d+) (\\d+) (\\d+) (\\d+) (\\d+)\n");
    private static final int PACKET_BYTES = 300;

    @Test
    void everyCommittedChunkComesBackAndItsPacketIsInTheTrace() throws Exception {
        UnixAddress address = UnixAddress.abstractName("ffmtrace-commit-probe-test-" + ProcessHandle.current().pid());
        HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
        config.get().addBuffers().setSizeKb(4 * 1024);
        config.get().addDataSources().setConfig().setName("ffmtrace.commit_probe");
        Peers.Peer probe = null;
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address)) {
            TracingSession session = service.startSession(SessionConfig.parse(config.toSegment()));
            probe = Peers.startNative(CPrograms.program("ffmtrace-commit-probe"), "--interval-us", "200",
                    "--packet-bytes", Integer.toString(PACKET_BYTES), address.toString());
            Await.until("the probe has committed 200 chunks", () -> port.chunksMoved() >= 200);
            session.stop();
            Matcher report = REPORT.matcher(probe.awaitSuccess());
            assertTrue(report.matches(), "the probe's report");
            long commits = Long.parseLong(report.group(1));
            assertTrue(commits >= 200, commits + " commits");
            assertEquals(0, Long.parseLong(report.group(2)), "chunks not back within a second");
            long previous = 1;
            for (int group = 3; group <= 7; group++) {
                long quantile = Long.parseLong(report.group(group));
                assertTrue(quantile >= previous, "quantiles ordered and positive: " + report.group());
                previous = quantile;
            }

            ByteArrayOutputStream trace = new ByteArrayOutputStream();
            session.writeTrace(trace);
            TracePacket.Decoder packet = new TracePacket.Decoder();
            TestEvent.Decoder event = new TestEvent.Decoder();
            long probePackets = 0;
            for (byte[] bytes : ProducerRemoteWriterTest.rawPackets(trace.toByteArray())) {
                packet.reset(MemorySegment.ofArray(bytes));
                if (packet.trustedPid() == probe.process().pid() && packet.forTesting(event)) {
                    assertEquals(PACKET_BYTES, event.str().length());
                    probePackets++;
                }
            }
            assertEquals(commits, probePackets, "one packet a commit, each in the trace");
            assertEquals(0, port.violations());
            assertEquals(0, port.abiViolations());
            session.close();
        } finally {
            if (probe != null) {
                probe.process().destroyForcibly();
            }
        }
    }
}
