package dev.ffmtrace.tracing.service.ipc;

import dev.ffmtrace.ipc.ClientInfo;
import dev.ffmtrace.ipc.Invocation;
import dev.ffmtrace.memory.FileDescriptorChannel;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.perfetto.protos.CloneSessionRequest;
import dev.ffmtrace.perfetto.protos.CloneSessionResponse;
import dev.ffmtrace.perfetto.protos.EnableTracingRequest;
import dev.ffmtrace.perfetto.protos.EnableTracingResponse;
import dev.ffmtrace.perfetto.protos.FlushRequest;
import dev.ffmtrace.perfetto.protos.GetTraceStatsResponse;
import dev.ffmtrace.perfetto.protos.ObservableEvents;
import dev.ffmtrace.perfetto.protos.ObserveEventsRequest;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.perfetto.protos.TraceStats;
import dev.ffmtrace.protozero.ProtoField;
import dev.ffmtrace.protozero.RepeatedScalarIterator;
import dev.ffmtrace.tracing.buffer.TraceBufferStats;
import dev.ffmtrace.tracing.service.Guardrails;
import dev.ffmtrace.tracing.service.InvalidConfigException;
import dev.ffmtrace.tracing.service.SessionClone;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.service.TriggerHit;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One consumer connection of the {@link ConsumerPort}: its session (or clone) and the
 * replies it waits for. Its requests run in order on a worker thread of its own, so a
 * slow stop or flush delays only this consumer; its state is the worker's, unless said.
 *
 * <p>Large because it holds every request of Perfetto's consumer protocol that acts on a
 * session (enable, disable, read, free, flush, clone, stats, observe); the admission
 * ({@link SessionAdmission}), the event stream ({@link EventStream}) and the service
 * state replies ({@link ServiceStateReplies}) live apart.
 */
final class RemoteConsumer {
    /** Perfetto's kMaxTracingDurationMillis: 7 days. */
    static final long MAX_TRACING_DURATION_MS = 7L * 24 * 3600 * 1000;
    /** Perfetto's kDefaultFlushTimeoutMs, for a flush that names no timeout and a config without flush_timeout_ms. */
    static final long DEFAULT_FLUSH_TIMEOUT_MS = 5000;
    /** Beyond the data sources' stop timeout, how long a stop under way may take to write the rest. */
    static final long STOP_GRACE_MS = 30_000;
    /**
     * How long a {@code write_into_file} write waits for a pipe or socket that takes no
     * bytes (a reader that stopped reading) before it fails and stops that session.
     */
    static final Duration OUTPUT_WRITE_TIMEOUT = Duration.ofSeconds(10);
    /** {@link #OUTPUT_WRITE_TIMEOUT} once the port is closing: a service told to stop stops within seconds. */
    static final Duration CLOSING_OUTPUT_WRITE_TIMEOUT = Duration.ofSeconds(1);

    private static final String SESSION_ACTIVE = "A Consumer is trying to EnableTracing() but another tracing session is "
            + "already active (forgot a call to FreeBuffers() ?)";
    private static final String FD_XOR_PATH = "When write_into_file==true either a FD needs to be passed or "
            + "output_path must be populated (but not both)";

    final ClientInfo info;
    private final TracingService service;
    private final Consumers consumers;
    private final SessionAdmission admission;
    private final PortCounters counters;
    private final ExecutorService worker;
    private final EventStream events = new EventStream();
    /** The session, published for the port's session count and QueryServiceState. */
    private volatile TracingSession session;
    private volatile long sessionId;
    /** When the session started, by CLOCK_REALTIME, for QueryServiceState. */
    private volatile long startRealtimeNs;
    /** The write_into_file output; written on the worker, its timeout shortened by {@link #shortenOutputTimeout()}. */
    private volatile FileDescriptorChannel output;
    /** Guards {@link #enableReply}: a session's completion may come on another thread. */
    private final Object replyLock = new Object();
    /** The deferred EnableTracing reply. */
    private Invocation enableReply;
    /** The session whose stop the consumer was told of: a session stops once. */
    private TracingSession stopNotified;
    /** The trace of a session cloned by CloneSession, until ReadBuffers takes it or FreeBuffers drops it. */
    private SessionClone clone;
    /** What {@link #clone} holds, or is reserved while it is made, for other consumers' admission; 0 without one. */
    private volatile long cloneBytes;
    /** ReadBuffers' reply arrays, kept for the next ReadBuffers; the worker's. */
    private ReadBuffersReplies readBuffersReplies;
    /** Requests queued on the worker and not started. */
    private final AtomicInteger pendingRequests = new AtomicInteger();

