package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import java.util.List;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** {@code trigger_config} as SessionConfig reads it: Perfetto's checks at EnableTracing, each refusal naming the field. */
class TriggerConfigTest {
    private static SessionConfig parse(Consumer<TraceConfig> more) throws InvalidConfigException {
        return SessionConfig.parse(SessionConfigTest.config(List.of(new SessionConfigTest.B(64, null)), List.of(), more));
    }

    private static String refusal(Consumer<TraceConfig> more) {
        return assertThrows(InvalidConfigException.class, () -> parse(more)).getMessage();
    }

    private static Consumer<TraceConfig> triggers(TraceConfig.TriggerConfig.TriggerMode mode, int timeoutMs,
                                                  Consumer<TraceConfig.TriggerConfig> more) {
        return config -> {
            TraceConfig.TriggerConfig triggers = config.setTriggerConfig();
            triggers.setTriggerMode(mode);
            triggers.setTriggerTimeoutMs(timeoutMs);
            more.accept(triggers);
        };
    }

    @Test
    void aConfigWithoutTriggersIgnoresThem() throws Exception {
        SessionConfig config = parse(c -> c.setDurationMs(500));
        assertEquals(TriggerConfig.NONE, config.triggerConfig());
        assertEquals(500, config.effectiveDurationMs());
    }

    @Test
    void triggersAreReadWithEveryField() throws Exception {
        SessionConfig config = parse(triggers(TraceConfig.TriggerConfig.TriggerMode.STOP_TRACING, 30_000, t -> {
            TraceConfig.TriggerConfig.Trigger crash = t.addTriggers();
            crash.setName("crash");
            crash.setProducerNameRegex("com\\.example\\..*");
            crash.setStopDelayMs(250);
            crash.setMaxPer24H(3);
            crash.setSkipProbability(0.25);
            t.addTriggers().setName("jank");
        }).andThen(c -> c.setDurationMs(5_000)));
        TriggerConfig triggers = config.triggerConfig();
        assertEquals(TriggerConfig.Mode.STOP_TRACING, triggers.mode());
        assertEquals(30_000, triggers.timeoutMs());
        TriggerConfig.Trigger crash = triggers.trigger("crash");
        assertEquals(250, crash.stopDelayMs());
        assertEquals(3, crash.maxPer24h());
        assertEquals(0.25, crash.skipProbability());
        assertTrue(crash.acceptsProducer("com.example.app"));
        assertEquals(false, crash.acceptsProducer("xcom.example.app"), "the whole name must match");
        assertTrue(triggers.trigger("jank").acceptsProducer("anyone"));
        assertNull(triggers.trigger("other"));
        // As Perfetto's service: a STOP_TRACING session waits trigger_timeout_ms, whatever duration_ms says.
        assertEquals(30_000, config.effectiveDurationMs());
    }

    @Test
    void useCloneSnapshotIfAvailableMakesAStopTracingConfigACloneSnapshotOne() throws Exception {
        SessionConfig config = parse(triggers(TraceConfig.TriggerConfig.TriggerMode.STOP_TRACING, 1000, t -> {
            t.setUseCloneSnapshotIfAvailable(true);
            t.addTriggers().setName("snap");
        }));
        assertEquals(TriggerConfig.Mode.CLONE_SNAPSHOT, config.triggerConfig().mode());
        assertEquals("trigger_config: trigger_mode must be STOP_TRACING with use_clone_snapshot_if_available",
                refusal(triggers(TraceConfig.TriggerConfig.TriggerMode.START_TRACING, 1000,
                        t -> t.setUseCloneSnapshotIfAvailable(true))));
    }

    @Test
    void aModeNeedsATimeoutOfAtMostSevenDaysOrADayWithGuardrails() throws Exception {
        assertEquals("trigger_config: a START_TRACING session needs a trigger_timeout_ms in (0, 604800000], got 0",
                refusal(triggers(TraceConfig.TriggerConfig.TriggerMode.START_TRACING, 0, t -> { })));
        assertEquals("trigger_config: a STOP_TRACING session needs a trigger_timeout_ms in (0, 86400000], got 86400001",
                refusal(triggers(TraceConfig.TriggerConfig.TriggerMode.STOP_TRACING, 86_400_001, t -> { })
                        .andThen(c -> c.setEnableExtraGuardrails(true))));
        assertEquals(604_800_000, parse(triggers(TraceConfig.TriggerConfig.TriggerMode.CLONE_SNAPSHOT, 604_800_000,
                t -> { })).triggerConfig().timeoutMs());
        // No mode, no timeout needed: the triggers are only recorded.
        assertEquals(TriggerConfig.Mode.UNSPECIFIED, parse(c -> c.setTriggerConfig().addTriggers().setName("t"))
                .triggerConfig().mode());
    }

    @Test
    void malformedTriggerConfigsAreRefusedNamingTheField() {
        assertEquals("trigger_config has an unknown trigger_mode 3", refusal(c -> c.setTriggerConfig()
                .appendVarInt(TraceConfig.TriggerConfig.TRIGGER_MODE_FIELD_NUMBER, 3)));
        assertEquals("trigger_config.triggers[1] has no valid name", refusal(triggers(
                TraceConfig.TriggerConfig.TriggerMode.STOP_TRACING, 1000, t -> {
                    t.addTriggers().setName("a");
                    t.addTriggers().setStopDelayMs(5);
                })));
        assertTrue(refusal(triggers(TraceConfig.TriggerConfig.TriggerMode.STOP_TRACING, 1000,
                t -> {
                    TraceConfig.TriggerConfig.Trigger bad = t.addTriggers();
                    bad.setName("a");
                    bad.setProducerNameRegex("(");
                }))
                .startsWith("trigger_config.triggers[0] \"a\": producer_name_regex does not compile: "));
        assertEquals("trigger_mode STOP_TRACING and write_into_file together are not supported (nor are they by Perfetto)",
                refusal(triggers(TraceConfig.TriggerConfig.TriggerMode.STOP_TRACING, 1000, t -> { })
                        .andThen(c -> c.setWriteIntoFile(true))));
    }

    @Test
    void theBuilderWritesWhatParseReads() throws Exception {
        TriggerConfig triggers = new TriggerConfig(TriggerConfig.Mode.STOP_TRACING, List.of(
                new TriggerConfig.Trigger("crash", Pattern.compile("app-.*"), 100, 2, 0.5),
                new TriggerConfig.Trigger("jank", null, 0, 0, 0)), 10_000);
        SessionConfig config = SessionConfig.builder().buffer(64, OverwritePolicy.RING_BUFFER)
                .triggerConfig(triggers).build();
        TriggerConfig read = config.triggerConfig();
        assertEquals(triggers.mode(), read.mode());
        assertEquals(triggers.timeoutMs(), read.timeoutMs());
        assertEquals(2, read.triggers().size());
        TriggerConfig.Trigger crash = read.trigger("crash");
        assertEquals("app-.*", crash.producerNameRegex().pattern());
        assertEquals(List.of(100L, 2L, 0.5), List.of(crash.stopDelayMs(), crash.maxPer24h(), crash.skipProbability()));
        assertEquals(triggers.triggers().get(1), read.trigger("jank"));
    }
}
