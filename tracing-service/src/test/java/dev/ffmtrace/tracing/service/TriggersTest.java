package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.Trigger;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Which sessions a trigger reaches, as Perfetto's ActivateTriggers decides: by name and
 * producer, then {@code skip_probability}, then {@code max_per_24_h} over a rolling day;
 * with the draws and the clock in the test's hands. What reached a session is read back
 * from its trace's {@code trigger} packets.
 */
class TriggersTest {
    private static final long HOUR_NANOS = TimeUnit.HOURS.toNanos(1);

    /** A trigger packet as the trace holds it. */
    record Seen(long timestamp, String name, String producer, int uid, long stopDelayMs, int sequenceId) {
    }

    static List<Seen> triggersIn(byte[] trace) {
        Trace.Decoder decoder = new Trace.Decoder();
        decoder.reset(MemorySegment.ofArray(trace));
        RepeatedFieldIterator packets = decoder.packet(new RepeatedFieldIterator());
        TracePacket.Decoder packet = new TracePacket.Decoder();
        Trigger.Decoder trigger = new Trigger.Decoder();
        List<Seen> seen = new ArrayList<>();
        while (packets.next()) {
            packet.reset(packets.field());
            if (packet.trigger(trigger)) {
                seen.add(new Seen(packet.timestamp(), trigger.triggerName(), trigger.producerName(),
                        trigger.trustedProducerUid(), trigger.stopDelayMs(), packet.trustedPacketSequenceId()));
            }
        }
        return seen;
    }

