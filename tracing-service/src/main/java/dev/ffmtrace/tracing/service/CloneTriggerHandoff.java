package dev.ffmtrace.tracing.service;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * A CLONE_SNAPSHOT session's triggers on their way to whoever clones it. The owner sets
 * its listener once the session started, and a producer may fire a trigger in between:
 * such a hit waits here and is given to the listener when it is set, so a trigger sent the
 * moment the session began is cloned like any other. Listeners are called without this
 * object's lock.
 */
final class CloneTriggerHandoff {
    /**
     * Hits held for a listener not set yet. More than this before anyone listens means no
     * one will (a session started without a cloner): later ones are dropped.
     */
    static final int MAX_WAITING = 16;

    private Consumer<TriggerHit> listener;
    private final List<TriggerHit> waiting = new ArrayList<>();

    /** Gives {@code hit} to the listener, or holds it until one is set. */
    void deliver(TriggerHit hit) {
        Consumer<TriggerHit> to;
        synchronized (this) {
            if (listener == null) {
                if (waiting.size() < MAX_WAITING) {
                    waiting.add(hit);
                }
                return;
            }
            to = listener;
        }
        to.accept(hit);
    }

    /** Sets the listener, and gives it the hits that came before it, oldest first. */
    void listen(Consumer<TriggerHit> next) {
        List<TriggerHit> held;
        synchronized (this) {
            listener = next;
            held = List.copyOf(waiting);
            waiting.clear();
        }
        held.forEach(next);
    }
}
