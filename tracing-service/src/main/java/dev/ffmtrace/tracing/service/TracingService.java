package dev.ffmtrace.tracing.service;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The in-process tracing service: producers connect and offer data sources; a session
 * started from a {@link SessionConfig} gets one TraceBufferV2 per configured buffer, each
 * in its own sealed memfd, and starts the data sources it names on every producer that
 * offers them, bound to the buffer the config resolved. A data source registered later,
 * or released by a session that stops, is started then for a running session that names it.
 *
 * <p><b>Threads:</b> every method may be called from any thread; the service's own lock
 * serializes connecting, starting, registering and stopping. The service belongs to its
 * owner, who {@linkplain #close() closes} it once the application's writers are closed:
 * closing unmaps the producers' SMBs.
 */
public final class TracingService implements AutoCloseable {
    private final List<Producer> producers = new CopyOnWriteArrayList<>();
    private final List<TracingSession> sessions = new CopyOnWriteArrayList<>();
    /** Producers closed before the service: their SMBs stay mapped until the service closes. */
    private final List<Producer> closedProducers = new ArrayList<>();
    private final Map<Integer, ServiceBuffer> buffers = new ConcurrentHashMap<>();
    private int nextProducerId = 1;
    private int nextBufferId = 1;
    private boolean closed;

    /** A service with no producers and no sessions. */
    public TracingService() {
    }

    /**
     * Connects a producer with a sealed SMB memfd as {@code options} say.
     *
     * @throws IllegalStateException if the service is closed or all 65535 producer ids are used
     */
    public synchronized Producer connectProducer(ProducerOptions options) {
        checkOpen("connectProducer");
        if (nextProducerId > 0xFFFF) {
            throw new IllegalStateException("all 65535 producer ids are used");
        }
        Producer producer = new Producer(this, nextProducerId++, options);
        producers.add(producer);
        return producer;
    }

    /**
     * Starts a session: allocates its buffers and starts the data sources it names on
     * every producer that offers them and has them free; {@link TracingSession#warnings()}
     * says which it could not start.
     *
     * @throws IllegalStateException if the service is closed
     */
    public synchronized TracingSession startSession(SessionConfig config) {
        checkOpen("startSession");
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
        TracingSession session = new TracingSession(this, config, sessionBuffers);
        sessions.add(session);
        for (Producer producer : producers) {
            startDataSources(session, producer);
        }
        return session;
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
        }
    }

    /** What {@link TracingSession#warnings()} returns: each of its data sources no producer writes into it now. */
    synchronized List<DataSourceWarning> warnings(TracingSession session) {
        List<DataSourceWarning> warnings = new ArrayList<>();
        List<SessionConfig.DataSource> wanted = session.config().dataSources();
        for (int i = 0; i < wanted.size(); i++) {
            String name = wanted.get(i).name();
            int bufferId = session.bufferId(wanted.get(i).targetBuffer());
            boolean offered = false;
            boolean startedByThisSession = false;
            boolean startedHere = false;
            for (Producer producer : producers) {
                DataSource dataSource = producer.dataSource(name);
                if (dataSource == null) {
                    continue;
                }
                offered = true;
                int target = dataSource.targetBuffer();
                if (target == bufferId) {
                    startedHere = true;
                    break;
                }
                startedByThisSession |= session.ownsBuffer(target);
            }
            if (!startedHere) {
                warnings.add(new DataSourceWarning(name, i, !offered ? DataSourceWarning.Reason.NOT_REGISTERED
                        : startedByThisSession ? DataSourceWarning.Reason.NAMED_TWICE
                        : DataSourceWarning.Reason.TAKEN_BY_ANOTHER_SESSION));
            }
        }
        return warnings;
    }

    synchronized void sessionStopped(TracingSession session, List<ServiceBuffer> sessionBuffers) {
        sessions.remove(session);
        for (ServiceBuffer buffer : sessionBuffers) {
            for (Producer producer : producers) {
                for (DataSource dataSource : producer.dataSources()) {
                    dataSource.stop(buffer.id);
                }
            }
            release(buffer);
        }
        // The data sources it released go to the sessions still waiting for them.
        for (TracingSession waiting : sessions) {
            for (Producer producer : producers) {
                startDataSources(waiting, producer);
            }
        }
    }

    /** Called by a closing producer: it has stopped its data sources; its SMB is unmapped when the service closes. */
    synchronized void producerClosed(Producer producer) {
        if (producers.remove(producer)) {
            if (closed) {
                producer.unmap();
            } else {
                closedProducers.add(producer);
            }
        }
    }

    private void startDataSources(TracingSession session, Producer producer) {
        for (SessionConfig.DataSource wanted : session.config().dataSources()) {
            DataSource offered = producer.dataSource(wanted.name());
            if (offered != null && !offered.isStarted()) {
                int bufferId = session.bufferId(wanted.targetBuffer());
                producer.bufferGranted(bufferId);
                offered.start(bufferId);
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
        for (TracingSession session : List.copyOf(sessions)) {
            session.close();
        }
        for (Producer producer : List.copyOf(producers)) {
            producer.close();
        }
        synchronized (this) {
            closedProducers.forEach(Producer::unmap);
            closedProducers.clear();
        }
    }
}
