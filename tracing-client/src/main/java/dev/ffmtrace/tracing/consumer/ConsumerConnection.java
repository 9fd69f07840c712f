package dev.ffmtrace.tracing.consumer;

import dev.ffmtrace.ipc.BoundService;
import dev.ffmtrace.ipc.IpcClient;
import dev.ffmtrace.ipc.IpcException;
import dev.ffmtrace.ipc.Reply;
import dev.ffmtrace.memory.StreamAddress;
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
import dev.ffmtrace.perfetto.protos.QueryServiceStateRequest;
import dev.ffmtrace.perfetto.protos.ReadBuffersResponse;
import dev.ffmtrace.protozero.HeapBuffered;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/**
 * A consumer of any tracing service that speaks Perfetto's consumer port (ffmtrace's
 * {@code ConsumerPort}, or Perfetto's {@code traced}), as Perfetto's ConsumerIPCClientImpl
 * drives it: {@link #enableTracing} starts a session and returns what completes when
 * tracing is disabled; then {@link #readBuffers} takes the trace, unless the service
 * wrote it into the file given with the config.
 *
 * <p>Replies are the service's bytes, parsed as untrusted. Methods block their caller
 * until the reply, at most the timeout each names; a lost connection fails them.
 */
public final class ConsumerConnection implements AutoCloseable {
    /** The IPC service a Perfetto tracing service exposes on its consumer socket. */
    private static final String CONSUMER_PORT = "ConsumerPort";

    private final IpcClient client;
    private final BoundService port;

    private ConsumerConnection(IpcClient client, BoundService port) {
        this.client = client;
        this.port = port;
    }

    /**
     * Connects to the consumer socket at {@code address} and binds its ConsumerPort.
     *
     * @throws IpcException if the service does not expose the consumer port or does not answer in time
     */
    public static ConsumerConnection connect(StreamAddress address, long timeoutMs) throws InterruptedException {
        IpcClient client = IpcClient.connect(address);
        try {
            BoundService port = await(client.bindService(CONSUMER_PORT), timeoutMs, "BindService");
            return new ConsumerConnection(client, port);
        } catch (IpcException | InterruptedException e) {
            client.close();
            throw e;
        }
    }

    /** The end of tracing: {@code error} is empty unless the service refused the config or failed. */
    public record TracingDisabled(String error) {
        public boolean ok() {
            return error.isEmpty();
        }
    }

    /**
     * Sends EnableTracing with the binary {@code traceConfig} and, for
     * {@code write_into_file}, the output's descriptor ({@code fd >= 0}; it stays the
     * caller's). The future completes when tracing is disabled, by the config's duration,
     * {@link #disableTracing}, or an error.
     */
    public CompletableFuture<TracingDisabled> enableTracing(byte[] traceConfig, int fd) {
        HeapBuffered<EnableTracingRequest> request = new HeapBuffered<>(EnableTracingRequest.FACTORY);
        request.get().appendBytes(EnableTracingRequest.TRACE_CONFIG_FIELD_NUMBER, traceConfig);
        CompletableFuture<TracingDisabled> disabled = new CompletableFuture<>();
        client.invoke(port, "EnableTracing", request.toByteArray(), fd, reply -> {
            StreamSocket.closeReceived(reply.fd());
            if (reply.hasMore()) {
                return;
            }
            if (!reply.success()) {
                disabled.complete(new TracingDisabled(
                        "EnableTracing IPC request rejected. This is likely due to a loss of the traced connection"));
                return;
            }
            EnableTracingResponse.Decoder response = new EnableTracingResponse.Decoder();
            response.reset(MemorySegment.ofArray(reply.replyProto()));
            disabled.complete(new TracingDisabled(response.hasError() ? "malformed EnableTracingResponse"
                    : response.hasErrorField() ? response.error() : ""));
        });
        return disabled;
    }

    /** DisableTracing: the service stops the session; the future of {@link #enableTracing} completes. */
    public boolean disableTracing(long timeoutMs) throws InterruptedException {
        return call("DisableTracing", new byte[0], timeoutMs).success();
    }

    /** Flush: whether every data source committed its data in time (0: the service's default timeout). */
    public boolean flush(long timeoutMs, long waitMs) throws InterruptedException {
        HeapBuffered<FlushRequest> request = new HeapBuffered<>(FlushRequest.FACTORY);
        request.get().setTimeoutMs((int) timeoutMs);
        request.get().setFlags(0);
        return call("Flush", request.toByteArray(), waitMs).success();
    }

