package dev.ffmtrace.tracing.producer;

import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.tracing.producer.internal.DataSourceHandler;
import dev.ffmtrace.tracing.producer.internal.DataSourceInstance;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A connection's record of one data source instance the service set up: what its handler
 * sees ({@link DataSourceInstance}) and where the connection keeps its state, the handler's
 * calls told and its writers. Its writers
 * write into the connection's shared memory buffer until the instance has stopped (its
 * handler called the stop's {@code done}, so a handler stopping asynchronously can still
 * write its last data, as Perfetto's can) or the connection is lost; then they are
 * closed, and a writer asked for afterwards is born closed ({@link TraceWriter#isOpen()}
 * false), so a {@code TrackEventWriter} over it counts its events as discarded instead
 * of throwing.
 */
final class EndpointInstance implements DataSourceInstance {
    enum State { SETUP, STARTED, STOPPING, STOPPED }

    private final ProducerEndpoint session;
    private final long id;
    private final String name;
    private final byte[] config;
    private final int targetBuffer;
    private final DataSourceDescriptor descriptor;
    private final DataSourceHandler handler;
    private final AtomicLong incrementalStateClears = new AtomicLong();
    /** Changed under the session's lock; read without it, so that running code can poll it. */
    private volatile State state = State.SETUP;
    /** Guarded by the session. */
    private final List<TraceWriter<TracePacket>> writers = new ArrayList<>();
    /** What the handler was told: guarded by {@code DataSourceCallbacks}' lock. */
    private boolean startTold;
    private boolean stopTold;

    EndpointInstance(ProducerEndpoint session, long id, String name, byte[] config, int targetBuffer,
                       DataSourceDescriptor descriptor, DataSourceHandler handler) {
        this.session = session;
        this.id = id;
        this.name = name;
        this.config = config;
        this.targetBuffer = targetBuffer;
        this.descriptor = descriptor;
        this.handler = handler;
    }

    @Override
    public long id() {
        return id;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public byte[] config() {
        return config.clone();
    }

    @Override
    public int targetBuffer() {
        return targetBuffer;
    }

    @Override
    public long incrementalStateClears() {
        return incrementalStateClears.get();
    }

    @Override
    public boolean isRunning() {
        return state == State.STARTED && session.isLive();
    }

    @Override
    public TraceWriter<TracePacket> newTraceWriter(BufferExhaustedPolicy policy) {
        synchronized (session) {
            // A handler that stops asynchronously may still write, from new threads too,
            // until it says it is done (Perfetto's HandleStopAsynchronously).
            if ((state == State.STARTED || state == State.STOPPING) && session.isLive()) {
                writers.removeIf(writer -> !writer.isOpen());
                try {
                    TraceWriter<TracePacket> writer = session.arbiter().createTraceWriter(targetBuffer, policy);
                    writers.add(writer);
                    return writer;
                } catch (IllegalStateException e) {
                    session.countWriterRefused();
                }
            }
        }
        return TraceWriter.closed(targetBuffer);
    }

    DataSourceDescriptor descriptor() {
        return descriptor;
    }

    DataSourceHandler handler() {
        return handler;
    }

    State state() {
        return state;
    }

    void setState(State state) {
        this.state = state;
    }

    /** The handler is being told the instance started. Under {@code DataSourceCallbacks}' lock. */
    void startTold() {
        startTold = true;
    }

    /** Whether the handler was told the instance stops. Under {@code DataSourceCallbacks}' lock. */
    boolean stopTold() {
        return stopTold;
    }

    /**
     * Whether the handler is to be told now that the instance stops: not told yet (and,
     * with {@code ifStarted}, told it started); it then counts as told. Under
     * {@code DataSourceCallbacks}' lock.
     */
    boolean tellsStop(boolean ifStarted) {
        if (stopTold || (ifStarted && !startTold)) {
            return false;
        }
        stopTold = true;
        return true;
    }

    void countIncrementalStateClear() {
        incrementalStateClears.incrementAndGet();
    }

    /** Takes the writers to close, leaving none. Under the session's lock. */
    List<TraceWriter<TracePacket>> takeWriters() {
        List<TraceWriter<TracePacket>> taken = new ArrayList<>(writers);
        writers.clear();
        return taken;
    }

    @Override
    public String toString() {
        return "data source " + name + " instance " + id + " (buffer " + targetBuffer + ")";
    }
}
