package dev.ffmtrace.tracing.service;

import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protovm.CanonicalProgram;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import dev.ffmtrace.tracing.trackevent.TraceWriterSink;
import dev.ffmtrace.tracing.trackevent.TrackEventWriter;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * A data source a producer offers. When a session names it, the service starts an
 * instance of it bound to the buffer the session resolved for it; its writers then write
 * into that buffer. A producer in another process gets up to {@value #MAX_INSTANCES}
 * instances at once, one per session entry, each with its own config and buffer, as
 * Perfetto's SDK handles them; one in this process gets one, as its writers name none.
 *
 * <p>The service asks a data source to clear its incremental state when the buffer it
 * writes to lost packets (interned names or descriptors may have gone with them) and
 * every {@code incremental_state_config.clear_period_ms}; its {@link TrackEventWriter}s
 * then write that state anew before their next event.
 */
public final class DataSource {
    /**
     * What a data source does when its session stops, before the service takes the
     * writers' last chunks, as Perfetto's data sources do on {@code StopDataSource}: end
     * what the writers are writing (close open slices, write final state), close them,
     * then call {@code done}, from any thread. The session waits for {@code done} at most
     * its {@code data_source_stop_timeout_ms}.
     */
    @FunctionalInterface
    public interface StopHandler {
        /** Called once per stop, on the thread that stops the session; must not block for long. */
        void onStop(Runnable done);
    }

    /**
     * What a data source of a producer in this process does when a session starts it: it
     * gets the data source's DataSourceConfig as a producer in another process would
     * (with the service's fields set), to read its own part, such as
     * {@code heapprofd_config}.
     */
    @FunctionalInterface
    public interface StartHandler {
        /**
         * Called once per start, under the service's lock: must not block for long nor call
         * the service or its sessions.
         */
        void onStart(byte[] dataSourceConfig);
    }

    /**
     * What a data source of a producer in this process does when its session flushes,
     * before the service takes the producer's chunks, as Perfetto's data sources do on
     * {@code Flush}: write what it holds (heapprofd writes its dump) and commit it.
     */
    @FunctionalInterface
    public interface FlushHandler {
        /** Called on the flushing thread, once per flush and once more when the session stops. */
        void onFlush();
    }

    /**
     * How many sessions one data source of a producer in another process serves at once
     * (Perfetto's {@code kMaxDataSourceInstances}); one of a producer in this process
     * serves one, as its writers name no instance.
     */
    static final int MAX_INSTANCES = 8;

    /** One start of the data source: for data source {@code configIndex} of {@code session}, into buffer {@code bufferId}. */
    record Instance(DataSource dataSource, long id, int bufferId, TracingSession session, int configIndex) {
    }

    private static final Instance[] NO_INSTANCES = {};

    private final Producer producer;
    private final String name;
    /** Replaced whole under this object's lock, so that readers take a consistent snapshot without it. */
    private volatile Instance[] instances = NO_INSTANCES;
    private volatile long incrementalStateClears;
    private volatile StopHandler stopHandler;
    private volatile StartHandler startHandler;
    private volatile FlushHandler flushHandler;
    /** The VmProgram its producer registered with it, as traced keeps it, or null; replaced whole. */
    private volatile byte[] protoVmProgram;

    DataSource(Producer producer, String name) {
        this.producer = producer;
        this.name = name;
    }

    /** The name sessions use for it ({@code DataSourceConfig.name}). */
    public String name() {
        return name;
    }

    /**
     * Gives the data source a ProtoVM program (a serialised {@code VmProgram}, Perfetto's
     * {@code DataSourceDescriptor.protovm_program}), or takes it away with null: a session
     * whose config gives the data source a {@code protovm_config} runs it on the packets
     * its ring buffer overwrites. Sessions started from now on use it.
     *
     * <p>The program is kept re-serialised as Perfetto's service keeps it
     * ({@link CanonicalProgram}): that is what the VM runs and what the trace's
     * {@code protovms} packet shows.
     *
     * @throws IllegalArgumentException if traced would read garbage from the program
     */
    public void protoVmProgram(byte[] program) {
        canonicalProtoVmProgram(program == null ? null : CanonicalProgram.of(MemorySegment.ofArray(program)));
    }

    /** Gives it a program already as traced keeps it ({@link CanonicalProgram}), or none. */
    void canonicalProtoVmProgram(byte[] program) {
        protoVmProgram = program;
    }

    /** Its ProtoVM program, or null. */
    byte[] protoVmProgram() {
        return protoVmProgram;
    }

    /** Whether a session has started this data source. */
    public boolean isStarted() {
        return instances.length > 0;
    }

    /**
     * A writer for this data source's current session, on its own sequence.
     *
     * @throws IllegalStateException if no session has started the data source
     */
    public TraceWriter<TracePacket> newTraceWriter(BufferExhaustedPolicy policy) {
        int target = targetBuffer();
        if (target == 0) {
            throw new IllegalStateException("data source \"" + name + "\" is not started by any session");
        }
        return producer.newTraceWriter(target, policy);
    }

    /**
     * A TrackEvent writer for this data source's current session, on its own sequence,
     * that starts its incremental state again after its own drops and whenever the service
     * asks this data source to clear it. Like every TrackEvent call, this never throws for
     * the state of the service: if no session has started the data source (or its producer
     * is closed) the writer discards its events, counting them in
     * {@link TrackEventWriter#discardedEvents()}.
     */
    public TrackEventWriter newTrackEventWriter(BufferExhaustedPolicy policy, TrackEventWriter.Config config) {
        int target = targetBuffer();
        if (target == 0 || producer.isClosed()) {
            return TrackEventWriter.discarding(config);
        }
        try {
            return new TrackEventWriter(new TraceWriterSink(producer.newTraceWriter(target, policy),
                    this::incrementalStateClears), config);
        } catch (IllegalStateException e) {
            // Stopped or closed between the check and the writer (e.g. all writer ids taken).
            return TrackEventWriter.discarding(config);
        }
    }

    /** Sets what the data source does when its session stops (null: nothing, the session stops at once). */
    public void onStop(StopHandler handler) {
        this.stopHandler = handler;
    }

    /** Sets what the data source does when a session starts it (null: nothing); producers in this process only. */
    public void onStart(StartHandler handler) {
        this.startHandler = handler;
    }

    /** Sets what the data source does when its session flushes (null: nothing); producers in this process only. */
    public void onFlush(FlushHandler handler) {
        this.flushHandler = handler;
    }

    StartHandler startHandler() {
        return startHandler;
    }

    FlushHandler flushHandler() {
        return flushHandler;
    }

    /** What stops {@code instance}: for a producer in another process, its StopDataSource command. */
    StopHandler stopHandler(Instance instance) {
        if (producer.isRemote()) {
            return done -> producer.commands().stopDataSource(this, instance.id(), done);
        }
        return stopHandler;
    }

    /** How many times the service asked to clear the incremental state. */
    public long incrementalStateClears() {
        return incrementalStateClears;
    }

    /** Called by the service, from commit threads and the session's thread. */
    synchronized void clearIncrementalState() {
        incrementalStateClears++;
    }

    /** The instances started now: a snapshot. */
    Instance[] instances() {
        return instances;
    }

    /** Whether {@code session} may start one more instance. */
    boolean canStartAnother() {
        return instances.length < (producer.isRemote() ? MAX_INSTANCES : 1);
    }

    /** Whether an instance runs for data source {@code configIndex} of {@code session}. */
    boolean startedFor(TracingSession session, int configIndex) {
        for (Instance instance : instances) {
            if (instance.session() == session && instance.configIndex() == configIndex) {
                return true;
            }
        }
        return false;
    }

    /** Whether an instance runs for {@code session}. */
    boolean startedIn(TracingSession session) {
        for (Instance instance : instances) {
            if (instance.session() == session) {
                return true;
            }
        }
        return false;
    }

    /** Whether an instance writes into buffer {@code bufferId}. */
    boolean writesTo(int bufferId) {
        for (Instance instance : instances) {
            if (instance.bufferId() == bufferId) {
                return true;
            }
        }
        return false;
    }

    synchronized void start(Instance instance) {
        Instance[] more = Arrays.copyOf(instances, instances.length + 1);
        more[instances.length] = instance;
        instances = more;
    }

    /** Stops the instances that write into buffer {@code bufferId}. */
    synchronized void stop(int bufferId) {
        instances = Arrays.stream(instances).filter(instance -> instance.bufferId() != bufferId)
                .toArray(Instance[]::new);
    }

    synchronized void stopAll() {
        instances = NO_INSTANCES;
    }

    /** The buffer of the first instance, the only one of a producer in this process; 0 if not started. */
    int targetBuffer() {
        Instance[] now = instances;
        return now.length == 0 ? 0 : now[0].bufferId();
    }
}
