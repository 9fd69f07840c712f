package dev.ffmtrace.tracing.producer.internal;

import dev.ffmtrace.tracing.producer.ProducerConnection;

/**
 * The SDK's side of a data source registered with a {@link ProducerConnection} (the SDK's
 * {@code DataSource} is what applications write; this package is exported to the SDK and
 * the service's warm-up only): called when the service sets up, starts,
 * stops, flushes an instance of it or asks it to clear its incremental state. Calls come
 * one at a time on the connection's I/O thread, in the order of the service's commands;
 * one that throws is counted in {@link ProducerConnection.Stats#handlerFailures()} and
 * otherwise ignored (a stop then counts as done). A call must not wait for a thread that
 * is creating a writer of the same connection (writers are created under the lock the
 * calls run under): to wait for the threads of a stopping instance, wait on a thread of
 * your own and call {@code done} from it.
 */
public interface DataSourceHandler {
    /** The service set up an instance; it starts later. */
    default void onSetup(DataSourceInstance instance) {
    }

    /** The instance starts: create its writers with {@link DataSourceInstance#newTraceWriter}. */
    void onStart(DataSourceInstance instance);

    /**
     * The instance stops. Call {@code done} (from any thread, now or later) once its
     * threads finished writing; the connection then closes the instance's writers, which
     * commits what they hold, and tells the service the instance stopped.
     */
    default void onStop(DataSourceInstance instance, Runnable done) {
        done.run();
    }

    /**
     * The service flushes the instance. When this returns, the connection commits the
     * chunks of every writer that is between packets, then acknowledges the flush.
     */
    default void onFlush(DataSourceInstance instance) {
    }

    /**
     * The service lost data and asks for the incremental state (interned names, track
     * descriptors) to be written again; {@link DataSourceInstance#incrementalStateClears()}
     * has already moved on.
     */
    default void onClearIncrementalState(DataSourceInstance instance) {
    }
}
