package dev.ffmtrace.tracing.producer;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The counters behind {@link ProducerConnection#stats()}, shared by the connection and
 * its endpoints, which count on their own threads.
 */
final class ProducerCounters {
    final AtomicLong connections = new AtomicLong();
    final AtomicLong connectFailures = new AtomicLong();
    final AtomicLong disconnections = new AtomicLong();
    final AtomicLong commandsRejected = new AtomicLong();
    final AtomicLong commitsDropped = new AtomicLong();
    final AtomicLong writersClosedByDisconnect = new AtomicLong();
    final AtomicLong handlerFailures = new AtomicLong();
    final AtomicLong writersRefused = new AtomicLong();
    final AtomicLong localCommits = new AtomicLong();
    final AtomicLong triggersDropped = new AtomicLong();

    ProducerConnection.Stats snapshot() {
        return new ProducerConnection.Stats(connections.get(), connectFailures.get(), disconnections.get(),
                commandsRejected.get(), commitsDropped.get(), writersClosedByDisconnect.get(), handlerFailures.get(),
                writersRefused.get(), localCommits.get(), triggersDropped.get());
    }
}