    RemoteConsumer(ClientInfo info, TracingService service, Consumers consumers, SessionAdmission admission,
            PortCounters counters) {
        this.info = info;
        this.service = service;
        this.consumers = consumers;
        this.admission = admission;
        this.counters = counters;
        this.worker = Executors.newSingleThreadExecutor(
                Thread.ofPlatform().daemon().name("consumer-port-client-" + info.clientId()).factory());
    }

    TracingSession session() {
        return session;
    }

    /** The session's id, for QueryServiceState and CloneSession; 0 before the first. */
    long sessionId() {
        return sessionId;
    }

    /** When the session started, by CLOCK_REALTIME. */
    long startRealtimeNs() {
        return startRealtimeNs;
    }

    /** The memory a clone this consumer holds (or makes) counts for admission; 0 without one. */
    long cloneBytes() {
        return cloneBytes;
    }

    /**
     * Whether this consumer may see and clone {@code owner}'s session, as Perfetto's
     * IsCloneAllowed: root, or a consumer of the same uid.
     */
    boolean mayClone(RemoteConsumer owner) {
        return info.uid() == 0 || info.uid() == owner.info.uid();
    }

    /**
     * Queues a request's task unless {@value Guardrails#MAX_PENDING_REQUESTS} wait
     * already (the one running is not counted): then the request fails and is counted.
     * False if not queued.
     */
    boolean submitRequest(Invocation invocation, Runnable task) {
        if (pendingRequests.incrementAndGet() > Guardrails.MAX_PENDING_REQUESTS) {
            pendingRequests.decrementAndGet();
            counters.refused();
            invocation.fail();
            return false;
        }
        boolean queued = submit(() -> {
            pendingRequests.decrementAndGet();
            task.run();
        });
        if (!queued) {
            pendingRequests.decrementAndGet();
        }
        return queued;
    }

    /** Queues a task; false if the consumer is gone. */
    boolean submit(Runnable task) {
        try {
            worker.execute(task);
            return true;
        } catch (RejectedExecutionException e) {
            return false;
        }
    }

    /**
     * The consumer went: its session is freed after the requests already queued, on its
     * worker, which then ends; the port's close waits for that.
     */
    void end() {
        consumers.ending(this);
        boolean queued = submit(() -> {
            try {
                freeSession();
            } finally {
                consumers.ended(this);
            }
        });
        if (!queued) {
            consumers.ended(this);
        }
        worker.shutdown();
    }

    void shortenOutputTimeout() {
        FileDescriptorChannel current = output;
        if (current != null) {
            current.shortenWriteTimeout(CLOSING_OUTPUT_WRITE_TIMEOUT);
        }
    }

