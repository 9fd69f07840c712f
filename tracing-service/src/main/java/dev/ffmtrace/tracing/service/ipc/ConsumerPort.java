package dev.ffmtrace.tracing.service.ipc;

import dev.ffmtrace.ipc.ClientInfo;
import dev.ffmtrace.ipc.Invocation;
import dev.ffmtrace.ipc.ServiceDescriptor;
import dev.ffmtrace.ipc.ServiceDescriptor.Method;
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
import dev.ffmtrace.perfetto.protos.ObserveEventsResponse;
import dev.ffmtrace.perfetto.protos.QueryCapabilitiesResponse;
import dev.ffmtrace.perfetto.protos.QueryServiceStateRequest;
import dev.ffmtrace.perfetto.protos.SaveTraceForBugreportResponse;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.perfetto.protos.TraceStats;
import dev.ffmtrace.perfetto.protos.TracingServiceCapabilities;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.Message;
import dev.ffmtrace.protozero.MessageFactory;
import dev.ffmtrace.protozero.ProtoDecoder;
import dev.ffmtrace.protozero.ProtoField;
import dev.ffmtrace.protozero.RepeatedScalarIterator;
import dev.ffmtrace.protozero.TypedProtoDecoder;
import dev.ffmtrace.tracing.buffer.TraceBufferStats;
import dev.ffmtrace.tracing.service.Guardrails;
import dev.ffmtrace.tracing.service.InvalidConfigException;
import dev.ffmtrace.tracing.service.Producer;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.service.TriggerHit;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.Channels;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Perfetto's consumer port on a {@link TracingService}: the {@code ConsumerPort} service
 * of the IPC, as Perfetto's ConsumerIPCService and TracingServiceImpl serve it, so that
 * Perfetto's {@code perfetto} command line (or any consumer) runs sessions on the service.
 * Expose {@link #descriptor()} on an {@link dev.ffmtrace.ipc.IpcHost}.
 *
 * <p>Each consumer connection has at most one session, freed when the consumer frees its
 * buffers or disconnects. The reply to EnableTracing is deferred until tracing is
 * disabled ({@code disabled} true, with {@code error} if the config was refused or the
 * trace could not be written); with {@code write_into_file} the output is the
 * descriptor sent with the request. ReadBuffers streams the trace's packets as slices,
 * each reply under Perfetto's IPC frame limit. CloneSession copies another consumer's
 * session (not a write_into_file one) for this consumer to read. Methods ffmtrace does
 * not serve (Detach, Attach) fail, as Perfetto's host answers a method it cannot run; so
 * does a method whose arguments do not parse.
 *
 * <p>Threads: the IPC host calls the handlers on the consumer's I/O thread; each
 * consumer's requests then run in order on a worker thread of its own, so a slow stop
 * or flush delays only that consumer.
 *
 * <p>Events reach a consumer's worker from the session ({@link TracingSession#completion()},
 * {@link TracingSession#onCloneTrigger}, {@link TracingSession#onAllDataSourcesStarted}):
 * no thread polls the sessions.
 *
 * <p>Large while each remote consumer's state and requests live in it; the state replies
 * ({@code ServiceStateReplies}) and the limits ({@code Guardrails}) already live apart,
 * and issue #31 splits the rest.
 */
public final class ConsumerPort implements AutoCloseable {
    /** The name clients bind. */
    public static final String SERVICE_NAME = "ConsumerPort";
    /** Perfetto's kMaxTracingDurationMillis: 7 days. */
    static final long MAX_TRACING_DURATION_MS = 7L * 24 * 3600 * 1000;
    /** Perfetto's kDefaultFlushTimeoutMs, for a flush that names no timeout and a config without flush_timeout_ms. */
    static final long DEFAULT_FLUSH_TIMEOUT_MS = 5000;
    /** Perfetto's kIPCBufferSize, which a whole frame must fit. */
    static final int IPC_BUFFER_SIZE = 128 * 1024;
    /** A ReadBuffers reply's slices stay under this, as Perfetto's estimate: 16 bytes per slice, 64 for the frame. */
    static final int MAX_READ_REPLY = IPC_BUFFER_SIZE - 64;
    /** The largest slice of a packet: Perfetto's packets are slices of at most a 64 KiB SMB page. */
    static final int MAX_SLICE = 64 * 1024;
    /** Beyond the data sources' stop timeout, how long a stop under way may take to write the rest. */
    private static final long STOP_GRACE_MS = 30_000;
    /**
     * How long {@link #close()} waits for the consumers' workers: the longest stop a
     * session may take. A worker still busy then is interrupted, and what it had queued
     * dropped; the service's close frees the sessions left.
     */
    private static final long CLOSE_TIMEOUT_MS = Guardrails.MAX_DATA_SOURCE_STOP_TIMEOUT_MS + STOP_GRACE_MS;
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
    private static final String BUGREPORT_DEPRECATED = "SaveTraceForBugreport is deprecated. Use "
            + "CloneSession(kBugreportSessionId) instead.";

    private final TracingService service;
    private final String version;
    private final Map<Long, RemoteConsumer> consumers = new ConcurrentHashMap<>();
    /** Consumers gone whose workers still free their sessions: {@link #close()} waits for them. */
    private final Set<RemoteConsumer> ending = ConcurrentHashMap.newKeySet();
    private final AtomicLong lastSessionId = new AtomicLong();
    private final AtomicLong stateEntriesLeftOut = new AtomicLong();
    private final AtomicLong requestFailures = new AtomicLong();
    private final AtomicLong refusals = new AtomicLong();
    /** Held while a session is admitted and started, so that two consumers cannot both take the last place. */
    private final Object admission = new Object();
    private final ServiceDescriptor descriptor;

    /**
     * A port on {@code service}, which stays its owner's.
     *
     * @param version what QueryServiceState reports as {@code tracing_service_version}
     */
    public ConsumerPort(TracingService service, String version) {
        this.service = service;
        this.version = version;
        this.descriptor = new ServiceDescriptor(SERVICE_NAME, List.of(
                new Method("EnableTracing", true, this::enableTracing),
                new Method("DisableTracing", i -> run(i, RemoteConsumer::disableTracing)),
                new Method("ReadBuffers", i -> run(i, RemoteConsumer::readBuffers)),
                new Method("FreeBuffers", i -> run(i, RemoteConsumer::freeBuffers)),
                new Method("Flush", i -> run(i, RemoteConsumer::flush)),
                new Method("StartTracing", i -> run(i, RemoteConsumer::startTracing)),
                new Method("ChangeTraceConfig", i -> run(i, RemoteConsumer::replyEmpty)),
                new Method("Detach", Invocation::fail),
                new Method("Attach", Invocation::fail),
                new Method("GetTraceStats", i -> run(i, RemoteConsumer::getTraceStats)),
                new Method("ObserveEvents", i -> run(i, RemoteConsumer::observeEvents)),
                new Method("QueryServiceState", i -> run(i, this::queryServiceState)),
                new Method("QueryCapabilities", i -> run(i, (c, inv) -> queryCapabilities(inv))),
                new Method("SaveTraceForBugreport", i -> run(i, (c, inv) -> saveTraceForBugreport(inv))),
                // Perfetto's command line always sends a descriptor with it, for a write_into_file session.
                new Method("CloneSession", true, this::cloneSession)),
                this::disconnected);
    }

    /** The service to expose on an IPC host: all of Perfetto's ConsumerPort methods, in its declaration order. */
    public ServiceDescriptor descriptor() {
        return descriptor;
    }

    /**
     * Entries of QueryServiceState replies left out because one alone would not fit a
     * reply under the IPC frame limit (a producer, session or data source whose names are
     * that long).
     */
    public long stateEntriesLeftOut() {
        return stateEntriesLeftOut.get();
    }

    /** Requests whose handling threw: each was failed, its consumer served on. */
    public long requestFailures() {
        return requestFailures.get();
    }

    /**
     * Requests refused by a {@link Guardrails guardrail}: sessions over Perfetto's limits
     * (buffers per session, sessions in all and per uid) or ffmtrace's (buffer memory of
     * all sessions), requests over a connection's {@value Guardrails#MAX_PENDING_REQUESTS}
     * pending ones. Each got Perfetto's error reply (a failed call for the last).
     */
    public long refusals() {
        return refusals.get();
    }

    /** Consumers connected now that have invoked a method. */
    public int consumerCount() {
        return consumers.size();
    }

    /** Sessions of this port's consumers not freed yet. */
    public int sessionCount() {
        return (int) consumers.values().stream().filter(c -> c.session() != null).count();
    }

    /**
     * Frees every consumer's session and waits for their workers, at most the longest
     * stop a session may take; close the IPC host first, so that no request comes in
     * meanwhile. An output that takes no bytes then holds its session's last write
     * {@link #CLOSING_OUTPUT_WRITE_TIMEOUT}.
     */
    @Override
    public void close() {
        for (RemoteConsumer consumer : List.copyOf(consumers.values())) {
            consumers.remove(consumer.info.clientId());
            consumer.end();
        }
        List<RemoteConsumer> stopping = List.copyOf(ending);
        // The last write of a session whose reader stopped reading waits a second, not ten.
        stopping.forEach(RemoteConsumer::shortenOutputTimeout);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CLOSE_TIMEOUT_MS);
        stopping.forEach(consumer -> consumer.awaitEnd(deadline));
    }

    private RemoteConsumer consumer(ClientInfo client) {
        return consumers.computeIfAbsent(client.clientId(), id -> new RemoteConsumer(client));
    }

    private void disconnected(ClientInfo client) {
        RemoteConsumer consumer = consumers.remove(client.clientId());
        if (consumer != null) {
            // Not waited for: this is the IPC host's I/O thread, which the host's close joins,
            // and a session's stop may wait long for its producers.
            consumer.end();
        }
    }

    private void enableTracing(Invocation invocation) {
        int fd = invocation.takeReceivedFd();
        RemoteConsumer consumer = consumer(invocation.client());
        if (!consumer.submitRequest(invocation, () -> consumer.enableTracing(invocation, fd))) {
            StreamSocket.closeReceived(fd);
        }
    }

    private void cloneSession(Invocation invocation) {
        StreamSocket.closeReceived(invocation.takeReceivedFd());
        run(invocation, RemoteConsumer::cloneSession);
    }

    /** The consumer whose session is {@code sessionId}, or that names it {@code uniqueName}; null if none. */
    private RemoteConsumer sessionOwner(long sessionId, String uniqueName) {
        for (RemoteConsumer consumer : consumers.values()) {
            TracingSession session = consumer.session();
            if (session == null) {
                continue;
            }
            if (sessionId != 0 ? consumer.sessionId == sessionId : uniqueName.equals(uniqueSessionName(session))) {
                return consumer;
            }
        }
        return null;
    }

    /**
     * Whether {@code caller} may see and clone {@code owner}'s session, as Perfetto's
     * IsCloneAllowed: root, or a consumer of the same uid.
     */
    private static boolean mayClone(RemoteConsumer caller, RemoteConsumer owner) {
        return caller.info.uid() == 0 || caller.info.uid() == owner.info.uid();
    }

    /**
     * Why a session of {@code config} may not start now, as Perfetto's error says it, or
     * null: Perfetto's limits on sessions at once, in all and per uid, and ffmtrace's on
     * the buffer memory of all sessions together. Called holding {@link #admission}.
     */
    private String admissionRefusal(RemoteConsumer caller, SessionConfig config) {
        int sessions = 0;
        int sessionsOfUid = 0;
        long bufferBytes = 0;
        for (RemoteConsumer consumer : consumers.values()) {
            TracingSession session = consumer.session();
            boolean running = session != null && !session.isClosed();
            long cloned = consumer.cloneBytes;
            if (!running && cloned == 0) {
                continue;
            }
            // A clone is a session, as in Perfetto, whose trace the daemon holds.
            sessions++;
            sessionsOfUid += consumer.info.uid() == caller.info.uid() ? 1 : 0;
            bufferBytes += running ? memoryBytes(session.config()) : cloned;
        }
        if (sessionsOfUid >= Guardrails.MAX_SESSIONS_PER_UID) {
            return "Too many concurrent tracing sesions (" + sessionsOfUid + ") for uid " + caller.info.uid()
                    + " limit is " + Guardrails.MAX_SESSIONS_PER_UID;
        }
        if (sessions >= Guardrails.MAX_SESSIONS) {
            return "Too many concurrent tracing sesions (" + sessions + ")";
        }
        long asked = memoryBytes(config);
        if (bufferBytes + asked > Guardrails.MAX_TOTAL_BUFFER_BYTES) {
            return "Requested too large trace buffer (" + asked / 1024 + "kB  > "
                    + (Guardrails.MAX_TOTAL_BUFFER_BYTES - bufferBytes) / 1024 + " kB)";
        }
        return null;
    }

    /**
     * The memory a session may make the daemon hold: its buffers, and what its ProtoVMs may
     * count (their limits), which Perfetto adds to a buffer's memory use for its watchdog.
     */
    private static long memoryBytes(SessionConfig config) {
        long buffers = config.buffers().stream().mapToLong(SessionConfig.Buffer::sizeBytes).sum();
        long vms = config.dataSources().stream().filter(SessionConfig.DataSource::hasProtoVm)
                .mapToLong(source -> source.protoVmMemoryLimitKb() * 1024).sum();
        return buffers + vms;
    }

    private static String uniqueSessionName(TracingSession session) {
        TraceConfig.Decoder config = new TraceConfig.Decoder();
        config.reset(session.config().traceConfig());
        return config.hasUniqueSessionName() ? config.uniqueSessionName() : "";
    }

    @FunctionalInterface
    private interface Request {
        void run(RemoteConsumer consumer, Invocation invocation);
    }

    /**
     * Runs {@code request} on the consumer's worker, in the order the requests came;
     * arguments that are not a protobuf message fail the call, as Perfetto's host fails
     * one whose request does not decode.
     */
    private void run(Invocation invocation, Request request) {
        ProtoDecoder args = new ProtoDecoder().reset(MemorySegment.ofArray(invocation.args()));
        while (args.next()) {
            // Each field checked; their values are the method's business.
        }
        if (args.hasError()) {
            invocation.fail();
            return;
        }
        RemoteConsumer consumer = consumer(invocation.client());
        consumer.submitRequest(invocation, () -> {
            try {
                request.run(consumer, invocation);
            } catch (RuntimeException e) {
                // A bug's exception ends the request, not the consumer's worker: the caller is answered.
                requestFailures.incrementAndGet();
                invocation.failIfOpen();
            }
        });
    }

    /**
     * The service's producers, their data sources and this port's sessions the caller may
     * clone (all are counted in {@code num_sessions}, as in Perfetto), split over replies
     * under the frame limit ({@link ServiceStateReplies}); an entry too large for any
     * reply is counted in {@link #stateEntriesLeftOut()}, the rest still sent.
     */
    private void queryServiceState(RemoteConsumer caller, Invocation invocation) {
        QueryServiceStateRequest.Decoder request = parse(invocation, QueryServiceStateRequest.Decoder::new);
        if (request == null) {
            return;
        }
        Map<Producer, List<String>> registered = request.sessionsOnly() ? Map.of() : service.registeredDataSources();
        ServiceStateReplies replies = new ServiceStateReplies();
        registered.keySet().forEach(replies::addProducer);
        int sessions = 0;
        int started = 0;
        for (RemoteConsumer consumer : consumers.values()) {
            TracingSession session = consumer.session();
            if (session == null || session.isClosed()) {
                continue;
            }
            sessions++;
            started += session.isStopped() ? 0 : 1;
            // Counted, not listed, as in Perfetto: another user's session is not the caller's to see.
            if (mayClone(caller, consumer)) {
                replies.addSession(consumer.sessionId, consumer.info.uid(), consumer.startRealtimeNs, session);
            }
        }
        registered.forEach((producer, names) -> names.forEach(name -> replies.addDataSource(producer.id(), name)));
        int sessionCount = sessions;
        int startedCount = started;
        // Counted before the replies go: a consumer that has them sees the count.
        stateEntriesLeftOut.addAndGet(replies.tooLarge());
        replies.send(invocation, state -> {
            state.setSupportsTracingSessions(true);
            state.setNumSessions(sessionCount);
            state.setNumSessionsStarted(startedCount);
            state.setTracingServiceVersion(version);
        });
    }

    /** What this service can do: observable events and CloneSession, no output_path. */
    private static void queryCapabilities(Invocation invocation) {
        HeapBuffered<QueryCapabilitiesResponse> reply = new HeapBuffered<>(QueryCapabilitiesResponse.FACTORY);
        TracingServiceCapabilities capabilities = reply.get().setCapabilities();
        capabilities.setHasQueryCapabilities(true);
        capabilities.addObservableEvents(ObservableEvents.Type.TYPE_DATA_SOURCES_INSTANCES);
        capabilities.addObservableEvents(ObservableEvents.Type.TYPE_ALL_DATA_SOURCES_STARTED);
        capabilities.addObservableEvents(ObservableEvents.Type.TYPE_CLONE_TRIGGER_HIT);
        capabilities.setHasTraceConfigOutputPath(false);
        capabilities.setHasCloneSession(true);
        invocation.reply(reply.toByteArray());
    }

    /** Refused as Perfetto refuses it since Android U. */
    private static void saveTraceForBugreport(Invocation invocation) {
        HeapBuffered<SaveTraceForBugreportResponse> reply = new HeapBuffered<>(SaveTraceForBugreportResponse.FACTORY);
        reply.get().setSuccess(false);
        reply.get().setMsg(BUGREPORT_DEPRECATED);
        invocation.reply(reply.toByteArray());
    }

    /** The invocation's arguments as a {@code D}, or null after failing it if they do not parse. */
    private static <D extends TypedProtoDecoder> D parse(Invocation invocation, Supplier<D> decoder) {
        D parsed = decoder.get();
        parsed.reset(MemorySegment.ofArray(invocation.args()));
        if (parsed.hasError()) {
            invocation.fail();
            return null;
        }
        return parsed;
    }

    private static <M extends Message> byte[] message(MessageFactory<M> factory, Consumer<M> fill) {
        HeapBuffered<M> message = new HeapBuffered<>(factory);
        fill.accept(message.get());
        return message.toByteArray();
    }

    /** One consumer connection: its session and the replies it waits for. Used on its worker thread only, unless said. */
    private final class RemoteConsumer {
        final ClientInfo info;
        private final ExecutorService worker;
        /** The session, published for {@link #sessionCount} and QueryServiceState. */
        private volatile TracingSession session;
        private volatile long sessionId;
        /** When the session started, by CLOCK_REALTIME, for QueryServiceState. */
        private volatile long startRealtimeNs;
        /** The write_into_file output; written on the worker, its timeout shortened by {@link #close()}. */
        private volatile FileDescriptorChannel output;
        /** The deferred EnableTracing reply; guarded by this, as a session's completion may come on another thread. */
        private Invocation enableReply;
        /** The session whose stop the consumer was told of: a session stops once. */
        private TracingSession stopNotified;
        private Invocation observeReply;
        private int observedEvents;
        /** The trace of a session cloned by CloneSession, until ReadBuffers takes it or FreeBuffers drops it. */
        private byte[] clone;
        /** What {@link #clone} holds, or is reserved while it is made, for other consumers' admission; 0 without one. */
        private volatile long cloneBytes;
        private boolean allStartedNotified;
        /** Requests queued on the worker and not started. */
        private final AtomicInteger pendingRequests = new AtomicInteger();

        RemoteConsumer(ClientInfo info) {
            this.info = info;
            this.worker = Executors.newSingleThreadExecutor(
                    Thread.ofPlatform().daemon().name("consumer-port-client-" + info.clientId()).factory());
        }

        TracingSession session() {
            return session;
        }

        /**
         * Queues a request's task unless {@value Guardrails#MAX_PENDING_REQUESTS} wait
         * already (the one running is not counted): then the request fails and is counted.
         * False if not queued.
         */
        boolean submitRequest(Invocation invocation, Runnable task) {
            if (pendingRequests.incrementAndGet() > Guardrails.MAX_PENDING_REQUESTS) {
                pendingRequests.decrementAndGet();
                refusals.incrementAndGet();
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
         * worker, which then ends; {@link #close()} waits for that.
         */
        void end() {
            ending.add(this);
            boolean queued = submit(() -> {
                try {
                    freeSession();
                } finally {
                    ending.remove(this);
                }
            });
            if (!queued) {
                ending.remove(this);
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
            EnableTracingRequest.Decoder request = parse(invocation, EnableTracingRequest.Decoder::new);
            if (request == null || request.attachNotificationOnly()) {
                // Nothing to attach to: ffmtrace has no detached sessions.
                StreamSocket.closeReceived(fd);
                if (request != null) {
                    invocation.fail();
                }
                return;
            }
            Invocation previous;
            synchronized (this) {
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
                refusals.incrementAndGet();
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
            TracingSession started;
            synchronized (admission) {
                String refusal = admissionRefusal(this, config);
                if (refusal != null) {
                    if (channel != null) {
                        channel.close();
                    }
                    refusals.incrementAndGet();
                    return refusal;
                }
                try {
                    started = service.startSession(config, channel);
                } catch (RuntimeException e) {
                    if (channel != null) {
                        channel.close();
                    }
                    return "cannot start the session: " + e.getMessage();
                }
                output = channel;
                sessionId = lastSessionId.incrementAndGet();
                startRealtimeNs = Os.clockNanos(Os.CLOCK_REALTIME);
                allStartedNotified = false;
                // Published last, for QueryServiceState; within the admission, for the next admission's count.
                session = started;
            }
            started.completion().whenComplete((s, failure) -> submit(() -> sessionStopped(started, failure)));
            started.onCloneTrigger(hit -> submit(() -> notifyCloneTrigger(started, hit)));
            started.onAllDataSourcesStarted(() -> submit(this::maybeNotifyAllDataSourcesStarted));
            // All may have started before the listener was set.
            maybeNotifyAllDataSourcesStarted();
            return null;
        }

        /** The session stopped: its output is complete, and the consumer told. */
        private void sessionStopped(TracingSession stopped, Throwable failure) {
            if (stopped != session || stopped == stopNotified) {
                return;
            }
            stopNotified = stopped;
            closeOutput();
            notifyInstances(ObservableEvents.DataSourceInstanceState.DATA_SOURCE_INSTANCE_STATE_STOPPED);
            Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
            tracingDisabled(stopped, cause == null ? null : "cannot write the trace: " + cause.getMessage());
        }

        /** Resolves the deferred EnableTracing reply, if it waits: disabled, with the error if any. */
        private void tracingDisabled(TracingSession stopped, String error) {
            Invocation reply;
            synchronized (this) {
                reply = enableReply;
                enableReply = null;
            }
            if (reply != null) {
                reply.reply(message(EnableTracingResponse.FACTORY, response -> {
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
                byte[] trace = clone;
                dropClone();
                TracePackets.cutIntoSlices(trace, (reply, last) -> {
                    if (last) {
                        invocation.reply(reply);
                    } else {
                        invocation.replyMore(reply);
                    }
                });
                return;
            }
            if (current == null || current.config().writeIntoFile() || current.isClosed()) {
                invocation.reply(new byte[0]);
                return;
            }
            TracePackets.SliceWriter replies = TracePackets.replies(invocation);
            try {
                current.writeTrace(replies);
            } catch (IOException | RuntimeException e) {
                // The consumer sees the end of the data; what was read is lost, as when a readback fails in Perfetto.
            }
            replies.finish();
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
            FlushRequest.Decoder request = parse(invocation, FlushRequest.Decoder::new);
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
            CloneSessionRequest.Decoder request = parse(invocation, CloneSessionRequest.Decoder::new);
            if (request == null) {
                return;
            }
            long[] uuid = new long[2];
            String error = cloneFrom(request, uuid);
            invocation.reply(message(CloneSessionResponse.FACTORY, response -> {
                response.setSuccess(error == null);
                response.setError(error == null ? "" : error);
                response.setUuidMsb(uuid[0]);
                response.setUuidLsb(uuid[1]);
                response.setWasWriteIntoFile(false);
            }));
        }

        /** Takes the clone into {@link #clone} and its trace_uuid into {@code uuid}; returns why not, or null. */
        private String cloneFrom(CloneSessionRequest.Decoder request, long[] uuid) {
            RemoteConsumer owner = sessionOwner(request.sessionId(),
                    request.hasUniqueSessionName() ? request.uniqueSessionName() : "");
            TracingSession source = owner == null ? null : owner.session();
            if (source == null || (request.sessionId() == 0 && request.uniqueSessionName().isEmpty())) {
                return "Tracing session not found";
            }
            if (!mayClone(this, owner)) {
                return "Not allowed to clone a session from another UID";
            }
            if (source.config().writeIntoFile()) {
                return "Cloning a write_into_file session is not supported by ffmtrace's service";
            }
            if (session != null || clone != null) {
                return "The consumer is already attached to another tracing session";
            }
            synchronized (admission) {
                String refusal = admissionRefusal(this, source.config());
                if (refusal != null) {
                    refusals.incrementAndGet();
                    return refusal;
                }
                // Reserved while the copy is made (at most the buffers' size), outside the admission.
                cloneBytes = Math.max(1, memoryBytes(source.config()));
            }
            ByteArrayOutputStream trace = new ByteArrayOutputStream();
            try {
                if (!source.isStopped()) {
                    source.flush(Duration.ofMillis(DEFAULT_FLUSH_TIMEOUT_MS));
                }
                source.writeClone(Channels.newChannel(trace), cloneTrigger(request));
            } catch (IOException | RuntimeException e) {
                cloneBytes = 0;
                return "session not found";
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                cloneBytes = 0;
                return "session not found";
            }
            clone = trace.toByteArray();
            cloneBytes = Math.max(1, clone.length);
            TracePackets.traceUuid(clone, uuid);
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
            clone = null;
            cloneBytes = 0;
        }

        void getTraceStats(Invocation invocation) {
            TracingSession current = session;
            if (current == null || current.isClosed()) {
                invocation.fail();
                return;
            }
            invocation.reply(message(GetTraceStatsResponse.FACTORY, response -> {
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
            ObserveEventsRequest.Decoder request = parse(invocation, ObserveEventsRequest.Decoder::new);
            if (request == null) {
                return;
            }
            closeObserveStream();
            int mask = 0;
            RepeatedScalarIterator events = request.eventsToObserve(new RepeatedScalarIterator());
            while (events.next()) {
                mask |= (int) events.value();
            }
            observeReply = invocation;
            observedEvents = mask;
            if (mask == 0) {
                closeObserveStream();
                return;
            }
            notifyInstances(ObservableEvents.DataSourceInstanceState.DATA_SOURCE_INSTANCE_STATE_STARTED);
            maybeNotifyAllDataSourcesStarted();
        }

        /** Ends the event stream, if open, with an empty last reply. */
        private void closeObserveStream() {
            if (observeReply != null) {
                observeReply.reply(new byte[0]);
                observeReply = null;
            }
        }

        /** Tells an observer, once per session, that every data source of the config is started. */
        void maybeNotifyAllDataSourcesStarted() {
            TracingSession current = session;
            if (current == null || allStartedNotified || !current.isStarted() || current.isStopped()
                    || current.dataSourcesNotStarted() != 0) {
                return;
            }
            if (observeReply == null || (observedEvents & ObservableEvents.Type.TYPE_ALL_DATA_SOURCES_STARTED.number()) == 0) {
                return;
            }
            allStartedNotified = true;
            observeReply.replyMore(message(ObserveEventsResponse.FACTORY,
                    response -> response.setEvents().setAllDataSourcesStarted(true)));
        }

        /**
         * Tells an observer of CLONE_TRIGGER_HIT that a CLONE_SNAPSHOT trigger of its
         * session is due: the consumer (Perfetto's command line) clones the session then.
         */
        private void notifyCloneTrigger(TracingSession triggered, TriggerHit hit) {
            if (triggered != session || observeReply == null
                    || (observedEvents & ObservableEvents.Type.TYPE_CLONE_TRIGGER_HIT.number()) == 0) {
                return;
            }
            long id = sessionId;
            observeReply.replyMore(message(ObserveEventsResponse.FACTORY, response -> {
                ObservableEvents.CloneTriggerHit event = response.setEvents().setCloneTriggerHit();
                event.setTracingSessionId(id);
                event.setTriggerName(hit.name());
                event.setProducerName(hit.producerName());
                event.setProducerUid(hit.producerUid());
                event.setBootTimeNs(hit.bootTimeNanos());
                event.setTriggerDelayMs(hit.stopDelayMs());
            }));
        }

        /** Tells an observer of data source instances that each of the session's started ones is in {@code state}. */
        private void notifyInstances(ObservableEvents.DataSourceInstanceState state) {
            TracingSession current = session;
            if (current == null || observeReply == null
                    || (observedEvents & ObservableEvents.Type.TYPE_DATA_SOURCES_INSTANCES.number()) == 0
                    || (state == ObservableEvents.DataSourceInstanceState.DATA_SOURCE_INSTANCE_STATE_STARTED
                    && !current.isStarted())) {
                return;
            }
            List<String> notStarted = current.warnings().stream().map(w -> w.dataSource()).toList();
            List<String[]> instances = new ArrayList<>();
            Map<Producer, List<String>> registered = service.registeredDataSources();
            for (SessionConfig.DataSource wanted : current.config().dataSources()) {
                if (state == ObservableEvents.DataSourceInstanceState.DATA_SOURCE_INSTANCE_STATE_STARTED
                        && notStarted.contains(wanted.name())) {
                    continue;
                }
                registered.forEach((producer, names) -> {
                    if (names.contains(wanted.name())) {
                        instances.add(new String[] {producer.name(), wanted.name()});
                    }
                });
            }
            if (instances.isEmpty()) {
                return;
            }
            observeReply.replyMore(message(ObserveEventsResponse.FACTORY, response -> {
                ObservableEvents events = response.setEvents();
                for (String[] instance : instances) {
                    ObservableEvents.DataSourceInstanceStateChange change = events.addInstanceStateChanges();
                    change.setProducerName(instance[0]);
                    change.setDataSourceName(instance[1]);
                    change.setState(state);
                }
            }));
        }
    }
}
