package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import dev.ffmtrace.perfetto.protos.TracingServiceEvent;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.buffer.TraceBufferStats;
import dev.ffmtrace.tracing.buffer.TraceBufferV2;
import java.util.List;
import org.junit.jupiter.api.Test;

class ServicePacketsTest {
    /** An encoder reused after packets larger than its first slice writes each packet as a new one does. */
    @Test
    void aReusedEncoderWritesTheBytesOfAFreshOne() throws Exception {
        SessionConfigBuilder builder = SessionConfig.builder().buffer(64, OverwritePolicy.RING_BUFFER);
        for (int i = 0; i < 300; i++) {
            builder.dataSource("data.source." + i);
        }
        SessionConfig config = builder.build();
        TriggerHit hit = new TriggerHit(42, "trigger", "producer", 1000, 5);
        try (TraceBufferV2 buffer = TraceBufferV2.allocate(4096, OverwritePolicy.RING_BUFFER)) {
            List<TraceBufferStats> stats = List.of(buffer.stats(), buffer.stats());
            TracingService.ProducerCounts producers = new TracingService.ProducerCounts(2, 3);
            ServicePackets reused = new ServicePackets();
            for (int round = 0; round < 2; round++) {
                assertArrayEquals(new ServicePackets().traceConfig(config).toByteArray(),
                        reused.traceConfig(config).toByteArray());
                assertArrayEquals(new ServicePackets().traceUuid(1, 2).toByteArray(),
                        reused.traceUuid(1, 2).toByteArray());
                assertArrayEquals(new ServicePackets().serviceEvent(
                                TracingServiceEvent.TRACING_STARTED_FIELD_NUMBER, 7).toByteArray(),
                        reused.serviceEvent(TracingServiceEvent.TRACING_STARTED_FIELD_NUMBER, 7).toByteArray());
                assertArrayEquals(new ServicePackets().trigger(hit).toByteArray(), reused.trigger(hit).toByteArray());
                assertArrayEquals(new ServicePackets().cloneSnapshotTrigger(hit).toByteArray(),
                        reused.cloneSnapshotTrigger(hit).toByteArray());
                assertArrayEquals(new ServicePackets().stats(stats, 4, 5, producers).toByteArray(),
                        reused.stats(stats, 4, 5, producers).toByteArray());
            }
        }
    }
}
