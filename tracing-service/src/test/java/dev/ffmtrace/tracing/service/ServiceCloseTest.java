package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.tracing.buffer.TraceBufferStats;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.ByteArrayOutputStream;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Closing the service, its sessions and its producers, in order, once, and what each does afterwards. */
class ServiceCloseTest {
    @Test
    void closingTheServiceClosesItsSessionsThenItsProducers() throws Exception {
        TracingService service = new TracingService();
        Producer producer = service.connectProducer(ProducerOptions.of("app"));
        DataSource events = producer.registerDataSource("track_event");
        TracingSession session = service.startSession(TracingServiceTest.twoNamedBuffers());
        try (TraceWriter<TracePacket> writer = events.newTraceWriter(BufferExhaustedPolicy.STALL)) {
            writer.newTracePacket().setTimestamp(1);
            writer.finishTracePacket();
        }
        session.flush();
        service.close();
        assertTrue(service.isClosed());
        assertTrue(session.isClosed());
        assertTrue(producer.isClosed());
        assertFalse(events.isStarted());
        assertEquals(0, producer.abiViolations(), "the producer closed after the session: its last flush went nowhere");
        assertEquals(1, session.stats().getFirst().chunksWritten(), "stats as they were when the session closed");

        service.close();
        assertEquals("connectProducer() called on a closed tracing service",
                assertThrows(IllegalStateException.class, () -> service.connectProducer(ProducerOptions.of("x"))).getMessage());
        assertEquals("startSession() called on a closed tracing service",
                assertThrows(IllegalStateException.class,
                        () -> service.startSession(TracingServiceTest.twoNamedBuffers())).getMessage());
    }

    @Test
    void aClosedSessionAnswersQueriesAndRefusesTheOwnersCalls() throws Exception {
        try (TracingService service = new TracingService()) {
            Producer producer = service.connectProducer(ProducerOptions.of("app"));
            DataSource events = producer.registerDataSource("track_event");
            TracingSession session = service.startSession(TracingServiceTest.twoNamedBuffers());
            List<TraceBufferStats> before = session.stats();
            session.close();
            session.close();
            assertTrue(session.isClosed());
            assertFalse(events.isStarted());
            assertEquals(before, session.stats());
            assertEquals(List.of(), session.warnings());
            assertEquals(2, session.config().buffers().size());
            assertEquals("flush() called on a closed tracing session",
                    assertThrows(IllegalStateException.class, session::flush).getMessage());
            assertEquals("writeTrace() called on a closed tracing session",
                    assertThrows(IllegalStateException.class, () -> session.writeTrace(new ByteArrayOutputStream())).getMessage());
            assertEquals("writeSnapshot() called on a closed tracing session",
                    assertThrows(IllegalStateException.class, () -> session.writeSnapshot(new ByteArrayOutputStream())).getMessage());
            assertEquals("clearIncrementalState() called on a closed tracing session",
                    assertThrows(IllegalStateException.class, session::clearIncrementalState).getMessage());
        }
    }

    @Test
    void closingAProducerWhileASessionRunsKeepsWhatItWroteAndStopsItsDataSources() throws Exception {
        try (TracingService service = new TracingService()) {
            Producer leaving = service.connectProducer(ProducerOptions.of("leaving"));
            Producer staying = service.connectProducer(ProducerOptions.of("staying"));
            DataSource leavingEvents = leaving.registerDataSource("track_event");
            DataSource stayingCounters = staying.registerDataSource("counters");
            TracingSession session = service.startSession(TracingServiceTest.twoNamedBuffers());
            try (TraceWriter<TracePacket> writer = leavingEvents.newTraceWriter(BufferExhaustedPolicy.STALL);
                 TraceWriter<TracePacket> counters = stayingCounters.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                for (int i = 0; i < 10; i++) {
                    writer.newTracePacket().setTimestamp(i);
                    writer.finishTracePacket();
                }
                leaving.close();
                leaving.close();
                assertTrue(leaving.isClosed());
                assertFalse(leavingEvents.isStarted());
                assertEquals(List.of(new DataSourceWarning("track_event", 0, DataSourceWarning.Reason.NOT_REGISTERED)),
                        session.warnings());
                assertFalse(leaving.registerDataSource("more").isStarted(), "a closed producer's data sources never start");

                // A writer still open neither fails nor reaches the session: its chunks are freed,
                // so it can write several SMBs' worth without ever waiting for a chunk.
                for (int i = 0; i < 100_000; i++) {
                    writer.newTracePacket().setTimestamp(1L << 40 | i);
                    writer.finishTracePacket();
                }
                writer.flush();
                assertTrue(leaving.arbiter().stats().chunksAcquired() > 2 * leaving.arbiter().numPages());
                assertEquals(0, leaving.arbiter().stats().stalls());
                assertEquals(0, leaving.arbiter().stats().exhaustions());
                counters.newTracePacket().setTimestamp(5);
                counters.finishTracePacket();
                session.flush();
                assertEquals(11, session.writeTrace(new ByteArrayOutputStream()),
                        "the 10 packets flushed when the producer closed, and the other producer's");
                assertEquals(0, leaving.abiViolations());
            }
        }
    }

    @Test
    void aWriterThatOutlivesItsSessionIsNoViolationButAForeignBufferIs() throws Exception {
        try (TracingService service = new TracingService()) {
            Producer producer = service.connectProducer(ProducerOptions.of("app"));
            DataSource events = producer.registerDataSource("track_event");
            TracingSession session = service.startSession(TracingServiceTest.twoNamedBuffers());
            try (TraceWriter<TracePacket> late = events.newTraceWriter(BufferExhaustedPolicy.STALL);
                 TraceWriter<TracePacket> rogue = producer.arbiter().createTraceWriter(99, BufferExhaustedPolicy.DROP)) {
                late.newTracePacket().setTimestamp(1);
                late.finishTracePacket();
                session.close();
                late.flush();
                assertEquals(0, producer.abiViolations(), "a commit into the buffer of a session that stopped is dropped");

                rogue.newTracePacket().setTimestamp(2);
                rogue.finishTracePacket();
                rogue.flush();
                assertEquals(1, producer.abiViolations(), "buffer 99 was never this producer's");
            }
        }
    }
}
