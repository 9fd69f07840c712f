package dev.ffmtrace.tracing.service;

import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A session's {@code trigger_config}: what named triggers, activated by producers
 * ({@code ActivateTriggers}), do to it.
 *
 * @param mode      what the first trigger does
 * @param triggers  the triggers the session listens to
 * @param timeoutMs {@code trigger_timeout_ms}: how long the session waits for one; a
 *                  STOP_TRACING session that none reached stops then, and its trace holds
 *                  nothing
 */
public record TriggerConfig(Mode mode, List<Trigger> triggers, long timeoutMs) {
    /** No trigger config: the session ignores triggers. */
    public static final TriggerConfig NONE = new TriggerConfig(Mode.UNSPECIFIED, List.of(), 0);

    public TriggerConfig {
        Objects.requireNonNull(mode, "mode");
        triggers = List.copyOf(triggers);
    }

    /** Perfetto's {@code TriggerMode}, with {@code use_clone_snapshot_if_available} applied. */
    public enum Mode {
        /** Triggers are recorded, and only a session that got one returns data. */
        UNSPECIFIED,
        /** The data sources start on the first trigger; the session then records {@code stop_delay_ms}. */
        START_TRACING,
        /** The session records until a trigger, then {@code stop_delay_ms} more. */
        STOP_TRACING,
        /** A trigger asks the session's consumer to clone it, {@code stop_delay_ms} later. */
        CLONE_SNAPSHOT
    }

    /**
     * One trigger the session listens to.
     *
     * @param name              the name a producer activates
     * @param producerNameRegex if not null, only producers whose whole name it matches
     * @param stopDelayMs       {@code stop_delay_ms}: from the trigger to the stop (or the
     *                          clone), or the recording time after a START_TRACING trigger
     * @param maxPer24h         {@code max_per_24_h}: at most so many activations of this name
     *                          act in a rolling day, service-wide (0: no limit)
     * @param skipProbability   {@code skip_probability}: the chance an activation is ignored
     */
    public record Trigger(String name, Pattern producerNameRegex, long stopDelayMs, long maxPer24h,
                          double skipProbability) {
        public Trigger {
            Objects.requireNonNull(name, "name");
        }

        /** Whether a producer named {@code producerName} may activate this trigger. */
        public boolean acceptsProducer(String producerName) {
            return producerNameRegex == null || producerNameRegex.matcher(producerName).matches();
        }
    }

    /** The trigger named {@code name}, or null if the session does not listen to it. */
    public Trigger trigger(String name) {
        for (Trigger trigger : triggers) {
            if (trigger.name().equals(name)) {
                return trigger;
            }
        }
        return null;
    }

    /** Whether the session returns data only once a trigger came: it lists triggers. */
    public boolean waitsForTrigger() {
        return !triggers.isEmpty();
    }
}
