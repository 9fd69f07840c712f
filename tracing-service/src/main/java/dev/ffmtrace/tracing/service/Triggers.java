package dev.ffmtrace.tracing.service;

import dev.ffmtrace.memory.Os;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;

/**
 * Producers' triggers, as Perfetto's service takes {@code ActivateTriggers}: each name
 * reaches every running session whose {@code trigger_config} lists it, unless the
 * trigger does not accept the producer ({@code producer_name_regex}), a draw falls under
 * its {@code skip_probability}, or the name already acted {@code max_per_24_h} times in
 * the last 24 hours (counted service-wide, as Perfetto counts). Whatever it ignores is
 * counted in {@link #stats()}, never thrown.
 *
 * <p>The count of a name's activations is kept up to {@value #MAX_COUNTED_PER_NAME}
 * within the day: a {@code max_per_24_h} above that never trips, rather than the memory
 * growing with a producer that fires in a loop. Only names some session listened to are
 * counted, so the names are as many as the configs have named.
 */
final class Triggers {
    static final int MAX_COUNTED_PER_NAME = 10_000;
    private static final long DAY_NANOS = 24L * 3600 * 1_000_000_000L;

    private final DoubleSupplier random;
    private final LongSupplier bootClock;
    /** Per name, when it acted within the last day, oldest first. Guarded by this. */
    private final Map<String, ArrayDeque<Long>> history = new HashMap<>();
    private long activations;
    private long noEffect;
    private long skipped;
    private long overDailyLimit;

    /** Draws from {@link ThreadLocalRandom} and reads CLOCK_BOOTTIME, as Perfetto's service does. */
    Triggers() {
        this(() -> ThreadLocalRandom.current().nextDouble(), () -> Os.clockNanos(Os.CLOCK_BOOTTIME));
    }

    /** With the draws in [0, 1) and the clock given, for tests. */
    Triggers(DoubleSupplier random, LongSupplier bootClock) {
        this.random = random;
        this.bootClock = bootClock;
    }

    /** Hands each of {@code names} to the sessions it reaches, in the order given. */
    synchronized void activate(List<TracingSession> sessions, String producerName, int producerUid,
                               List<String> names) {
        for (String name : names) {
            activations++;
            long now = bootClock.getAsLong();
            int actedToday = purgeAndCount(name, now);
            boolean matched = false;
            for (TracingSession session : sessions) {
                TriggerConfig.Trigger trigger = session.config().triggerConfig().trigger(name);
                if (trigger == null || session.isStopped() || !trigger.acceptsProducer(producerName)) {
                    continue;
                }
                if (random.getAsDouble() < trigger.skipProbability()) {
                    skipped++;
                    continue;
                }
                if (trigger.maxPer24h() > 0 && actedToday >= trigger.maxPer24h()) {
                    overDailyLimit++;
                    continue;
                }
                matched = true;
                session.triggerReceived(new TriggerHit(now, name, producerName, producerUid,
                        trigger.stopDelayMs()));
            }
            if (matched) {
                remember(name, now);
            } else {
                noEffect++;
            }
        }
    }

    synchronized TriggerStats stats() {
        return new TriggerStats(activations, noEffect, skipped, overDailyLimit);
    }

    /** Forgets {@code name}'s activations older than a day; returns how many are left. */
    private int purgeAndCount(String name, long now) {
        ArrayDeque<Long> times = history.get(name);
        if (times == null) {
            return 0;
        }
        while (!times.isEmpty() && times.peekFirst() < now - DAY_NANOS) {
            times.pollFirst();
        }
        if (times.isEmpty()) {
            history.remove(name);
            return 0;
        }
        return times.size();
    }

    private void remember(String name, long now) {
        ArrayDeque<Long> times = history.computeIfAbsent(name, n -> new ArrayDeque<>());
        if (times.size() == MAX_COUNTED_PER_NAME) {
            times.pollFirst();
        }
        times.addLast(now);
    }
}