    /** Waits until the worker has ended, or {@code deadline} ({@link System#nanoTime()}) passed: then interrupts it. */
    void awaitEnd(long deadline) {
        try {
            if (!worker.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                worker.shutdownNow();
            }
        } catch (InterruptedException e) {
            worker.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }

    void enableTracing(Invocation invocation, int fd) {
        EnableTracingRequest.Decoder request = Requests.parse(invocation, EnableTracingRequest.Decoder::new);
        if (request == null || request.attachNotificationOnly()) {
            // Nothing to attach to: ffmtrace has no detached sessions.
            StreamSocket.closeReceived(fd);
            if (request != null) {
                invocation.fail();
            }
            return;
        }
        Invocation previous;
        synchronized (replyLock) {
            previous = enableReply;
            enableReply = invocation;
        }
        if (previous != null) {
            // Perfetto drops the earlier deferred reply, which its IPC layer then rejects.
            previous.fail();
        }
        if (session != null) {
            StreamSocket.closeReceived(fd);
            tracingDisabled(null, SESSION_ACTIVE);
            return;
        }
        String error = startSession(request, fd);
        if (error != null) {
            tracingDisabled(null, error);
        }
    }

    /** Starts the session; returns why it could not, or null. Takes {@code fd} in any case. */
    private String startSession(EnableTracingRequest.Decoder request, int fd) {
        MemorySegment bytes = MemorySegment.ofArray(new byte[0]);
        ProtoField field = request.field(EnableTracingRequest.TRACE_CONFIG_FIELD_NUMBER);
        if (field.valid()) {
            bytes = field.asSlice();
        }
        TraceConfig.Decoder raw = new TraceConfig.Decoder();
        raw.reset(bytes);
        int buffers = raw.buffersCount();
        if (buffers > Guardrails.MAX_BUFFERS_PER_SESSION) {
            // Before the config is even parsed: a request for 10,000 buffers costs nothing.
            StreamSocket.closeReceived(fd);
            counters.refused();
            return "Too many buffers configured (" + buffers + ")";
        }
        SessionConfig config;
        try {
            config = SessionConfig.parse(bytes);
        } catch (InvalidConfigException e) {
            StreamSocket.closeReceived(fd);
            return e.getMessage();
        }
        if (config.durationMs() > MAX_TRACING_DURATION_MS) {
            StreamSocket.closeReceived(fd);
            return "Requested too long trace (" + config.durationMs() + "ms  > " + MAX_TRACING_DURATION_MS + " ms)";
        }
        FileDescriptorChannel channel = null;
        if (config.writeIntoFile()) {
            boolean hasPath = raw.hasOutputPath() && !raw.outputPath().isEmpty();
            if ((fd < 0) == !hasPath) {
                StreamSocket.closeReceived(fd);
                return FD_XOR_PATH;
            }
            if (hasPath) {
                // The service opening files for its clients is a privilege ffmtrace does not grant.
                return "output_path is not supported by ffmtrace's service: send the output's descriptor";
            }
            channel = FileDescriptorChannel.adopt(fd, OUTPUT_WRITE_TIMEOUT);
        } else {
            StreamSocket.closeReceived(fd);
        }
        FileDescriptorChannel sessionOutput = channel;
        String refused = admission.admit(this, config, sessionId -> {
            TracingSession started;
            try {
                started = service.startSession(config, sessionOutput);
            } catch (RuntimeException e) {
                return "cannot start the session: " + e.getMessage();
            }
            output = sessionOutput;
            this.sessionId = sessionId;
            startRealtimeNs = Os.clockNanos(Os.CLOCK_REALTIME);
            // Published last, for QueryServiceState; within the admission, for the next admission's count.
            session = started;
            return null;
        });
        if (refused != null) {
            if (channel != null) {
                channel.close();
            }
            return refused;
        }
        TracingSession started = session;
        events.sessionStarted();
        started.completion().whenComplete((s, failure) -> submit(() -> sessionStopped(started, failure)));
        started.onCloneTrigger(hit -> submit(() -> cloneTriggerHit(started, hit)));
        started.onAllDataSourcesStarted(() -> submit(() -> events.allDataSourcesStarted(session)));
        // All may have started before the listener was set.
        events.allDataSourcesStarted(started);
        return null;
    }

    /** The session stopped: its output is complete, and the consumer told. */
    private void sessionStopped(TracingSession stopped, Throwable failure) {
        if (stopped != session || stopped == stopNotified) {
            return;
        }
        stopNotified = stopped;
        closeOutput();
        events.instances(stopped, ObservableEvents.DataSourceInstanceState.DATA_SOURCE_INSTANCE_STATE_STOPPED,
                service.registeredDataSources());
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
        tracingDisabled(stopped, cause == null ? null : "cannot write the trace: " + cause.getMessage());
    }

    /** Resolves the deferred EnableTracing reply, if it waits: disabled, with the error if any. */
    private void tracingDisabled(TracingSession stopped, String error) {
        Invocation reply;
        synchronized (replyLock) {
            reply = enableReply;
            enableReply = null;
        }
        if (reply != null) {
            reply.reply(Requests.message(EnableTracingResponse.FACTORY, response -> {
                response.setDisabled(true);
                if (error != null && !error.isEmpty()) {
                    response.setError(error);
                }
            }));
        }
    }

    void disableTracing(Invocation invocation) {
        invocation.reply(new byte[0]);
        if (session != null) {
            session.stop();
        }
    }

    /** Starts the consumer's session that deferred its start ({@code deferred_start}). */
    void startTracing(Invocation invocation) {
        invocation.reply(new byte[0]);
        TracingSession current = session;
        if (current != null) {
            current.startTracing();
        }
    }

    void replyEmpty(Invocation invocation) {
        invocation.reply(new byte[0]);
    }

    /**
     * Streams what the buffers hold, as packets in slices, while it is read; a session that writes into a
     * file, or none, gets one empty reply, as in Perfetto.
     */
    void readBuffers(Invocation invocation) {
        TracingSession current = session;
        if (current == null && clone != null) {
            // A clone is read once, as a stopped session's buffers are. Its place is
            // free before the last reply goes: a consumer that has read it may clone again.
            SessionClone taken = clone;
            clone = null;
            ReadBuffersReplies replies = readBuffersReplies(invocation);
            try (taken) {
                taken.write(replies);
            } catch (IOException | RuntimeException e) {
                // The consumer sees the end of the data, as when a readback fails in Perfetto.
            } finally {
                cloneBytes = 0;
            }
            replies.finish();
            return;
        }
        if (current == null || current.config().writeIntoFile() || current.isClosed()) {
            invocation.reply(new byte[0]);
            return;
        }
        ReadBuffersReplies replies = readBuffersReplies(invocation);
        try {
            current.writeTrace(replies);
        } catch (IOException | RuntimeException e) {
            // The consumer sees the end of the data; what was read is lost, as when a readback fails in Perfetto.
        }
        replies.finish();
    }

    /** The consumer's reply arrays, made on its first ReadBuffers, for the replies of {@code invocation}. */
    private ReadBuffersReplies readBuffersReplies(Invocation invocation) {
        if (readBuffersReplies == null) {
            readBuffersReplies = new ReadBuffersReplies();
        }
        readBuffersReplies.begin((reply, length, last) -> invocation.reply(reply, length, !last));
        return readBuffersReplies;
    }

    void freeBuffers(Invocation invocation) {
        freeSession();
        invocation.reply(new byte[0]);
    }

    /**
     * Stops the session, if any, and waits until it has stopped (its duration may be
     * stopping it on the service's timer right now), then frees it: the EnableTracing
     * reply goes out, with the error the stop met, if any.
     */
    private void freeSession() {
        dropClone();
        TracingSession current = session;
        if (current == null) {
            return;
        }
        current.stop();
        Throwable failure = null;
        try {
            current.completion().get(current.config().effectiveDataSourceStopTimeoutMs() + STOP_GRACE_MS,
                    TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            failure = e.getCause();
        } catch (TimeoutException e) {
            failure = e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        current.close();
        // The stop queued its completion behind this task: tell the consumer now, in order.
        sessionStopped(current, failure);
        session = null;
        closeOutput();
    }

    private void closeOutput() {
        if (output != null) {
            output.close();
            output = null;
        }
    }

    void flush(Invocation invocation) {
        FlushRequest.Decoder request = Requests.parse(invocation, FlushRequest.Decoder::new);
        if (request == null) {
            return;
        }
        TracingSession current = session;
        if (current == null || current.isStopped()) {
            invocation.fail();
            return;
        }
        long timeoutMs = SessionConfig.clampFlushTimeoutMs(Integer.toUnsignedLong(request.timeoutMs()));
        if (timeoutMs == 0) {
            timeoutMs = current.config().effectiveFlushTimeoutMs();
        }
        boolean done;
        try {
            done = current.flush(Duration.ofMillis(timeoutMs));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            done = false;
        } catch (IllegalStateException e) {
            done = false;
        }
        if (done) {
            invocation.reply(new byte[0]);
        } else {
            invocation.fail();
        }
    }

    /**
     * Clones another consumer's session, as Perfetto's CloneSession: flushed, then its
     * buffers copied without consuming them into a trace this consumer reads with
     * ReadBuffers. Only a consumer of the same uid, or root, may clone a session; a
     * write_into_file session is refused (Perfetto copies its file).
     */
    void cloneSession(Invocation invocation) {
        CloneSessionRequest.Decoder request = Requests.parse(invocation, CloneSessionRequest.Decoder::new);
        if (request == null) {
            return;
        }
        long[] uuid = new long[2];
        String error = cloneFrom(request, uuid);
        invocation.reply(Requests.message(CloneSessionResponse.FACTORY, response -> {
            response.setSuccess(error == null);
            response.setError(error == null ? "" : error);
            response.setUuidMsb(uuid[0]);
            response.setUuidLsb(uuid[1]);
            response.setWasWriteIntoFile(false);
        }));
    }

    /** Takes the clone into {@link #clone} and its trace_uuid into {@code uuid}; returns why not, or null. */
    private String cloneFrom(CloneSessionRequest.Decoder request, long[] uuid) {
        RemoteConsumer owner = consumers.sessionOwner(request.sessionId(),
                request.hasUniqueSessionName() ? request.uniqueSessionName() : "");
        TracingSession source = owner == null ? null : owner.session();
        if (source == null || (request.sessionId() == 0 && request.uniqueSessionName().isEmpty())) {
            return "Tracing session not found";
        }
        if (!mayClone(owner)) {
            return "Not allowed to clone a session from another UID";
        }
        if (source.config().writeIntoFile()) {
            return "Cloning a write_into_file session is not supported by ffmtrace's service";
        }
        if (session != null || clone != null) {
            return "The consumer is already attached to another tracing session";
        }
        String refused = admission.admit(this, source.config(), sessionId -> {
            // Reserved while the copy is made (at most the buffers' size), outside the admission.
            cloneBytes = Math.max(1, SessionAdmission.memoryBytes(source.config()));
            return null;
        });
        if (refused != null) {
            return refused;
        }
        try {
            if (!source.isStopped()) {
                source.flush(Duration.ofMillis(DEFAULT_FLUSH_TIMEOUT_MS));
            }
            clone = source.cloneSession(cloneTrigger(request));
        } catch (RuntimeException e) {
            cloneBytes = 0;
            return "session not found";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            cloneBytes = 0;
            return "session not found";
        }
        cloneBytes = Math.max(1, clone.memoryBytes());
        uuid[0] = clone.uuidMsb();
        uuid[1] = clone.uuidLsb();
        return null;
    }

    /** The CLONE_SNAPSHOT trigger a clone is made for, as the request says it, or null. */
    private static TriggerHit cloneTrigger(CloneSessionRequest.Decoder request) {
        if (!request.hasCloneTriggerName() || request.cloneTriggerName().isEmpty()) {
            return null;
        }
        return new TriggerHit(request.cloneTriggerBootTimeNs(), request.cloneTriggerName(),
                request.cloneTriggerProducerName(), request.cloneTriggerTrustedProducerUid(),
                request.cloneTriggerDelayMs());
    }

    private void dropClone() {
        if (clone != null) {
            clone.close();
            clone = null;
        }
        cloneBytes = 0;
    }

    void getTraceStats(Invocation invocation) {
        TracingSession current = session;
        if (current == null || current.isClosed()) {
            invocation.fail();
            return;
        }
        invocation.reply(Requests.message(GetTraceStatsResponse.FACTORY, response -> {
            TraceStats stats = response.setTraceStats();
            for (TraceBufferStats buffer : current.stats()) {
                buffer.writeTo(stats.addBufferStats());
            }
            TracingService.ProducerCounts producers = service.producerCounts();
            stats.setProducersConnected(producers.connected());
            stats.setProducersSeen(producers.seen());
            stats.setChunksDiscarded(current.chunksDiscarded());
            stats.setInvalidPackets(current.invalidPackets());
        }));
    }

    void observeEvents(Invocation invocation) {
        ObserveEventsRequest.Decoder request = Requests.parse(invocation, ObserveEventsRequest.Decoder::new);
        if (request == null) {
            return;
        }
        int mask = 0;
        RepeatedScalarIterator asked = request.eventsToObserve(new RepeatedScalarIterator());
        while (asked.next()) {
            mask |= (int) asked.value();
        }
        events.open(invocation, mask);
        TracingSession current = session;
        if (current != null) {
            events.instances(current, ObservableEvents.DataSourceInstanceState.DATA_SOURCE_INSTANCE_STATE_STARTED,
                    service.registeredDataSources());
            events.allDataSourcesStarted(current);
        }
    }

    /** A CLONE_SNAPSHOT trigger of {@code triggered} is due: the consumer is told, if that is still its session. */
    private void cloneTriggerHit(TracingSession triggered, TriggerHit hit) {
        if (triggered == session) {
            events.cloneTriggerHit(sessionId, hit);
        }
    }
}