    /** FreeBuffers: the session and its buffers go. */
    public boolean freeBuffers(long timeoutMs) throws InterruptedException {
        return call("FreeBuffers", new byte[0], timeoutMs).success();
    }

    /** GetTraceStats: the session's {@code TraceStats}, serialized; null if the service has none for us. */
    public byte[] traceStats(long timeoutMs) throws InterruptedException {
        Reply reply = call("GetTraceStats", new byte[0], timeoutMs);
        if (!reply.success()) {
            return null;
        }
        GetTraceStatsResponse.Decoder response = new GetTraceStatsResponse.Decoder();
        response.reset(MemorySegment.ofArray(reply.replyProto()));
        return response.hasError() || !response.hasTraceStats() ? null
                : response.field(GetTraceStatsResponse.TRACE_STATS_FIELD_NUMBER).asBytes();
    }

    /**
     * QueryServiceState: the whole {@code TracingServiceState}, serialized (the replies'
     * parts concatenated, as Perfetto's client merges them).
     */
    public byte[] queryServiceState(long timeoutMs) throws InterruptedException {
        HeapBuffered<QueryServiceStateRequest> request = new HeapBuffered<>(QueryServiceStateRequest.FACTORY);
        request.get().setSessionsOnly(false);
        ByteArrayOutputStream state = new ByteArrayOutputStream();
        CompletableFuture<Boolean> done = new CompletableFuture<>();
        client.invoke(port, "QueryServiceState", request.toByteArray(), -1, reply -> {
            StreamSocket.closeReceived(reply.fd());
            if (reply.success()) {
                dev.ffmtrace.perfetto.protos.QueryServiceStateResponse.Decoder response =
                        new dev.ffmtrace.perfetto.protos.QueryServiceStateResponse.Decoder();
                response.reset(MemorySegment.ofArray(reply.replyProto()));
                if (!response.hasError() && response.hasServiceState()) {
                    state.writeBytes(response.field(
                            dev.ffmtrace.perfetto.protos.QueryServiceStateResponse.SERVICE_STATE_FIELD_NUMBER).asBytes());
                }
            }
            if (!reply.hasMore()) {
                done.complete(reply.success());
            }
        });
        return await(done, timeoutMs, "QueryServiceState") ? state.toByteArray() : null;
    }

    /** The outcome of CloneSession: the clone's trace uuid on success, else the service's error. */
    public record Cloned(boolean success, String error, long uuidMsb, long uuidLsb) {
    }

    /** A CLONE_SNAPSHOT trigger of session {@code sessionId}, as the service reports it (ObservableEvents.CloneTriggerHit). */
    public record CloneTriggerHit(long sessionId, String triggerName, String producerName, int producerUid,
                                  long bootTimeNs, long delayMs) {
    }

    /**
     * CloneSession: a copy of session {@code sessionId} (another consumer's) becomes this
     * consumer's, stopped, to read with {@link #readBuffers}; the source runs on.
     */
    public Cloned cloneSession(long sessionId, long timeoutMs) throws InterruptedException {
        return cloneSession(sessionId, null, timeoutMs);
    }

    /**
     * CloneSession for a CLONE_SNAPSHOT trigger, as Perfetto's command line makes one: the
     * trigger goes along, and the service writes it into the clone as its
     * {@code clone_snapshot_trigger} packet.
     */
    public Cloned cloneSession(CloneTriggerHit hit, long timeoutMs) throws InterruptedException {
        return cloneSession(hit.sessionId(), hit, timeoutMs);
    }

    private Cloned cloneSession(long sessionId, CloneTriggerHit hit, long timeoutMs) throws InterruptedException {
        HeapBuffered<CloneSessionRequest> request = new HeapBuffered<>(CloneSessionRequest.FACTORY);
        request.get().setSessionId(sessionId);
        if (hit != null) {
            request.get().setCloneTriggerName(hit.triggerName());
            request.get().setCloneTriggerProducerName(hit.producerName());
            request.get().setCloneTriggerTrustedProducerUid(hit.producerUid());
            request.get().setCloneTriggerBootTimeNs(hit.bootTimeNs());
            request.get().setCloneTriggerDelayMs(hit.delayMs());
        }
        Reply reply = call("CloneSession", request.toByteArray(), timeoutMs);
        if (!reply.success()) {
            return new Cloned(false, "CloneSession failed", 0, 0);
        }
        CloneSessionResponse.Decoder response = new CloneSessionResponse.Decoder();
        response.reset(MemorySegment.ofArray(reply.replyProto()));
        if (response.hasError()) {
            return new Cloned(false, "malformed CloneSessionResponse", 0, 0);
        }
        return new Cloned(response.success(), response.hasErrorField() ? response.error() : "", response.uuidMsb(),
                response.uuidLsb());
    }

