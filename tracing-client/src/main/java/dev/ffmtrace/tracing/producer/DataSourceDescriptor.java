package dev.ffmtrace.tracing.producer;

import java.util.Arrays;
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
 * @param protoVmProgram               a serialised {@code VmProgram} the service runs on the
 *                                     data source's packets a ring buffer overwrites, when a
 *                                     session's {@code protovm_config} asks; null for none
 */
public record DataSourceDescriptor(String name, boolean willNotifyOnStart, boolean willNotifyOnStop,
                                   boolean handlesIncrementalStateClear, boolean noFlush, byte[] protoVmProgram) {
    public DataSourceDescriptor {
        Objects.requireNonNull(name, "name");
        if (name.isEmpty()) {
            throw new IllegalArgumentException("a data source needs a name");
        }
        protoVmProgram = protoVmProgram == null ? null : protoVmProgram.clone();
    }

    /** A descriptor without a ProtoVM program. */
    public DataSourceDescriptor(String name, boolean willNotifyOnStart, boolean willNotifyOnStop,
                                boolean handlesIncrementalStateClear, boolean noFlush) {
        this(name, willNotifyOnStart, willNotifyOnStop, handlesIncrementalStateClear, noFlush, null);
    }

    /** A data source as the Perfetto SDK registers one: notifies start and stop, clears incremental state on request. */
    public static DataSourceDescriptor named(String name) {
        return new DataSourceDescriptor(name, true, true, true, false);
    }

    /** This descriptor with {@code program} as its ProtoVM program (null: none). */
    public DataSourceDescriptor withProtoVmProgram(byte[] program) {
        return new DataSourceDescriptor(name, willNotifyOnStart, willNotifyOnStop, handlesIncrementalStateClear,
                noFlush, program);
    }

    @Override
    public byte[] protoVmProgram() {
        return protoVmProgram == null ? null : protoVmProgram.clone();
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof DataSourceDescriptor that && name.equals(that.name)
                && willNotifyOnStart == that.willNotifyOnStart && willNotifyOnStop == that.willNotifyOnStop
                && handlesIncrementalStateClear == that.handlesIncrementalStateClear && noFlush == that.noFlush
                && Arrays.equals(protoVmProgram, that.protoVmProgram);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, willNotifyOnStart, willNotifyOnStop, handlesIncrementalStateClear, noFlush)
                * 31 + Arrays.hashCode(protoVmProgram);
    }

    @Override
    public String toString() {
        return "DataSourceDescriptor[name=" + name + ", willNotifyOnStart=" + willNotifyOnStart
                + ", willNotifyOnStop=" + willNotifyOnStop + ", handlesIncrementalStateClear="
                + handlesIncrementalStateClear + ", noFlush=" + noFlush + ", protoVmProgram="
                + (protoVmProgram == null ? "none" : protoVmProgram.length + " bytes") + "]";
    }
}
