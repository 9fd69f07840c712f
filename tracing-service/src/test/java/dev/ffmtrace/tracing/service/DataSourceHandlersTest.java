package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.perfetto.protos.DataSourceConfig;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** An in-process data source's start and flush handlers. */
class DataSourceHandlersTest {
    @Test
    void theStartHandlerGetsTheDataSourceConfigWithTheServicesFields() throws Exception {
        try (TracingService service = new TracingService()) {
            DataSource source = service.connectProducer(ProducerOptions.of("app")).registerDataSource("profiler");
            List<byte[]> configs = new ArrayList<>();
            source.onStart(configs::add);
            try (TracingSession session = service.startSession(SessionConfig.builder()
                    .buffer("main", 64, OverwritePolicy.RING_BUFFER).dataSource("profiler").build())) {
                assertEquals(1, configs.size());
                DataSourceConfig.Decoder config = new DataSourceConfig.Decoder();
                config.reset(MemorySegment.ofArray(configs.getFirst()));
                assertFalse(config.hasError());
                assertEquals("profiler", config.name());
                assertEquals(session.id(), config.tracingSessionId());
                assertTrue(config.targetBuffer() > 0);
            }
        }
    }

    @Test
    void aPacketTheFlushHandlerWritesIsInTheTraceAfterThatFlushAndAtStop() throws Exception {
        try (TracingService service = new TracingService()) {
            DataSource source = service.connectProducer(ProducerOptions.of("app")).registerDataSource("profiler");
            DataSource idle = service.connectProducer(ProducerOptions.of("other")).registerDataSource("unused");
            AtomicInteger idleFlushes = new AtomicInteger();
            idle.onFlush(idleFlushes::incrementAndGet);
            AtomicInteger flushes = new AtomicInteger();
            source.onFlush(() -> {
                try (TraceWriter<TracePacket> writer = source.newTraceWriter(BufferExhaustedPolicy.DROP)) {
                    writer.newTracePacket().setTimestamp(flushes.incrementAndGet());
                    writer.finishTracePacket();
                }
            });
            try (TracingSession session = service.startSession(SessionConfig.builder()
                    .buffer("main", 64, OverwritePolicy.RING_BUFFER).dataSource("profiler").build())) {
                session.flush();
                assertEquals(List.of(1L), timestamps(session));
                session.stop();
                assertEquals(List.of(1L, 2L), timestamps(session));
                assertEquals(2, flushes.get());
                assertEquals(0, idleFlushes.get(), "a data source no session started is not flushed");
            }
        }
    }

    @Test
    void aFlushHandlerThatThrowsDoesNotFailTheFlush() throws Exception {
        try (TracingService service = new TracingService()) {
            DataSource source = service.connectProducer(ProducerOptions.of("app")).registerDataSource("profiler");
            source.onFlush(() -> {
                throw new IllegalStateException("broken");
            });
            try (TracingSession session = service.startSession(SessionConfig.builder()
                    .buffer("main", 64, OverwritePolicy.RING_BUFFER).dataSource("profiler").build())) {
                session.flush();
                assertFalse(session.isStopped());
            }
        }
    }

    private static List<Long> timestamps(TracingSession session) throws Exception {
        ByteArrayOutputStream trace = new ByteArrayOutputStream();
        session.writeSnapshot(trace);
        List<Long> out = new ArrayList<>();
        TracePacket.Decoder packet = new TracePacket.Decoder();
        for (byte[] raw : ProducerRemoteWriterTest.rawPackets(trace.toByteArray())) {
            packet.reset(MemorySegment.ofArray(raw));
            if (packet.hasTimestamp() && packet.trustedPacketSequenceId() != TracingSession.SERVICE_SEQUENCE_ID) {
                out.add(packet.timestamp());
            }
        }
        return out;
    }
}
