package dev.ffmtrace.tracing.service;

import dev.ffmtrace.memory.MemoryFile;
import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.tracing.smb.CommitTransport;
import java.nio.channels.WritableByteChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The in-process tracing service: producers connect and offer data sources; a session
 * started from a {@link SessionConfig} gets one TraceBufferV2 per configured buffer, each
 * in its own sealed memfd, and starts the data sources it names on every producer that
 * offers them, bound to the buffer the config resolved. A data source registered later,
 * or released by a session that stops, is started then for a running session that names it.
 *
 * <p>The service keeps its sessions' time: their {@code duration_ms}, flush, file write
 * and incremental state periods are kept by its timer, a daemon thread of its own or an
 * executor its owner gives, which only starts them: each runs on a virtual thread of
 * its own, so that a session whose file nobody reads or whose producer never answers
 * delays no other session. While any session runs, it also returns every
 * {@value #IDLE_WRITER_SWEEP_PERIOD_MS} ms the chunks of in-process writers that finished
 * no packet since the last sweep, so that a thread that stopped tracing does not keep a
 * chunk for good.
 *
 * <p><b>Threads:</b> every method may be called from any thread; the service's own lock
 * serializes connecting, starting, registering and stopping. The service belongs to its
 * owner, who {@linkplain #close() closes} it once the application's writers are closed:
 * closing unmaps the producers' SMBs.
 */
public final class TracingService implements AutoCloseable {
    /** How often idle in-process writers' chunks are swept while a session runs. */
    public static final long IDLE_WRITER_SWEEP_PERIOD_MS = 1000;

    /** The owner's executor, or null: the service then makes {@link #ownTimer} when a session first needs it. */
    private final ScheduledExecutorService givenTimer;
    private ScheduledThreadPoolExecutor ownTimer;
    private ScheduledFuture<?> idleWriterSweep;
    private final List<Producer> producers = new CopyOnWriteArrayList<>();
    private final RelayClients relays = new RelayClients();
    /** The running sessions: those that start data sources. */
    private final List<TracingSession> sessions = new CopyOnWriteArrayList<>();
    /** The sessions not closed yet, running or stopped: their buffers are the service's to free. */
    private final List<TracingSession> openSessions = new CopyOnWriteArrayList<>();
    /** Producers closed before the service: their SMBs stay mapped until the service closes. */
    private final List<Producer> closedProducers = new ArrayList<>();
    private final Map<Integer, ServiceBuffer> buffers = new ConcurrentHashMap<>();
    private int nextProducerId = 1;
    private int nextBufferId = 1;
    private final AtomicLong lastDataSourceInstanceId = new AtomicLong();
    private final AtomicLong lastSessionId = new AtomicLong();
    private final Triggers triggers = new Triggers();
    private boolean closed;

    /** A service with no producers and no sessions, keeping time on a daemon thread of its own. */
    public TracingService() {
        this.givenTimer = null;
    }

    /**
     * A service with no producers and no sessions, keeping time on {@code timer}, which
     * stays the owner's: the service never shuts it down. Its tasks are short; a timer
     * with one thread is enough.
     */
    public TracingService(ScheduledExecutorService timer) {
        this.givenTimer = Objects.requireNonNull(timer, "timer");
    }

    /**
     * Connects a producer of this process with a sealed SMB memfd as {@code options} say:
     * the service's own side of a producer, for its tests. Applications join through a
     * {@link ProducerPort}, as the SDK's in-process backend does, and write the SDK's data
     * sources.
     *
     * @throws IllegalStateException if the service is closed or all 65535 producer ids are used
     */
    synchronized Producer connectProducer(ProducerOptions options) {
        return connect(options, null, null, true);
    }

    /**
     * Connects a producer in another process, which the service reaches through
     * {@code commands}: in {@code providedSmb} if it gave one (the producer then owns it),
     * else in an SMB the service makes as {@code options} say.
     */
    synchronized Producer connectRemoteProducer(ProducerOptions options, SharedMemory providedSmb,
                                                ProducerCommands commands, boolean scraping) {
        return connect(options, providedSmb, commands, scraping);
    }

    private Producer connect(ProducerOptions options, SharedMemory providedSmb, ProducerCommands commands,
                             boolean scraping) {
        checkOpen("connectProducer");
        if (nextProducerId > 0xFFFF) {
            throw new IllegalStateException("all 65535 producer ids are used");
        }
        Producer producer = new Producer(this, nextProducerId++, options, providedSmb, commands, scraping);
        producers.add(producer);
        return producer;
    }

    /**
     * How a producer of this process that connected through a {@link ProducerPort} commits
     * as a call instead of a CommitData message: the transport into the connected producer
     * whose SMB is {@code smb} (the same file, through the descriptor the producer
     * received), or null if no open producer of the service has it. Only code in this
     * process can hold that file, so the shortcut is its own.
     */
    public synchronized CommitTransport localCommitTransport(MemoryFile smb) {
        // Under the service's lock: SMBs are unmapped under it, once the service is closed.
        if (closed) {
            return null;
        }
        for (Producer producer : producers) {
            if (producer.isRemote() && !producer.isClosed() && producer.hasSmb(smb)) {
                return producer::commit;
            }
        }
        return null;
    }

    /**
     * {@code names}, activated by the producer {@code producerName} of uid
     * {@code producerUid} (Perfetto's ActivateTriggers): each reaches the running sessions
     * that listen to it, as {@link Triggers} decides.
     */
    void activateTriggers(String producerName, int producerUid, List<String> names) {
        triggers.activate(openSessions, producerName, producerUid, names);
    }

    /** What became of the triggers producers activated. */
    public TriggerStats triggerStats() {
        return triggers.stats();
    }

    /** A new id for a data source's start, unique in the service (Perfetto's DataSourceInstanceID). */
    long nextDataSourceInstanceId() {
        return lastDataSourceInstanceId.incrementAndGet();
    }

    /**
     * Starts a session whose trace its owner reads with {@link TracingSession#writeTrace}.
     *
     * @throws IllegalArgumentException if the config says {@code write_into_file}: that needs an output
     * @throws IllegalStateException if the service is closed
     * @see #startSession(SessionConfig, WritableByteChannel)
     */
    public TracingSession startSession(SessionConfig config) {
        return startSession(config, null);
    }

    /**
     * Starts a session: allocates its buffers, starts the data sources it names on every
     * producer that offers them and has them free ({@link TracingSession#warnings()} says
     * which it could not start), and starts its timers. With {@code write_into_file} the
     * session writes its trace into {@code output} while it runs and when it stops; the
     * session never closes {@code output}.
     *
     * @param output a blocking channel for {@code write_into_file}; may be null without it
     * @throws IllegalArgumentException if the config says {@code write_into_file} and {@code output} is null
     * @throws IllegalStateException if the service is closed
     */
    public synchronized TracingSession startSession(SessionConfig config, WritableByteChannel output) {
        checkOpen("startSession");
        Objects.requireNonNull(config, "config");
        if (config.writeIntoFile() && output == null) {
            throw new IllegalArgumentException("the config says write_into_file: start the session with an output");
        }
        List<ServiceBuffer> sessionBuffers = new ArrayList<>();
        try {
            for (SessionConfig.Buffer buffer : config.buffers()) {
                ServiceBuffer allocated = new ServiceBuffer(nextBufferId++, buffer);
                sessionBuffers.add(allocated);
                buffers.put(allocated.id, allocated);
            }
        } catch (RuntimeException e) {
            sessionBuffers.forEach(this::release);
            throw e;
        }
        TracingSession session = new TracingSession(this, lastSessionId.incrementAndGet(), config, sessionBuffers,
                output);
        openSessions.add(session);
        if (config.deferredStart() || config.triggerConfig().mode() == TriggerConfig.Mode.START_TRACING) {
            session.awaitStart(timer());
        } else {
            beginTracing(session, config.effectiveDurationMs());
        }
        return session;
    }

    /**
     * Starts a session that waited ({@code deferred_start}, or a START_TRACING trigger),
     * to record for {@code durationMs} (0: until stopped); nothing if it does not wait.
     */
    synchronized void startTracing(TracingSession session, long durationMs) {
        if (!closed && openSessions.contains(session)) {
            beginTracing(session, durationMs);
        }
    }

    private void beginTracing(TracingSession session, long durationMs) {
        if (!session.begin(timer())) {
            return;
        }
        sessions.add(session);
        for (Producer producer : producers) {
            startDataSources(session, producer);
        }
        session.dataSourcesChanged(timer());
        ScheduledExecutorService timer = timer();
        session.startTimers(timer, durationMs);
        if (idleWriterSweep == null) {
            idleWriterSweep = timer.scheduleAtFixedRate(this::sweepIdleWriters, IDLE_WRITER_SWEEP_PERIOD_MS,
                    IDLE_WRITER_SWEEP_PERIOD_MS, TimeUnit.MILLISECONDS);
        }
    }

    private ScheduledExecutorService timer() {
        if (givenTimer != null) {
            return givenTimer;
        }
        if (ownTimer == null) {
            ownTimer = new ScheduledThreadPoolExecutor(1, task -> {
                Thread thread = new Thread(task, "ffmtrace-service-timer");
                thread.setDaemon(true);
                return thread;
            });
            ownTimer.setRemoveOnCancelPolicy(true);
        }
        return ownTimer;
    }

    private void sweepIdleWriters() {
        for (Producer producer : producers) {
            try {
                producer.sweepIdleWriters();
            } catch (RuntimeException e) {
                // A producer closing under the sweep; the next sweep does not see it.
            }
        }
    }

    /** Whether {@link #close()} has been called. */
    public synchronized boolean isClosed() {
        return closed;
    }

    List<Producer> producers() {
        return producers;
    }

    ServiceBuffer buffer(int id) {
        return buffers.get(id);
    }

    /**
     * Asks every data source writing into buffer {@code bufferId} to clear its incremental
     * state. Takes no service lock: commit threads call it.
     */
    void clearIncrementalState(int bufferId) {
        for (Producer producer : producers) {
            producer.clearIncrementalState(bufferId);
        }
    }

    synchronized void dataSourceRegistered(Producer producer) {
        for (TracingSession session : sessions) {
            startDataSources(session, producer);
            session.dataSourcesChanged(timer());
        }
    }

    /** What {@link TracingSession#warnings()} returns: each of its data sources no producer writes into it now. */
    synchronized List<DataSourceWarning> warnings(TracingSession session) {
        List<DataSourceWarning> warnings = new ArrayList<>();
        List<SessionConfig.DataSource> wanted = session.config().dataSources();
        for (int i = 0; i < wanted.size(); i++) {
            String name = wanted.get(i).name();
            boolean offered = false;
            boolean startedByThisSession = false;
            boolean startedHere = false;
            for (Producer producer : producers) {
                DataSource dataSource = producer.dataSource(name);
                if (dataSource == null) {
                    continue;
                }
                offered = true;
                if (dataSource.startedFor(session, i)) {
                    startedHere = true;
                    break;
                }
                startedByThisSession |= dataSource.startedIn(session);
            }
            if (!startedHere) {
                warnings.add(new DataSourceWarning(name, i, !offered ? DataSourceWarning.Reason.NOT_REGISTERED
                        : startedByThisSession ? DataSourceWarning.Reason.NAMED_TWICE
                        : DataSourceWarning.Reason.TAKEN_BY_ANOTHER_SESSION));
            }
        }
        return warnings;
    }

    /**
     * Tells the data sources writing into {@code session}'s buffers that it stops, and
     * waits until each {@linkplain DataSource#onStop handler} said it is done, or
     * {@code timeoutMs} passed.
     */
    void awaitDataSourceStops(TracingSession session, long timeoutMs) {
        List<DataSource.StopHandler> handlers = new ArrayList<>();
        synchronized (this) {
            for (Producer producer : producers) {
                for (DataSource dataSource : producer.dataSources()) {
                    for (DataSource.Instance instance : dataSource.instances()) {
                        DataSource.StopHandler handler = dataSource.stopHandler(instance);
                        if (handler != null && instance.session() == session) {
                            handlers.add(handler);
                        }
                    }
                }
            }
        }
        CountDownLatch stopped = new CountDownLatch(handlers.size());
        for (DataSource.StopHandler handler : handlers) {
            AtomicBoolean done = new AtomicBoolean();
            Runnable once = () -> {
                if (done.compareAndSet(false, true)) {
                    stopped.countDown();
                }
            };
            try {
                handler.onStop(once);
            } catch (RuntimeException e) {
                // A failing handler is done: its session must stop all the same.
                once.run();
            }
        }
        try {
            stopped.await(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A session stopped: its data sources stop, and go to the sessions still waiting for them. */
    synchronized void stopDataSources(TracingSession session) {
        sessions.remove(session);
        for (ServiceBuffer buffer : session.buffers()) {
            for (Producer producer : producers) {
                for (DataSource dataSource : producer.dataSources()) {
                    dataSource.stop(buffer.id);
                }
            }
        }
        for (TracingSession waiting : sessions) {
            for (Producer producer : producers) {
                startDataSources(waiting, producer);
            }
            waiting.dataSourcesChanged(timer());
        }
        if (sessions.isEmpty() && idleWriterSweep != null) {
            idleWriterSweep.cancel(false);
            idleWriterSweep = null;
        }
    }

    /** A stopped session closed: its buffers go. */
    synchronized void sessionClosed(TracingSession session) {
        openSessions.remove(session);
        session.buffers().forEach(this::release);
    }

    /**
     * Called by a closing producer: it has stopped its data sources; its SMB is unmapped
     * when the service closes, or now for a producer in another process, which has no
     * writers here.
     */
    synchronized void producerClosed(Producer producer) {
        if (producers.remove(producer)) {
            if (closed || producer.isRemote()) {
                producer.unmap();
            } else {
                closedProducers.add(producer);
            }
        }
    }

    /**
     * Producers connected now, and connected since the service started (traced's
     * {@code producers_connected} and {@code producers_seen}).
     */
    public record ProducerCounts(int connected, long seen) {
    }

    /** The producers now and since the start, as {@code trace_stats} reports them. */
    public synchronized ProducerCounts producerCounts() {
        return new ProducerCounts(producers.size(), nextProducerId - 1);
    }

    /** The relays connected through a {@link RelayPort}: the remote machines' SystemInfo and clocks. */
    public RelayClients relays() {
        return relays;
    }

    private void startDataSources(TracingSession session, Producer producer) {
        List<SessionConfig.DataSource> wanted = session.config().dataSources();
        boolean remote = producer.identity().machineId() != 0;
        for (int i = 0; i < wanted.size(); i++) {
            if (!wanted.get(i).startsOn(remote, producer.machineName(), session.config().traceAllMachines())) {
                continue;
            }
            DataSource offered = producer.dataSource(wanted.get(i).name());
            if (offered != null && !offered.startedFor(session, i) && offered.canStartAnother()) {
                producer.startDataSource(offered, session, i, session.bufferId(wanted.get(i).targetBuffer()));
            }
        }
    }

    private void release(ServiceBuffer buffer) {
        buffers.remove(buffer.id);
        buffer.close();
    }

    private void checkOpen(String method) {
        if (closed) {
            throw new IllegalStateException(method + "() called on a closed tracing service");
        }
    }

    /**
     * Stops every session (each stops its data sources and frees its buffers), then
     * closes every producer and unmaps every SMB, including those of producers closed
     * earlier. Closing twice does nothing more. In-process writers must be closed first:
     * a writer that writes into an unmapped SMB fails.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        for (TracingSession session : List.copyOf(openSessions)) {
            session.close();
        }
        for (Producer producer : List.copyOf(producers)) {
            producer.close();
        }
        synchronized (this) {
            closedProducers.forEach(Producer::unmap);
            closedProducers.clear();
            if (ownTimer != null) {
                ownTimer.shutdownNow();
            }
        }
    }

    /** Each producer connected now and the names of the data sources it offers: what QueryServiceState lists. */
    public synchronized Map<Producer, List<String>> registeredDataSources() {
        Map<Producer, List<String>> registered = new java.util.LinkedHashMap<>();
        producers.forEach(p -> registered.put(p, java.util.stream.StreamSupport.stream(p.dataSources().spliterator(), false)
                .map(DataSource::name).sorted().toList()));
        return registered;
    }
}
