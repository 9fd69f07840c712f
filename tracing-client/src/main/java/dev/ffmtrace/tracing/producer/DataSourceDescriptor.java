package dev.ffmtrace.tracing.producer;

import java.util.Objects;

/**
 * What a producer tells the service about one of its data sources (Perfetto's
 * {@code DataSourceDescriptor}).
 *
 * @param name                         the name trace configs select the data source by
 * @param willNotifyOnStart            the producer answers StartDataSource with
 *                                     NotifyDataSourceStarted once the data source runs
 * @param willNotifyOnStop             the producer answers StopDataSource with
 *                                     NotifyDataSourceStopped once its data is committed
 * @param handlesIncrementalStateClear the data source writes its incremental state again
 *                                     when the service asks
 * @param noFlush                      the data source has nothing to flush: the service
 *                                     need not wait for it
 */
public record DataSourceDescriptor(String name, boolean willNotifyOnStart, boolean willNotifyOnStop,
                                   boolean handlesIncrementalStateClear, boolean noFlush) {
    public DataSourceDescriptor {
        Objects.requireNonNull(name, "name");
        if (name.isEmpty()) {
            throw new IllegalArgumentException("a data source needs a name");
        }
    }

    /** A data source as the Perfetto SDK registers one: notifies start and stop, clears incremental state on request. */
    public static DataSourceDescriptor named(String name) {
        return new DataSourceDescriptor(name, true, true, true, false);
    }
}
