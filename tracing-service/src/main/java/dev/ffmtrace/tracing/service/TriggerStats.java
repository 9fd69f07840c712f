package dev.ffmtrace.tracing.service;

/**
 * What became of the triggers producers activated, since the service started.
 *
 * @param activations    trigger names producers activated
 * @param noEffect       names that reached no session: none listened (to that producer),
 *                       or each skipped or refused it
 * @param skipped        (session, name) pairs skipped by {@code skip_probability}
 * @param overDailyLimit (session, name) pairs refused by {@code max_per_24_h}
 */
public record TriggerStats(long activations, long noEffect, long skipped, long overDailyLimit) {
}
