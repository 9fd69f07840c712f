package dev.ffmtrace.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.perfetto.protos.LayersSnapshotProto;
import dev.ffmtrace.perfetto.protos.ProtoVms;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TransactionTraceEntry;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.sdk.DataSource;
import dev.ffmtrace.tracing.sdk.Tracing;
import dev.ffmtrace.tracing.sdk.TracingOptions;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@link ProtoVmDeltas}' program and packets through a ring buffer too small for them: the
 * trace's {@code protovms} state is the overwritten layers snapshot with the vsync id and
 * the time of the last transaction the ring overwrote.
 */
class ProtoVmDeltasTest {
    private static final int DELTAS = 3000;

    @Test
    void theStateIsTheOverwrittenSnapshotUpdatedByTheOverwrittenTransactions() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch stopped = new CountDownLatch(1);
        DataSource<Void> source = ProtoVmDeltas.register(started, stopped);
        ByteArrayOutputStream trace = new ByteArrayOutputStream();
        try (TracingService service = new TracingService()) {
            Tracing.initialize(TracingOptions.named("deltas").withInProcessBackend(service));
            assertTrue(Tracing.awaitRegistrations(Duration.ofSeconds(10)));
            TracingSession session = service.startSession(SessionConfig.builder()
                    .buffer(16, OverwritePolicy.RING_BUFFER).dataSourceWithProtoVm(ProtoVmDeltas.DATA_SOURCE, 0, 64)
                    .build());
            assertTrue(started.await(10, TimeUnit.SECONDS));
            ProtoVmDeltas.write(source, DELTAS);
            session.stop();
            assertTrue(stopped.await(10, TimeUnit.SECONDS));
            session.writeTrace(trace);
            session.close();
        } finally {
            source.unregister();
            Tracing.shutdown();
        }

        Trace.Decoder decoder = new Trace.Decoder();
        decoder.reset(MemorySegment.ofArray(trace.toByteArray()));
        RepeatedFieldIterator packets = decoder.packet(new RepeatedFieldIterator());
        TracePacket.Decoder packet = new TracePacket.Decoder();
        TransactionTraceEntry.Decoder delta = new TransactionTraceEntry.Decoder();
        String state = null;
        long first = -1;
        while (packets.next()) {
            packet.reset(packets.field());
            ProtoVms.Decoder vms = new ProtoVms.Decoder();
            if (packet.protovms(vms)) {
                ProtoVms.Instance.Decoder instance = new ProtoVms.Instance.Decoder();
                RepeatedFieldIterator instances = vms.instance(new RepeatedFieldIterator());
                assertTrue(instances.next());
                instance.reset(instances.field());
                TracePacket.Decoder statePacket = new TracePacket.Decoder();
                LayersSnapshotProto.Decoder snapshot = new LayersSnapshotProto.Decoder();
                assertTrue(instance.state(statePacket) && statePacket.surfaceflingerLayersSnapshot(snapshot));
                state = statePacket.timestamp() + " " + snapshot.vsyncId() + " " + snapshot.where();
            } else if (first < 0 && packet.surfaceflingerTransactions(delta)) {
                first = delta.vsyncId() - 20_000;
            }
        }
        assertTrue(first > 0, "the ring overwrote the snapshot and some transactions");
        long last = first - 1;
        assertEquals((2_700_000_000_000L + 1_000L * last) + " " + (20_000 + last) + " " + ProtoVmDeltas.WHERE, state);
    }
}