    /**
     * ObserveEvents: from now on {@code onEvents} gets each {@code ObservableEvents} of the
     * kinds in {@code events}, serialized, on the connection's thread; no kinds ends the
     * observing. Returns when the request is sent.
     */
    public void observeEvents(List<ObservableEvents.Type> events, Consumer<byte[]> onEvents) {
        HeapBuffered<ObserveEventsRequest> request = new HeapBuffered<>(ObserveEventsRequest.FACTORY);
        events.forEach(request.get()::addEventsToObserve);
        client.invoke(port, "ObserveEvents", request.toByteArray(), -1, reply -> {
            StreamSocket.closeReceived(reply.fd());
            if (!reply.success()) {
                return;
            }
            ObserveEventsResponse.Decoder response = new ObserveEventsResponse.Decoder();
            response.reset(MemorySegment.ofArray(reply.replyProto()));
            if (!response.hasError() && response.hasEvents()) {
                onEvents.accept(response.field(ObserveEventsResponse.EVENTS_FIELD_NUMBER).asBytes());
            }
        });
    }

    /**
     * Observes CLONE_TRIGGER_HIT: {@code onHit} gets each CLONE_SNAPSHOT trigger of the
     * session this consumer runs, on the connection's thread, as Perfetto's command line
     * observes them to clone the session; events of other kinds are not asked for.
     */
    public void observeCloneTriggers(Consumer<CloneTriggerHit> onHit) {
        observeEvents(List.of(ObservableEvents.Type.TYPE_CLONE_TRIGGER_HIT), bytes -> {
            ObservableEvents.Decoder events = new ObservableEvents.Decoder();
            events.reset(MemorySegment.ofArray(bytes));
            ObservableEvents.CloneTriggerHit.Decoder hit = new ObservableEvents.CloneTriggerHit.Decoder();
            if (!events.hasError() && events.cloneTriggerHit(hit) && !hit.hasError()) {
                onHit.accept(new CloneTriggerHit(hit.tracingSessionId(), hit.triggerName(), hit.producerName(),
                        hit.producerUid(), hit.bootTimeNs(), hit.triggerDelayMs()));
            }
        });
    }

    /**
     * ReadBuffers: everything the service's buffers hold now, as a {@code Trace} (each
     * packet as field 1), glued from the streamed slices.
     *
     * @throws IpcException if the stream does not end within {@code timeoutMs}
     */
    public byte[] readBuffers(long timeoutMs) throws InterruptedException {
        TraceAssembler trace = new TraceAssembler();
        CompletableFuture<Boolean> done = new CompletableFuture<>();
        client.invoke(port, "ReadBuffers", new byte[0], -1, reply -> {
            StreamSocket.closeReceived(reply.fd());
            if (reply.success()) {
                ReadBuffersResponse.Decoder response = new ReadBuffersResponse.Decoder();
                response.reset(MemorySegment.ofArray(reply.replyProto()));
                if (!response.hasError()) {
                    synchronized (trace) {
                        trace.append(response);
                    }
                }
            }
            if (!reply.hasMore()) {
                done.complete(reply.success());
            }
        });
        await(done, timeoutMs, "ReadBuffers");
        synchronized (trace) {
            return trace.toByteArray();
        }
    }

    public boolean isConnected() {
        return client.isConnected();
    }

    /** Disconnects: the service frees the session, if any. */
    @Override
    public void close() {
        client.close();
    }

    private Reply call(String method, byte[] args, long timeoutMs) throws InterruptedException {
        return await(client.invoke(port, method, args), timeoutMs, method);
    }

    private static <T> T await(CompletableFuture<T> future, long timeoutMs, String what) throws InterruptedException {
        try {
            return future.get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new IpcException(what + ": no reply from the service within " + timeoutMs + " ms");
        } catch (ExecutionException e) {
            throw e.getCause() instanceof IpcException ipc ? ipc : new IpcException(what + ": " + e.getCause());
        }
    }
}