    private static byte[] snapshot(TracingSession session) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        session.writeSnapshot(out);
        return out.toByteArray();
    }

    /** A session that only records triggers (no mode), listening to {@code triggers}. */
    private static TracingSession recording(TracingService service, TriggerConfig.Trigger... triggers)
            throws InvalidConfigException {
        return service.startSession(SessionConfig.builder().buffer(64, OverwritePolicy.RING_BUFFER)
                .triggerConfig(new TriggerConfig(TriggerConfig.Mode.UNSPECIFIED, List.of(triggers), 0)).build());
    }

    private static List<String> names(TracingSession session) throws Exception {
        return triggersIn(snapshot(session)).stream().map(Seen::name).toList();
    }

    @Test
    void aTriggerReachesTheSessionsThatListenToItFromProducersTheyAccept() throws Exception {
        AtomicLong clock = new AtomicLong(HOUR_NANOS);
        Triggers triggers = new Triggers(() -> 0.5, clock::get);
        try (TracingService service = new TracingService()) {
            TracingSession crashes = recording(service, new TriggerConfig.Trigger("crash", null, 7, 0, 0));
            TracingSession fromApps = recording(service,
                    new TriggerConfig.Trigger("crash", Pattern.compile("app-\\d+"), 0, 0, 0));
            TracingSession other = recording(service, new TriggerConfig.Trigger("jank", null, 0, 0, 0));
            List<TracingSession> sessions = List.of(crashes, fromApps, other);

            triggers.activate(sessions, "app-1", 1234, List.of("crash"));
            triggers.activate(sessions, "daemon", 99, List.of("crash", "unknown"));

            List<Seen> seen = triggersIn(snapshot(crashes));
            assertEquals(List.of(new Seen(HOUR_NANOS, "crash", "app-1", 1234, 7, TracingSession.SERVICE_SEQUENCE_ID),
                    new Seen(HOUR_NANOS, "crash", "daemon", 99, 7, TracingSession.SERVICE_SEQUENCE_ID)), seen);
            assertEquals(List.of("crash"), names(fromApps), "only app-N producers reach it");
            assertEquals(List.of(), names(other));
            assertEquals(new TriggerStats(3, 1, 0, 0), triggers.stats(), "\"unknown\" reached no session");
        }
    }

    @Test
    void skipProbabilityIsDrawnPerSessionBeforeTheDailyLimit() throws Exception {
        double[] draw = {0.3};
        Triggers triggers = new Triggers(() -> draw[0], () -> HOUR_NANOS);
        try (TracingService service = new TracingService()) {
            TracingSession session = recording(service, new TriggerConfig.Trigger("t", null, 0, 1, 0.4));
            triggers.activate(List.of(session), "p", 1, List.of("t"));
            assertEquals(List.of(), names(session), "a draw under skip_probability skips");
            draw[0] = 0.4;
            triggers.activate(List.of(session), "p", 1, List.of("t"));
            assertEquals(List.of("t"), names(session), "a draw at skip_probability goes through");
            // The skipped one did not count against max_per_24_h = 1, the one that acted does.
            triggers.activate(List.of(session), "p", 1, List.of("t"));
            assertEquals(List.of("t"), names(session));
            assertEquals(new TriggerStats(3, 2, 1, 1), triggers.stats());
        }
    }

    @Test
    void maxPer24hCountsTheNameServiceWideOverARollingDay() throws Exception {
        AtomicLong clock = new AtomicLong(HOUR_NANOS);
        Triggers triggers = new Triggers(() -> 0, clock::get);
        try (TracingService service = new TracingService()) {
            TracingSession limited = recording(service, new TriggerConfig.Trigger("t", null, 0, 2, 0));
            TracingSession unlimited = recording(service, new TriggerConfig.Trigger("t", null, 0, 0, 0));
            List<TracingSession> sessions = List.of(limited, unlimited);
            triggers.activate(sessions, "p", 1, List.of("t"));
            clock.addAndGet(HOUR_NANOS);
            triggers.activate(sessions, "p", 1, List.of("t"));
            clock.addAndGet(HOUR_NANOS);
            triggers.activate(sessions, "p", 1, List.of("t"));
            assertEquals(2, names(limited).size(), "the third within a day is refused");
            assertEquals(3, names(unlimited).size());
            // Just over 24 h after the first, two are in the window (the third acted on the
            // other session, and the count is the name's, service-wide): still refused.
            clock.set(HOUR_NANOS + TimeUnit.HOURS.toNanos(24) + 1);
            triggers.activate(sessions, "p", 1, List.of("t"));
            assertEquals(2, names(limited).size());
            // Once the first two have left the window, one more may act, and then no more.
            clock.set(3 * HOUR_NANOS + TimeUnit.HOURS.toNanos(24) + 1);
            triggers.activate(sessions, "p", 1, List.of("t"));
            assertEquals(3, names(limited).size());
            triggers.activate(sessions, "p", 1, List.of("t"));
            assertEquals(3, names(limited).size());
            assertEquals(6, names(unlimited).size());
            assertEquals(new TriggerStats(6, 0, 0, 3), triggers.stats());
        }
    }

    @Test
    void aStoppedSessionHearsNoTrigger() throws Exception {
        Triggers triggers = new Triggers(() -> 0, () -> HOUR_NANOS);
        try (TracingService service = new TracingService()) {
            TracingSession session = recording(service, new TriggerConfig.Trigger("t", null, 0, 0, 0));
            session.stop();
            triggers.activate(List.of(session), "p", 1, List.of("t"));
            assertEquals(new TriggerStats(1, 1, 0, 0), triggers.stats());
            assertFalse(session.isClosed());
        }
    }

    @Test
    void aSessionKeepsAThousandTriggersAndCountsTheRest() throws Exception {
        Triggers triggers = new Triggers(() -> 0, () -> HOUR_NANOS);
        try (TracingService service = new TracingService()) {
            TracingSession session = recording(service, new TriggerConfig.Trigger("t", null, 0, 0, 0));
            List<String> many = java.util.Collections.nCopies(SessionTriggers.MAX_RECORDED + 5, "t");
            triggers.activate(List.of(session), "p", 1, many);
            assertEquals(SessionTriggers.MAX_RECORDED, names(session).size());
            assertEquals(5, session.triggersNotRecorded());
        }
    }

    @Test
    void theRealClockStampsTriggersOnBoottime() throws Exception {
        Triggers triggers = new Triggers();
        try (TracingService service = new TracingService()) {
            TracingSession session = recording(service, new TriggerConfig.Trigger("t", null, 0, 0, 0));
            long before = Os.clockNanos(Os.CLOCK_BOOTTIME);
            triggers.activate(List.of(session), "p", 1, List.of("t"));
            long after = Os.clockNanos(Os.CLOCK_BOOTTIME);
            long at = triggersIn(snapshot(session)).getFirst().timestamp();
            assertTrue(at >= before && at <= after, before + " <= " + at + " <= " + after);
        }
    }
}
