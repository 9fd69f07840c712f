package dev.ffmtrace.tracing.service;

/**
 * A trigger as a session received it (Perfetto's TriggerInfo): what its {@code trigger}
 * packet says, and what a CLONE_SNAPSHOT session's consumer is told.
 *
 * @param bootTimeNanos when, on CLOCK_BOOTTIME
 * @param name          the trigger's name
 * @param producerName  the producer that activated it
 * @param producerUid   that producer's uid, from its connection
 * @param stopDelayMs   the trigger's {@code stop_delay_ms}
 */
public record TriggerHit(long bootTimeNanos, String name, String producerName, int producerUid, long stopDelayMs) {
}
