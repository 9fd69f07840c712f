package dev.ffmtrace.tracing.service;

import static dev.ffmtrace.tracing.service.DataSourceWarning.Reason.NAMED_TWICE;
import static dev.ffmtrace.tracing.service.DataSourceWarning.Reason.NOT_REGISTERED;
import static dev.ffmtrace.tracing.service.DataSourceWarning.Reason.TAKEN_BY_ANOTHER_SESSION;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.ByteArrayOutputStream;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A session says which of its data sources no producer writes into it, and why, at the moment it is asked. */
class SessionWarningsTest {
    @Test
    void aSessionWhoseDataSourcesAreAllStartedHasNoWarning() throws Exception {
        try (TracingService service = new TracingService()) {
            Producer producer = service.connectProducer(ProducerOptions.of("app"));
            producer.registerDataSource("track_event");
            producer.registerDataSource("counters");
            TracingSession session = service.startSession(TracingServiceTest.twoNamedBuffers());
            assertEquals(List.of(), session.warnings());
            assertEquals(0, session.dataSourcesNotStarted());
        }
    }

    @Test
    void aDataSourceNobodyRegisteredIsAWarningUntilAProducerRegistersIt() throws Exception {
        try (TracingService service = new TracingService()) {
            TracingSession session = service.startSession(TracingServiceTest.twoNamedBuffers());
            assertEquals(List.of(new DataSourceWarning("track_event", 0, NOT_REGISTERED),
                    new DataSourceWarning("counters", 1, NOT_REGISTERED)), session.warnings());
            assertEquals(2, session.dataSourcesNotStarted());
            assertEquals("data source \"counters\" (#1): no connected producer has registered it"
                    + " (the session starts it when one does)", session.warnings().get(1).message());

            Producer late = service.connectProducer(ProducerOptions.of("late"));
            late.registerDataSource("counters");
            assertEquals(List.of(new DataSourceWarning("track_event", 0, NOT_REGISTERED)), session.warnings());
            late.registerDataSource("track_event");
            assertEquals(List.of(), session.warnings());

            late.close();
            assertEquals(2, session.dataSourcesNotStarted(), "a producer that left offers nothing");
        }
    }

    @Test
    void aDataSourceAnotherSessionHasIsAWarningUntilThatSessionStops() throws Exception {
        try (TracingService service = new TracingService()) {
            Producer producer = service.connectProducer(ProducerOptions.of("app"));
            DataSource events = producer.registerDataSource("track_event");
            producer.registerDataSource("counters");
            TracingSession first = service.startSession(TracingServiceTest.twoNamedBuffers());
            TracingSession second = service.startSession(TracingServiceTest.twoNamedBuffers());
            assertEquals(List.of(), first.warnings());
            assertEquals(List.of(new DataSourceWarning("track_event", 0, TAKEN_BY_ANOTHER_SESSION),
                    new DataSourceWarning("counters", 1, TAKEN_BY_ANOTHER_SESSION)), second.warnings());
            assertEquals("data source \"track_event\" (#0): every producer that offers it serves as many other sessions as it can",
                    second.warnings().getFirst().message());

            first.close();
            assertEquals(List.of(), second.warnings(), "the waiting session got the data sources the first one released");
            try (TraceWriter<TracePacket> writer = events.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                writer.newTracePacket().setTimestamp(7);
                writer.finishTracePacket();
            }
            second.flush();
            assertEquals(1, second.writeTrace(new ByteArrayOutputStream()));
        }
    }

    @Test
    void aDataSourceNamedTwiceWritesOneBufferAndTheSecondEntryIsAWarning() throws Exception {
        SessionConfig config = SessionConfig.parse(SessionConfigTest.config(
                List.of(new SessionConfigTest.B(64, "a"), new SessionConfigTest.B(64, "b")),
                List.of(new SessionConfigTest.D("track_event", null, "a"), new SessionConfigTest.D("track_event", null, "b")),
                c -> { }));
        try (TracingService service = new TracingService()) {
            service.connectProducer(ProducerOptions.of("app")).registerDataSource("track_event");
            TracingSession session = service.startSession(config);
            assertEquals(List.of(new DataSourceWarning("track_event", 1, NAMED_TWICE)), session.warnings());
        }
    }

    @Test
    void aClosedSessionHasNoWarnings() throws Exception {
        try (TracingService service = new TracingService()) {
            TracingSession session = service.startSession(TracingServiceTest.twoNamedBuffers());
            assertFalse(session.warnings().isEmpty());
            session.close();
            assertTrue(session.warnings().isEmpty());
            assertEquals(0, session.dataSourcesNotStarted());
        }
    }
}
