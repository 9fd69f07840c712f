package dev.ffmtrace.tracing.producer.internal;

import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;

/**
 * One instance of a data source, as the service set it up for a tracing session: its
 * id, its raw {@code DataSourceConfig} and the buffer its packets go to. Its writers
 * write into the connection's shared memory buffer until the instance has stopped (its
 * handler called the stop's {@code done}, so a handler stopping asynchronously can still
 * write its last data, as Perfetto's can) or the connection is lost; then they are
 * closed, and a writer asked for afterwards is born closed ({@link TraceWriter#isOpen()}
 * false), so a {@code TrackEventWriter} over it counts its events as discarded instead
 * of throwing.
 */
public interface DataSourceInstance {
    /** The service's id of this instance. */
    long id();

    /** The data source's name. */
    String name();

    /** The {@code DataSourceConfig} the service sent, serialized (a copy). */
    byte[] config();

    /** The service's id of the buffer this instance's packets go to. */
    int targetBuffer();

    /** How many times the service asked this instance to clear its incremental state. */
    long incrementalStateClears();

    /** Whether the instance is started and its connection alive: its writers write. */
    boolean isRunning();

    /**
     * A new writer into this instance's target buffer, registered with the service; a
     * closed one if the instance has not started or has stopped (or all writer ids are
     * taken). Close it when done; the connection closes the ones still open when the
     * instance stops.
     */
    TraceWriter<TracePacket> newTraceWriter(BufferExhaustedPolicy policy);
}
