package dev.ffmtrace.tracing.service;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * What the service asks of a producer in another process: Perfetto's {@code Producer}
 * interface as its service sees it. The service calls these from its own threads, some
 * under its lock, so an implementation never blocks on the producer: it queues the
 * command for the producer's connection.
 */
interface ProducerCommands {
    /** Sets up and starts {@code dataSource} as instance {@code instanceId} with {@code config}, a DataSourceConfig. */
    void startDataSource(DataSource dataSource, long instanceId, byte[] config);

    /**
     * Stops instance {@code instanceId}; runs {@code done} once the producer says it has
     * stopped, at once if it will not say, or when the producer goes away.
     */
    void stopDataSource(DataSource dataSource, long instanceId, Runnable done);

    /**
     * Asks the producer to commit what {@code instances} hold; completes when it says it
     * has, or when it goes away.
     */
    CompletableFuture<Void> flush(List<DataSource.Instance> instances);

    /** Asks {@code instance} to clear its incremental state, if its data source said it can. */
    void clearIncrementalState(DataSource.Instance instance);
}
