package dev.ffmtrace.tracing.service;

import dev.ffmtrace.perfetto.protos.TracingServiceEvent;
import dev.ffmtrace.tracing.buffer.TraceBufferStats;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.WritableByteChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * A tracing session: its buffers, flushes that take what producers have written, and
 * readback into a trace. The service runs its lifecycle as the config says, timed by the
 * service's timer and run off it ({@link OffTimerTask}): it flushes every {@code flush_period_ms}, clears the writers'
 * incremental state every {@code incremental_state_config.clear_period_ms}, with
 * {@code write_into_file} writes the trace into the session's output every
 * {@code file_write_period_ms} (stopping before the output would reach
 * {@code max_file_size_bytes}), and {@linkplain #stop() stops} itself after
 * {@code duration_ms}, whatever the other periods. {@link #completion()} completes when
 * the session stops, by any of these or by {@link #stop()} or {@link #close()}.
 *
 * <p>A trace is Perfetto's {@code Trace}: each packet as field 1, with the fields only
 * the service can vouch for appended to it (protobuf lets a field follow the packet's
 * own): {@code trusted_uid} and {@code trusted_pid} from the producer's connection,
 * {@code trusted_packet_sequence_id} unique per producer and writer, and
 * {@code previous_packet_dropped} when data of that sequence was lost before the packet
 * (Perfetto's DataLossReason bits: PRESENT with the causes the buffer found, and the
 * producer's own SMB_FULL). A packet that fails validation, as in Perfetto's service
 * (malformed at the top level, or holding a field only the service may write), is
 * dropped, counted in {@code trace_stats}' {@code invalid_packets} and reported as a loss
 * on the next packet of its sequence; a chunk still being written when its producer
 * disconnected is counted in {@code chunks_discarded}.
 *
 * <p>The service adds its own packets, on sequence {@value #SERVICE_SEQUENCE_ID} as in
 * Perfetto: each readback starts with a {@code clock_snapshot} of BOOTTIME, MONOTONIC,
 * MONOTONIC_RAW and REALTIME read back to back (the first trace also has the one taken
 * when the session started), then, in the first readback, {@code trace_config},
 * {@code trace_uuid}, {@code trace_provenance} (each buffer's sequences and their
 * producers) and {@code system_info}, and, after the lifecycle events, {@code protovms}
 * when its buffers run ProtoVMs; {@code service_event} packets mark tracing
 * started, all data sources started, all data sources flushed, tracing disabled and read
 * buffers completed; each readback ends with {@code trace_stats}. {@link #writeSnapshot}
 * writes a whole trace of what the buffers hold, from read-only clones, leaving the
 * session running and its data unread; its stats are those taken when it cloned.
 *
 * <p>Readback copies packets out of a buffer under the buffer's lock, a bounded batch at
 * a time, and writes them to the output without it: a slow output never stalls the
 * producers' commits.
 *
 * <p>A data source the config names that no producer writes into the session is not an
 * error, as in Perfetto, where a session waits for late producers: {@link #warnings()}
 * says, at the moment it is called, which such data sources there are and why.
 *
 * <p><b>Threads:</b> every method may be called from any thread. Readbacks
 * ({@link #writeTrace}, {@link #writeSnapshot}, and the service's own writes into the
 * output) take turns. {@link #flush()}, {@link #clearIncrementalState()},
 * {@link #writeTrace} and {@link #writeSnapshot} throw {@link IllegalStateException} once
 * the session is closed; after {@link #stop()} the buffers can still be read. Stopping
 * or closing twice does nothing more.
 *
 * <p>This class keeps the session's lifecycle: its state, timers, flushes and stop. The
 * readback is {@link TraceReadback}'s, the {@code service_event} log
 * {@link ServiceEventLog}'s, the triggers' bookkeeping {@link SessionTriggers}', the
 * clone triggers' way to their listener {@link CloneTriggerHandoff}'s, and its
 * timed work runs off the timer ({@link OffTimerTask}). It stays over 600 lines because
 * it is also the session's whole public face (flushes, readbacks, snapshots, clones,
 * stats, triggers, listeners), each of which hands the work on after checking the state.
 */
public final class TracingSession implements AutoCloseable {
    /** The sequence of the packets the service writes itself; producers' sequences start at {@code 1 << 16}. */
    public static final int SERVICE_SEQUENCE_ID = 1;

    /** CONFIGURED: buffers made, data sources not started yet (deferred_start, START_TRACING). */
    private enum State { CONFIGURED, RUNNING, STOPPED, CLOSED }

    private final TracingService service;
    private final long id;
    private final SessionConfig config;
    private final List<ServiceBuffer> buffers;
    /** Where {@code write_into_file} writes; null without it. */
    private final TraceSink fileSink;
    private final CompletableFuture<TracingSession> completion = new CompletableFuture<>();
    private final List<ScheduledFuture<?>> timers = new ArrayList<>();
    /**
     * The {@code write_into_file} timer, apart from {@link #timers}: it goes on while a
     * stop waits for the producers, as Perfetto's does, so a ring buffer written into
     * meanwhile is still read. Guarded by {@link #timers}.
     */
    private ScheduledFuture<?> fileWrites;
    /** Set by stop() before its last readback: the periodic file writes are over. Under {@link #readbackLock}. */
    private boolean finalReadbackStarted;
    private volatile State state = State.CONFIGURED;
    /** Whether the session ever left CONFIGURED for RUNNING. */
    private volatile boolean started;
    /** The thread that stopped the session; set under {@link #timers} with the state. */
    private volatile Thread stoppingThread;
    /** The buffers' stats when the session closed, which {@link #stats()} returns from then on. */
    private volatile List<TraceBufferStats> finalStats;

    private final ServiceEventLog events = new ServiceEventLog();
    private boolean allDataSourcesStartedRecorded;
    private final SessionTriggers triggers = new SessionTriggers();
    /** Takes each CLONE_SNAPSHOT trigger once its stop_delay_ms passed to the listener the session's owner sets. */
    private final CloneTriggerHandoff cloneTriggers = new CloneTriggerHandoff();
    /** Told when every data source of the config has been seen started; set by the session's owner. */
    private volatile Runnable allStartedListener = () -> { };
    /** The service's timer, from {@link #begin} or {@link #awaitStart} on: a trigger's delayed stop runs on it. Guarded by {@link #timers}. */
    private ScheduledExecutorService timer;

    /** Serializes readbacks, and orders them with the stop's last one and the close. */
    private final ReentrantLock readbackLock = new ReentrantLock();
    /** The staging array of readbacks into a caller's channel, under {@link #readbackLock}. */
    private final TraceSink.Staging readbackStaging = new TraceSink.Staging();
    /** Used under {@link #readbackLock}. */
    private final TraceReadback readback;
    TracingSession(TracingService service, long id, SessionConfig config, List<ServiceBuffer> buffers,
                   WritableByteChannel output) {
        this.service = service;
        this.id = id;
        this.config = config;
        this.buffers = List.copyOf(buffers);
        this.fileSink = config.writeIntoFile() ? new TraceSink(output,
                config.maxFileSizeBytes() > 0 ? config.maxFileSizeBytes() : Long.MAX_VALUE, new TraceSink.Staging())
                : null;
        this.readback = new TraceReadback(service, config, this.buffers, events, triggers);
    }

    /**
     * Marks the session started (called once, by the service, before it starts the data
     * sources): from now on it records, and its trace begins with this moment's clocks.
     * It takes the service's {@code timer} with its state, so that a trigger a producer
     * sends the moment its data source starts, before {@link #startTimers}, has its delay
     * run there.
     *
     * @return false if it was not waiting to start (started already, or stopped)
     */
    boolean begin(ScheduledExecutorService timer) {
        synchronized (timers) {
            if (state != State.CONFIGURED) {
                return false;
            }
            state = State.RUNNING;
            started = true;
            this.timer = timer;
        }
        byte[] clocks = new ServicePackets().clockSnapshot().toByteArray();
        readbackLock.lock();
        try {
            readback.begin(clocks);
        } finally {
            readbackLock.unlock();
        }
        events.record(TracingServiceEvent.TRACING_STARTED_FIELD_NUMBER);
        return true;
    }

    /**
     * A session that waits to start (deferred_start, START_TRACING) keeps its time on
     * {@code timer}: a START_TRACING session no trigger starts within
     * {@code trigger_timeout_ms} stops, with an empty trace.
     */
    void awaitStart(ScheduledExecutorService timer) {
        synchronized (timers) {
            this.timer = timer;
            TriggerConfig triggers = config.triggerConfig();
            if (triggers.mode() == TriggerConfig.Mode.START_TRACING) {
                timers.add(timer.schedule(new OffTimerTask("ffmtrace-start-trigger-timeout", this::stopUnlessStarted),
                        triggers.timeoutMs(), TimeUnit.MILLISECONDS));
            }
        }
    }

    private void stopUnlessStarted() {
        if (state == State.CONFIGURED) {
            stop();
        }
    }

    /**
     * Starts the config's timers on {@code timer}, the session stopping itself after
     * {@code durationMs} (0: when told); called once, by the service, after the data
     * sources started.
     */
    void startTimers(ScheduledExecutorService timer, long durationMs) {
        synchronized (timers) {
            this.timer = timer;
            if (config.flushPeriodMs() > 0) {
                timers.add(timer.scheduleAtFixedRate(new OffTimerTask("ffmtrace-periodic-flush",
                                () -> runTimed(this::periodicFlush)),
                        config.flushPeriodMs(), config.flushPeriodMs(), TimeUnit.MILLISECONDS));
            }
            if (config.incrementalStateClearPeriodMs() > 0) {
                timers.add(timer.scheduleAtFixedRate(new OffTimerTask("ffmtrace-incremental-state-clear",
                                () -> runTimed(this::clearIncrementalState)),
                        config.incrementalStateClearPeriodMs(), config.incrementalStateClearPeriodMs(),
                        TimeUnit.MILLISECONDS));
            }
            if (fileSink != null) {
                long period = config.effectiveFileWritePeriodMs();
                fileWrites = timer.scheduleAtFixedRate(new OffTimerTask("ffmtrace-file-write", this::periodicFileWrite),
                        period, period, TimeUnit.MILLISECONDS);
            }
            if (durationMs > 0) {
                timers.add(timer.schedule(new OffTimerTask("ffmtrace-session-stop", () -> runTimed(this::stopOnDuration)),
                        durationMs, TimeUnit.MILLISECONDS));
            }
        }
    }

    /**
     * The end of {@code duration_ms}, or of a STOP_TRACING session's wait for a trigger:
     * once a trigger came, its own delayed stop ends the session instead, as in Perfetto.
     */
    private void stopOnDuration() {
        if (config.triggerConfig().mode() == TriggerConfig.Mode.STOP_TRACING && !triggers.isEmpty()) {
            return;
        }
        stop();
    }

    /**
     * A trigger the session listens to, from the service's {@link Triggers}: recorded for
     * the trace; the first one of a STOP_TRACING session stops it {@code stop_delay_ms}
     * later (on the service's timer, never on the caller's thread), and one reaching a
     * START_TRACING session that waits starts it, to record {@code stop_delay_ms}.
     */
    void triggerReceived(TriggerHit trigger) {
        boolean first = triggers.add(trigger);
        switch (config.triggerConfig().mode()) {
            case STOP_TRACING -> {
                if (first) {
                    synchronized (timers) {
                        if (state == State.RUNNING && timer != null) {
                            timers.add(timer.schedule(new OffTimerTask("ffmtrace-trigger-stop",
                                    () -> runTimed(this::stop)), trigger.stopDelayMs(), TimeUnit.MILLISECONDS));
                        }
                    }
                }
            }
            case START_TRACING -> service.startTracing(this, trigger.stopDelayMs());
            case CLONE_SNAPSHOT -> {
                synchronized (timers) {
                    if (state == State.RUNNING && timer != null) {
                        timers.add(timer.schedule(new OffTimerTask("ffmtrace-clone-trigger",
                                () -> cloneTriggers.deliver(trigger)), trigger.stopDelayMs(), TimeUnit.MILLISECONDS));
                    }
                }
            }
            case UNSPECIFIED -> {
            }
        }
    }

    /**
     * Who clones a CLONE_SNAPSHOT session: told of each of its triggers once the
     * trigger's {@code stop_delay_ms} passed, on a thread of its own (no lock held), as
     * Perfetto's service tells the session's consumer (its CloneTriggerHit event). The
     * session's consuming reads return nothing; only clones ({@link #cloneSession}) read it.
     * Triggers that came before the listener was set (a producer may fire one the moment
     * the session started) are given to it now, on the caller's thread.
     */
    public void onCloneTrigger(Consumer<TriggerHit> listener) {
        cloneTriggers.listen(Objects.requireNonNull(listener, "listener"));
    }

    /**
     * Who waits for every data source of the config to be started (a consumer observing
     * Perfetto's ALL_DATA_SOURCES_STARTED): told each time the service started data
     * sources for the running session and none is missing, on a thread of its own (no
     * lock held), so more than once if producers come and go. Check
     * {@link #dataSourcesNotStarted()} after setting it: the first time may have passed.
     */
    public void onAllDataSourcesStarted(Runnable listener) {
        allStartedListener = Objects.requireNonNull(listener, "listener");
    }

    /**
     * Starts a session that deferred its start ({@code deferred_start}, Perfetto's
     * StartTracing) or waits for a START_TRACING trigger: its data sources start, and it
     * records for {@code duration_ms}. Does nothing to a session started or stopped.
     */
    public void startTracing() {
        service.startTracing(this, config.durationMs());
    }

    /**
     * Whether the session has started recording ({@link #startTracing()}, a trigger, or at
     * once), even if it stopped since; false for one that stopped while it waited.
     */
    public boolean isStarted() {
        return started;
    }

    /**
     * Whether reads return nothing at all, not even the service's packets, as Perfetto's
     * ReadBuffers answers: the config lists triggers and none came yet, or the session is
     * a CLONE_SNAPSHOT one, read only through its clones.
     */
    private boolean waitsForTrigger() {
        return config.triggerConfig().mode() == TriggerConfig.Mode.CLONE_SNAPSHOT
                || config.triggerConfig().waitsForTrigger() && triggers.isEmpty();
    }

    /** Triggers received past the first {@value SessionTriggers#MAX_RECORDED}, which acted but are not in the trace. */
    public long triggersNotRecorded() {
        return triggers.notRecorded();
    }

    /** The session's id in its service, counting from 1: the {@code tracing_session_id} its data sources are told. */
    public long id() {
        return id;
    }

    /** The config the session was started from. */
    public SessionConfig config() {
        return config;
    }

    /** Whether the session has stopped: by {@link #stop()}, its duration, a full output, or closing. */
    public boolean isStopped() {
        return state == State.STOPPED || state == State.CLOSED;
    }

    /** Whether the session is closed, by {@link #close()} or by its service's close. */
    public boolean isClosed() {
        return state == State.CLOSED;
    }

    /**
     * Completes with this session when it stops (by {@link #stop()}, its
     * {@code duration_ms}, {@code max_file_size_bytes} reached, or closing), once what
     * {@code write_into_file} had to write is written; completes exceptionally if writing
     * into the output failed, which also stops the session.
     */
    public CompletableFuture<TracingSession> completion() {
        return completion.copy();
    }

    /**
     * Each data source of the config that no producer writes into this session at this
     * moment, and why: nobody registered it (yet: the session starts it when a producer
     * does), another session has it (until that session stops), or the config names it
     * twice. Empty when every data source is started, and once the session is stopped.
     */
    public List<DataSourceWarning> warnings() {
        if (state != State.RUNNING) {
            return List.of();
        }
        return service.warnings(this);
    }

    /**
     * How many of the config's data sources no producer writes into this session at this
     * moment: {@code warnings().size()}. A Java-side stat only: Perfetto's
     * {@code TraceStats} has no field for it, so the trace file does not carry it.
     */
    public int dataSourcesNotStarted() {
        return warnings().size();
    }

    /** The service-wide id of the session's buffer at {@code index} in its config. */
    int bufferId(int index) {
        return buffers.get(index).id;
    }

    /** Whether buffer {@code bufferId} of the service is one of this session's. */
    boolean ownsBuffer(int bufferId) {
        for (ServiceBuffer buffer : buffers) {
            if (buffer.id == bufferId) {
                return true;
            }
        }
        return false;
    }

    /** The session's buffers, for the service. */
    List<ServiceBuffer> buffers() {
        return buffers;
    }

    /**
     * Called by the service, under its lock, after it started data sources: records the
     * first time all are, and tells {@link #onAllDataSourcesStarted its listener} each time,
     * off the lock (a thread of its own, started from {@code timer}).
     */
    void dataSourcesChanged(Executor timer) {
        if (state != State.RUNNING || !service.warnings(this).isEmpty()) {
            return;
        }
        if (!allDataSourcesStartedRecorded) {
            allDataSourcesStartedRecorded = true;
            events.record(TracingServiceEvent.ALL_DATA_SOURCES_STARTED_FIELD_NUMBER);
        }
        Runnable listener = allStartedListener;
        try {
            timer.execute(new OffTimerTask("ffmtrace-all-data-sources-started", listener));
        } catch (RejectedExecutionException e) {
            // The service is closing: no consumer is left to tell.
        }
    }

    /**
     * Takes everything producers have written: the {@linkplain DataSource#onFlush flush
     * handlers} of this session's in-process data sources write what they hold first, then
     * idle writers' chunks are committed, and chunks still being written are scraped (their
     * last, possibly unfinished, packet stays hidden until the writer commits the chunk).
     */
    public void flush() {
        checkOpen("flush");
        awaitFlushes();
        takeFlushedChunks();
    }

    /** {@link #requestFlushes()}, waiting at most {@code flush_timeout_ms}. */
    private void awaitFlushes() {
        try {
            requestFlushes().get(config.effectiveFlushTimeoutMs(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            // A producer that failed or did not answer: the scrape takes what it can.
        }
    }

    /**
     * The periodic flush, off the service's timer (see {@link OffTimerTask}): a producer
     * that never answers costs this session's next flushes, never its file writes nor
     * another session's timers (a ring buffer would wrap meanwhile).
     */
    private void periodicFlush() {
        awaitFlushes();
        // Not once the session stopped while this waited: the stop takes the chunks itself.
        runTimed(this::takeFlushedChunks);
    }

    /**
     * Asks the producers in other processes to commit what they hold for this session
     * (and runs this process's flush handlers): completes when each has said it did. A
     * producer that does not answer in time loses only what the scrape after it cannot take.
     */
    private CompletableFuture<Void> requestFlushes() {
        List<CompletableFuture<Void>> acks = new ArrayList<>();
        for (Producer producer : service.producers()) {
            acks.add(producer.requestFlush(this));
        }
        return CompletableFuture.allOf(acks.toArray(new CompletableFuture<?>[0]));
    }

    /** Commits idle writers' chunks and scrapes those being written, into the buffers. */
    private void takeFlushedChunks() {
        for (Producer producer : service.producers()) {
            producer.flush();
        }
        events.record(TracingServiceEvent.ALL_DATA_SOURCES_FLUSHED_FIELD_NUMBER);
    }

    /**
     * {@link #flush()}, waiting for it at most {@code timeout}.
     *
     * @return whether the flush completed in time; if not, it goes on in the background
     */
    public boolean flush(Duration timeout) throws InterruptedException {
        checkOpen("flush");
        Thread flusher = Thread.ofVirtual().name("ffmtrace-flush").start(() -> runTimed(this::flush));
        return flusher.join(timeout);
    }

    /**
     * Asks every data source writing into this session's buffers to clear its incremental
     * state: their writers write interned names, descriptors and clock again, so a reader
     * that lost the start of a sequence (a ring buffer that wrapped) can decode what
     * follows.
     */
    public void clearIncrementalState() {
        checkOpen("clearIncrementalState");
        for (ServiceBuffer buffer : buffers) {
            service.clearIncrementalState(buffer.id);
        }
    }

    /** The stats of each buffer, in config order; once the session is closed, those it had when it closed. */
    public List<TraceBufferStats> stats() {
        List<TraceBufferStats> last = finalStats;
        if (last != null) {
            return last;
        }
        return readStats();
    }

    /**
     * Packets read back so far and dropped because they failed validation: malformed at
     * the top level, or holding a field only the service may write. What the trace's
     * {@code trace_stats} carries as {@code invalid_packets}.
     */
    public long invalidPackets() {
        return readback.invalidPackets();
    }

    /**
     * Chunks of this session's buffers still being written when their producer
     * disconnected (see {@link Producer}): each lost its last packet. What the trace's
     * {@code trace_stats} carries as {@code chunks_discarded}.
     */
    public long chunksDiscarded() {
        long discarded = 0;
        for (ServiceBuffer buffer : buffers) {
            buffer.lock.lock();
            try {
                discarded += buffer.chunksDiscarded;
            } finally {
                buffer.lock.unlock();
            }
        }
        return discarded;
    }

    private List<TraceBufferStats> readStats() {
        List<TraceBufferStats> stats = new ArrayList<>();
        for (ServiceBuffer buffer : buffers) {
            buffer.lock.lock();
            try {
                if (buffer.memory.isClosed()) {
                    return finalStats;
                }
                stats.add(buffer.buffer.stats());
            } finally {
                buffer.lock.unlock();
            }
        }
        return List.copyOf(stats);
    }

    /** {@link #writeTrace(WritableByteChannel)} into a stream. */
    public long writeTrace(OutputStream out) throws IOException {
        return writeTrace(Channels.newChannel(out));
    }

    /**
     * Reads every packet the buffers hold into {@code out} as a {@code Trace}, with the
     * service's packets around them and a {@code trace_stats} packet at the end. Reading
     * consumes: a second call writes only what came in between, so calls may stream a
     * trace piece by piece into one output.
     *
     * @param out a blocking channel; the session does not close it
     * @return the number of producers' packets written
     */
    public long writeTrace(WritableByteChannel out) throws IOException {
        return writeTrace(new TraceSink(out, Long.MAX_VALUE, readbackStaging));
    }

    /**
     * {@link #writeTrace(WritableByteChannel)} into a {@link ReadbackSink} of the caller's:
     * for an output that takes packets, not a {@code Trace}'s bytes.
     *
     * @return the number of producers' packets handed to the sink
     */
    public long writeTrace(ReadbackSink sink) throws IOException {
        // Checked under the lock close() takes to mark the session closed: its buffers are freed only after that.
        readbackLock.lock();
        try {
            checkOpen("writeTrace");
            return readBack(sink);
        } finally {
            readbackLock.unlock();
        }
    }

    /** {@link #writeSnapshot(WritableByteChannel)} into a stream. */
    public long writeSnapshot(OutputStream out) throws IOException {
        return writeSnapshot(Channels.newChannel(out));
    }

    /**
     * Writes what the buffers hold now into {@code out} as a whole {@code Trace}, without
     * consuming it and without stopping the session: each buffer is cloned read-only under
     * its lock (producers wait only for the copy) and the clone is read. Its
     * {@code trace_stats} are those the buffers had when cloned.
     *
     * @param out a blocking channel; the session does not close it
     * @return the number of producers' packets written
     */
    public long writeSnapshot(WritableByteChannel out) throws IOException {
        readbackLock.lock();
        try {
            checkOpen("writeSnapshot");
            try (SessionClone snapshot = readback.snapshot(triggers.allPackets())) {
                return snapshot.write(new TraceSink(out, Long.MAX_VALUE, readbackStaging));
            }
        } finally {
            readbackLock.unlock();
        }
    }

    /**
     * A clone of what the buffers hold now, as Perfetto's CloneSession makes one: each
     * buffer cloned read-only under its lock, the triggers the session received moved into
     * the clone (the session keeps none), and for a CLONE_SNAPSHOT trigger a
     * {@code clone_snapshot_trigger} packet saying so. The caller writes it and closes it.
     *
     * @param cloneTrigger the trigger the clone is made for, or null
     */
    public SessionClone cloneSession(TriggerHit cloneTrigger) {
        readbackLock.lock();
        try {
            checkOpen("cloneSession");
            return readback.cloneBuffers(triggers.takeAllPackets(), cloneTrigger);
        } finally {
            readbackLock.unlock();
        }
    }

    /** One consuming readback into {@code sink}, none while the session waits for its trigger; under {@link #readbackLock}. */
    private long readBack(ReadbackSink sink) throws IOException {
        return waitsForTrigger() ? 0 : readback.consume(sink);
    }

    /** The {@code write_into_file} timer's task; a failure stops the session and completes {@link #completion()} with it. */
    private void periodicFileWrite() {
        try {
            writeIntoFile();
        } catch (IOException | RuntimeException e) {
            completion.completeExceptionally(e);
            stop();
        }
    }

    /** One readback into the output, until stop() starts its last; a full output stops the session. */
    private void writeIntoFile() throws IOException {
        readbackLock.lock();
        try {
            if (finalReadbackStarted || state == State.CLOSED) {
                // stop() writes the rest.
                return;
            }
            readBack(fileSink);
        } finally {
            readbackLock.unlock();
        }
        if (fileSink.isFull()) {
            stop();
        }
    }

    /**
     * Stops the session: its timers, then its data sources (each {@linkplain
     * DataSource#onStop stop handler} runs and is waited for, at most
     * {@code data_source_stop_timeout_ms}; a session waiting for the data sources then
     * gets them), then takes what the producers had written with a last flush; with
     * {@code write_into_file}, writes everything left into the output (the periodic writes
     * go on while the stop waits for the producers). The buffers stay
     * readable until {@link #close()}. Completes {@link #completion()}.
     */
    public void stop() {
        synchronized (timers) {
            if (state != State.RUNNING && state != State.CONFIGURED) {
                return;
            }
            state = State.STOPPED;
            stoppingThread = Thread.currentThread();
            timers.forEach(timer -> timer.cancel(false));
            timers.clear();
        }
        try {
            // As Perfetto's service does when a session ends by its duration: what producers in
            // other processes hold is committed while their data sources still write here.
            awaitFlushes();
            service.awaitDataSourceStops(this, config.effectiveDataSourceStopTimeoutMs());
            service.stopDataSources(this);
            for (Producer producer : service.producers()) {
                producer.flush();
            }
            events.record(TracingServiceEvent.TRACING_DISABLED_FIELD_NUMBER);
            if (fileSink != null) {
                readbackLock.lock();
                try {
                    finalReadbackStarted = true;
                    readBack(fileSink);
                } finally {
                    readbackLock.unlock();
                }
            }
        } catch (IOException | RuntimeException e) {
            completion.completeExceptionally(e);
        } finally {
            synchronized (timers) {
                if (fileWrites != null) {
                    fileWrites.cancel(false);
                }
            }
            // Whatever happened, a close() waiting for this stop goes on.
            completion.complete(this);
        }
    }

    /**
     * Runs a timer's task; a failure stops the session and completes {@link #completion()}
     * with it, since nobody else would see it.
     */
    private void runTimed(TimedTask task) {
        try {
            if (state == State.RUNNING) {
                task.run();
            }
        } catch (IOException | RuntimeException e) {
            completion.completeExceptionally(e);
            stop();
        }
    }

    @FunctionalInterface
    private interface TimedTask {
        void run() throws IOException;
    }

    private void checkOpen(String method) {
        if (state == State.CLOSED) {
            throw new IllegalStateException(method + "() called on a closed tracing session");
        }
    }

    /**
     * {@linkplain #stop() Stops} the session if it runs (with {@code write_into_file}, the
     * rest is written into the output first), or waits for a stop under way on another
     * thread, then frees its buffers; what they held and was not read is lost. Closing
     * twice does nothing more.
     */
    @Override
    public void close() {
        stop();
        if (Thread.currentThread() != stoppingThread) {
            // A stop under way on another thread (the duration timer's) still takes the
            // producers' last chunks and writes the output: the buffers must outlive it.
            completion.handle((session, failure) -> session).join();
        }
        readbackLock.lock();
        try {
            synchronized (timers) {
                if (state == State.CLOSED) {
                    return;
                }
                finalStats = readStats();
                state = State.CLOSED;
            }
        } finally {
            readbackLock.unlock();
        }
        service.sessionClosed(this);
    }
}
