package dev.ffmtrace.tracing.service;

import dev.ffmtrace.tracing.buffer.ClientIdentity;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The in-process tracing service: producers connect and offer data sources; a session
 * started from a {@link SessionConfig} gets one TraceBufferV2 per configured buffer, each
 * in its own sealed memfd, and starts the data sources it names on every producer that
 * offers them, bound to the buffer the config resolved.
 */
public final class TracingService implements AutoCloseable {
    private final List<Producer> producers = new CopyOnWriteArrayList<>();
    private final List<TracingSession> sessions = new CopyOnWriteArrayList<>();
    private final Map<Integer, ServiceBuffer> buffers = new ConcurrentHashMap<>();
    private int nextProducerId = 1;
    private int nextBufferId = 1;

    /** A service with no producers, sessions or buffers yet. */
    public TracingService() {
    }

    /**
     * Connects a producer with an SMB of {@code smbSize} bytes in pages of {@code pageSize}.
     *
     * @param identity the producer's trusted uid and pid (for an in-process producer, this process's)
     */
    public synchronized Producer connectProducer(String name, ClientIdentity identity, long smbSize, int pageSize) {
        if (nextProducerId > 0xFFFF) {
            throw new IllegalStateException("all 65535 producer ids are used");
        }
        Producer producer = new Producer(this, nextProducerId++, name, identity, smbSize, pageSize);
        producers.add(producer);
        return producer;
    }

    /** Starts a session: allocates its buffers and starts the data sources it names. */
    public synchronized TracingSession startSession(SessionConfig config) {
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

    synchronized void dataSourceRegistered(Producer producer, DataSource dataSource) {
        for (TracingSession session : sessions) {
            startDataSources(session, producer);
        }
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
    }

    synchronized void producerClosed(Producer producer) {
        producers.remove(producer);
    }

    private void startDataSources(TracingSession session, Producer producer) {
        for (SessionConfig.DataSource wanted : session.config().dataSources()) {
            DataSource offered = producer.dataSource(wanted.name());
            if (offered != null && !offered.isStarted()) {
                offered.start(session.bufferId(wanted.targetBuffer()));
            }
        }
    }

    private void release(ServiceBuffer buffer) {
        buffers.remove(buffer.id);
        buffer.close();
    }

    /** Stops every session and disconnects every producer. */
    @Override
    public void close() {
        for (TracingSession session : List.copyOf(sessions)) {
            session.close();
        }
        for (Producer producer : List.copyOf(producers)) {
            producer.close();
        }
    }
}
