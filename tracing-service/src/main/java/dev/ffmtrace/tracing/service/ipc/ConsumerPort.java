package dev.ffmtrace.tracing.service.ipc;

import dev.ffmtrace.ipc.ClientInfo;
import dev.ffmtrace.ipc.Invocation;
import dev.ffmtrace.ipc.ServiceDescriptor;
import dev.ffmtrace.ipc.ServiceDescriptor.Method;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.perfetto.protos.ObservableEvents;
import dev.ffmtrace.perfetto.protos.QueryCapabilitiesResponse;
import dev.ffmtrace.perfetto.protos.QueryServiceStateRequest;
import dev.ffmtrace.perfetto.protos.SaveTraceForBugreportResponse;
import dev.ffmtrace.perfetto.protos.TracingServiceCapabilities;
import dev.ffmtrace.protozero.ProtoDecoder;
import dev.ffmtrace.tracing.service.Guardrails;
import dev.ffmtrace.tracing.service.Producer;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

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
 * consumer's requests then run in order on a worker thread of its own
 * ({@link RemoteConsumer}), so a slow stop or flush delays only that consumer. This class
 * decodes and dispatches the requests, and answers those about the whole service
 * (QueryServiceState, QueryCapabilities).
 *
 * <p>Events reach a consumer's worker from the session ({@link TracingSession#completion()},
 * {@link TracingSession#onCloneTrigger}, {@link TracingSession#onAllDataSourcesStarted}):
 * no thread polls the sessions.
 */
public final class ConsumerPort implements AutoCloseable {
    /** The name clients bind. */
    public static final String SERVICE_NAME = "ConsumerPort";
    /** Perfetto's kIPCBufferSize, which a whole frame must fit. */
    static final int IPC_BUFFER_SIZE = 128 * 1024;
    /** A ReadBuffers reply's slices stay under this, as Perfetto's estimate: 16 bytes per slice, 64 for the frame. */
    static final int MAX_READ_REPLY = IPC_BUFFER_SIZE - 64;
    /** The largest slice of a packet: Perfetto's packets are slices of at most a 64 KiB SMB page. */
    static final int MAX_SLICE = 64 * 1024;
    /**
     * How long {@link #close()} waits for the consumers' workers: the longest stop a
     * session may take. A worker still busy then is interrupted, and what it had queued
     * dropped; the service's close frees the sessions left.
     */
    private static final long CLOSE_TIMEOUT_MS = Guardrails.MAX_DATA_SOURCE_STOP_TIMEOUT_MS + RemoteConsumer.STOP_GRACE_MS;
    private static final String BUGREPORT_DEPRECATED = "SaveTraceForBugreport is deprecated. Use "
            + "CloneSession(kBugreportSessionId) instead.";

    private final TracingService service;
    private final String version;
    private final Consumers consumers = new Consumers();
    private final PortCounters counters = new PortCounters();
    private final SessionAdmission admission;
    private final ServiceDescriptor descriptor;

    /**
     * A port on {@code service}, which stays its owner's.
     *
     * @param version what QueryServiceState reports as {@code tracing_service_version}
     */
    public ConsumerPort(TracingService service, String version) {
        this.service = service;
        this.version = version;
        this.admission = new SessionAdmission(consumers, counters);
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
        return counters.stateEntriesLeftOut();
    }

    /** Requests whose handling threw: each was failed, its consumer served on. */
    public long requestFailures() {
        return counters.requestFailures();
    }

    /**
     * Requests refused by a {@link Guardrails guardrail}: sessions over Perfetto's limits
     * (buffers per session, sessions in all and per uid) or ffmtrace's (buffer memory of
     * all sessions), requests over a connection's {@value Guardrails#MAX_PENDING_REQUESTS}
     * pending ones, and every call of a client whose uid the kernel did not vouch for (the
     * port hosted on TCP). Each got Perfetto's error reply (a failed call for the last two).
     */
    public long refusals() {
        return counters.refusals();
    }

    /** Consumers connected now that have invoked a method. */
    public int consumerCount() {
        return consumers.connected().size();
    }

    /** Sessions of this port's consumers not freed yet. */
    public int sessionCount() {
        return (int) consumers.connected().stream().filter(c -> c.session() != null).count();
    }

    /**
     * Frees every consumer's session and waits for their workers, at most the longest
     * stop a session may take; close the IPC host first, so that no request comes in
     * meanwhile. An output that takes no bytes then holds its session's last write
     * {@link RemoteConsumer#CLOSING_OUTPUT_WRITE_TIMEOUT}.
     */
    @Override
    public void close() {
        for (RemoteConsumer consumer : List.copyOf(consumers.connected())) {
            consumers.remove(consumer.info.clientId());
            consumer.end();
        }
        List<RemoteConsumer> stopping = consumers.stillEnding();
        // The last write of a session whose reader stopped reading waits a second, not ten.
        stopping.forEach(RemoteConsumer::shortenOutputTimeout);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CLOSE_TIMEOUT_MS);
        stopping.forEach(consumer -> consumer.awaitEnd(deadline));
    }

    /**
     * Fails, and counts as a refusal, the call of a client whose uid the kernel did not
     * vouch for (a TCP peer: this port hosted on a TCP host): a consumer's uid decides the
     * sessions it may act on, uid 0 any of them, and such a peer has none or names one.
     */
    private boolean refusedUnvouched(Invocation invocation) {
        if (invocation.client().vouched()) {
            return false;
        }
        counters.refused();
        invocation.fail();
        return true;
    }

    private RemoteConsumer consumer(ClientInfo client) {
        return consumers.of(client, info -> new RemoteConsumer(info, service, consumers, admission, counters));
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
        if (refusedUnvouched(invocation)) {
            StreamSocket.closeReceived(fd);
            return;
        }
        RemoteConsumer consumer = consumer(invocation.client());
        if (!consumer.submitRequest(invocation, () -> consumer.enableTracing(invocation, fd))) {
            StreamSocket.closeReceived(fd);
        }
    }

    private void cloneSession(Invocation invocation) {
        StreamSocket.closeReceived(invocation.takeReceivedFd());
        run(invocation, RemoteConsumer::cloneSession);
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
        if (refusedUnvouched(invocation)) {
            return;
        }
        RemoteConsumer consumer = consumer(invocation.client());
        consumer.submitRequest(invocation, () -> {
            try {
                request.run(consumer, invocation);
            } catch (RuntimeException e) {
                // A bug's exception ends the request, not the consumer's worker: the caller is answered.
                counters.requestFailed();
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
        QueryServiceStateRequest.Decoder request = Requests.parse(invocation, QueryServiceStateRequest.Decoder::new);
        if (request == null) {
            return;
        }
        Map<Producer, List<String>> registered = request.sessionsOnly() ? Map.of() : service.registeredDataSources();
        ServiceStateReplies replies = new ServiceStateReplies();
        registered.keySet().forEach(replies::addProducer);
        int sessions = 0;
        int started = 0;
        for (RemoteConsumer consumer : consumers.connected()) {
            TracingSession session = consumer.session();
            if (session == null || session.isClosed()) {
                continue;
            }
            sessions++;
            started += session.isStopped() ? 0 : 1;
            // Counted, not listed, as in Perfetto: another user's session is not the caller's to see.
            if (caller.mayClone(consumer)) {
                replies.addSession(consumer.sessionId(), consumer.info.uid(), consumer.startRealtimeNs(), session);
            }
        }
        registered.forEach((producer, names) -> names.forEach(name -> replies.addDataSource(producer.id(), name)));
        int sessionCount = sessions;
        int startedCount = started;
        // Counted before the replies go: a consumer that has them sees the count.
        counters.stateEntriesLeftOut(replies.tooLarge());
        replies.send(invocation, state -> {
            state.setSupportsTracingSessions(true);
            state.setNumSessions(sessionCount);
            state.setNumSessionsStarted(startedCount);
            state.setTracingServiceVersion(version);
        });
    }

    /** What this service can do: observable events and CloneSession, no output_path. */
    private static void queryCapabilities(Invocation invocation) {
        invocation.reply(Requests.message(QueryCapabilitiesResponse.FACTORY, reply -> {
            TracingServiceCapabilities capabilities = reply.setCapabilities();
            capabilities.setHasQueryCapabilities(true);
            capabilities.addObservableEvents(ObservableEvents.Type.TYPE_DATA_SOURCES_INSTANCES);
            capabilities.addObservableEvents(ObservableEvents.Type.TYPE_ALL_DATA_SOURCES_STARTED);
            capabilities.addObservableEvents(ObservableEvents.Type.TYPE_CLONE_TRIGGER_HIT);
            capabilities.setHasTraceConfigOutputPath(false);
            capabilities.setHasCloneSession(true);
        }));
    }

    /** Refused as Perfetto refuses it since Android U. */
    private static void saveTraceForBugreport(Invocation invocation) {
        invocation.reply(Requests.message(SaveTraceForBugreportResponse.FACTORY, reply -> {
            reply.setSuccess(false);
            reply.setMsg(BUGREPORT_DEPRECATED);
        }));
    }
}
