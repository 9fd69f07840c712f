package dev.ffmtrace.tracing.producer;

import dev.ffmtrace.ipc.BoundService;
import dev.ffmtrace.ipc.IpcClient;
import dev.ffmtrace.ipc.Reply;
import dev.ffmtrace.memory.MemoryFile;
import dev.ffmtrace.memory.Seals;
import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.perfetto.protos.CommitDataRequest;
import dev.ffmtrace.perfetto.protos.DataSourceConfig;
import dev.ffmtrace.perfetto.protos.GetAsyncCommandResponse;
import dev.ffmtrace.perfetto.protos.NotifyDataSourceStartedRequest;
import dev.ffmtrace.perfetto.protos.NotifyDataSourceStoppedRequest;
import dev.ffmtrace.perfetto.protos.RegisterTraceWriterRequest;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.UnregisterTraceWriterRequest;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.Message;
import dev.ffmtrace.protozero.MessageFactory;
import dev.ffmtrace.protozero.RepeatedScalarIterator;
import dev.ffmtrace.tracing.smb.CommitRequest;
import dev.ffmtrace.tracing.smb.CommitTransport;
import dev.ffmtrace.tracing.smb.SharedMemoryArbiter;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * The producer's end of one connection to the service (the part of Perfetto's
 * {@code ProducerIPCClientImpl} that lives as long as its socket): the client, the bound
 * port, the SMB and its arbiter, the data source instances. It follows the service's
 * commands and turns the writers' commits into CommitData; the {@link ProducerConnection}
 * that opened it sends what it queues and ends it.
 *
 * <p>Its monitor guards its state. Commands run on the client's I/O thread, one at a
 * time: each changes the state under the monitor, then tells the handlers without it (a
 * handler may hand its instance to a thread that makes writers, and wait for it), then
 * sends what follows them.
 *
 * <p>About 500 lines: the six commands' checks against one state, which stays together.
 */
final class ProducerEndpoint implements CommitTransport {
    /** The largest SMB accepted from a service: Perfetto's service never makes one over 32 MiB. */
    static final long MAX_SMB_SIZE = 64L << 20;
    /** The buffer a producer writes into under shared memory emulation: Perfetto's kShmemEmulationSize. */
    static final int EMULATED_SMB_SIZE = 1 << 20;

    private final IpcClient client;
    private final BoundService port;
    private final Map<Long, EndpointInstance> instances = new HashMap<>();
    /** The service asked for shared memory emulation: no SMB is shared, commits carry the chunks. */
    private final boolean emulated;
    private volatile boolean live = true;
    /** Tells the handlers, outside this endpoint's monitor. */
    private final DataSourceCallbacks callbacks;
    /** Torn down: takes no more commands, though its last messages may still go out. Guarded by this. */
    private boolean closing;
    private SharedMemory smb;
    private SharedMemoryArbiter arbiter;
    private final OutgoingQueue<ProducerEndpoint> outgoing;
    private final ProducerCounters counters;
    /** The connection's data sources by name, looked up when the service sets one up. */
    private final Function<String, ProducerConnection.Registration> registrations;
    /** A service in this process to commit into by calls, if it has this producer; or null. */
    private final LocalCommits localService;
    /** The in-process service's commit path, when the socket leads to one; set before the arbiter. */
    private volatile CommitTransport local;
    /** Where a CommitData is encoded; used under the arbiter's lock, which every commit holds. */
    private final HeapBuffered<CommitDataRequest> commitEncoder = new HeapBuffered<>(CommitDataRequest.FACTORY);

    /**
     * @param providedSmb the buffer the producer offered and the service took, or null
     */
    ProducerEndpoint(IpcClient client, BoundService port, boolean emulated, SharedMemory providedSmb,
                     OutgoingQueue<ProducerEndpoint> outgoing, ProducerCounters counters,
                     Function<String, ProducerConnection.Registration> registrations, LocalCommits localService) {
        this.client = client;
        this.port = port;
        this.emulated = emulated;
        this.smb = providedSmb;
        this.outgoing = outgoing;
        this.counters = counters;
        this.callbacks = new DataSourceCallbacks(counters.handlerFailures);
        this.registrations = registrations;
        this.localService = localService;
    }

    IpcClient client() {
        return client;
    }

    BoundService port() {
        return port;
    }

    boolean isLive() {
        return live;
    }

    /** The arbiter; under the endpoint's lock, once SetupTracing went through. */
    SharedMemoryArbiter arbiter() {
        return arbiter;
    }

    /** The arbiter's counters, or null before SetupTracing. */
    synchronized SharedMemoryArbiter.Stats arbiterStats() {
        return arbiter == null ? null : arbiter.stats();
    }

    void countWriterRefused() {
        counters.writersRefused.incrementAndGet();
    }

    /**
     * Ends the instances (their handlers told, with nothing to wait for) and closes their
     * writers; the endpoint takes no more commands. With {@code graceful}, it stays live
     * for the writers' last commits to be sent; else they are dropped.
     */
    void stopInstances(boolean graceful) {
        List<EndpointInstance> stopped;
        List<TraceWriter<TracePacket>> writers = new ArrayList<>();
        synchronized (this) {
            live = graceful;
            closing = true;
            stopped = new ArrayList<>(instances.values());
            instances.clear();
            for (EndpointInstance instance : stopped) {
                writers.addAll(instance.takeWriters());
            }
        }
        for (EndpointInstance instance : stopped) {
            synchronized (this) {
                instance.setState(EndpointInstance.State.STOPPED);
            }
            callbacks.tellStop(instance, () -> { }, true);
        }
        for (TraceWriter<TracePacket> writer : writers) {
            if (writer.isOpen()) {
                if (!graceful) {
                    counters.writersClosedByDisconnect.incrementAndGet();
                }
                writer.close();
            }
        }
    }

    /** Closes the socket and unmaps the buffer: nothing more is sent, no writer writes. */
    void close() {
        live = false;
        client.close();
        synchronized (this) {
            if (smb != null) {
                smb.close();
            }
        }
    }

    // ---- CommitTransport: under the arbiter's lock, on any thread: hand over, or encode and queue ----

    @Override
    public void commit(CommitRequest request) {
        if (!live) {
            counters.commitsDropped.incrementAndGet();
            return;
        }
        CommitTransport direct = local;
        if (direct != null) {
            // Synchronous: what the service is told next over the socket (a flush's
            // acknowledgement, a stop) comes after these chunks, as with queued commits.
            try {
                direct.commit(request);
                counters.localCommits.incrementAndGet();
            } catch (RuntimeException e) {
                // The service closing under its producers: the chunks are lost, not the writer.
                counters.commitsDropped.incrementAndGet();
            }
            return;
        }
        // Encoded into this session's buffer (the arbiter's lock serializes commits),
        // then copied into a reused slot of the queue: nothing is allocated. Emulated
        // chunks can make a request larger than a frame: it goes in parts, in order.
        int next = 0;
        do {
            commitEncoder.reset();
            next = request.writeTo(commitEncoder.get(), next, CommitRequest.MAX_COMMIT_BYTES);
            commitEncoder.get().finalizeMessage();
            if (!outgoing.addCommit(this, "CommitData", commitEncoder.buffer())) {
                counters.commitsDropped.incrementAndGet();
            }
        } while (next < request.entries());
    }

    @Override
    public void traceWriterRegistered(int writerId, int targetBuffer) {
        byte[] args = encode(RegisterTraceWriterRequest.FACTORY, message -> {
            message.setTraceWriterId(writerId);
            message.setTargetBuffer(targetBuffer);
        });
        outgoing.add(this, "RegisterTraceWriter", args, null);
    }

    @Override
    public void traceWriterUnregistered(int writerId) {
        byte[] args = encode(UnregisterTraceWriterRequest.FACTORY, message -> message.setTraceWriterId(writerId));
        outgoing.add(this, "UnregisterTraceWriter", args, null);
    }

    // ---- the service's commands, on the client's I/O thread ----

    void onCommand(Reply reply) {
        int fd = reply.fd();
        if (!reply.success()) {
            // The stream ended: the service or the connection is going away.
            StreamSocket.closeReceived(fd);
            return;
        }
        boolean accepted;
        try {
            accepted = handle(reply.replyProto(), fd);
        } catch (RuntimeException e) {
            accepted = false;
        }
        if (!accepted) {
            counters.commandsRejected.incrementAndGet();
        }
    }

    /**
     * Handles one command; false if it was rejected. Owns {@code fd}: takes it or
     * closes it. The handlers' calls and what must follow them run after the monitor is
     * released, in order.
     */
    private boolean handle(byte[] bytes, int fd) {
        List<Runnable> then = new ArrayList<>();
        boolean accepted;
        synchronized (this) {
            accepted = decide(bytes, fd, then);
        }
        for (Runnable step : then) {
            step.run();
        }
        return accepted;
    }

    /** {@link #handle}'s part under the monitor: the state changes; the rest goes into {@code then}. */
    private boolean decide(byte[] bytes, int fd, List<Runnable> then) {
        GetAsyncCommandResponse.Decoder command = new GetAsyncCommandResponse.Decoder();
        command.reset(MemorySegment.ofArray(bytes));
        if (!live || closing || command.hasError()) {
            StreamSocket.closeReceived(fd);
            return !command.hasError();
        }
        if (command.hasSetupTracing()) {
            GetAsyncCommandResponse.SetupTracing.Decoder setup = new GetAsyncCommandResponse.SetupTracing.Decoder();
            return command.setupTracing(setup) && !setup.hasError() ? setupTracing(setup, fd) : closing(fd);
        }
        if (fd >= 0) {
            // Only SetupTracing carries a descriptor.
            return closing(fd);
        }
        if (command.hasSetupDataSource()) {
            GetAsyncCommandResponse.SetupDataSource.Decoder setup = new GetAsyncCommandResponse.SetupDataSource.Decoder();
            return command.setupDataSource(setup) && !setup.hasError() && setup.hasNewInstanceId()
                    && setup.hasConfig() && setupDataSource(setup.newInstanceId(),
                            setup.field(GetAsyncCommandResponse.SetupDataSource.CONFIG_FIELD_NUMBER).asBytes(),
                            then) != null;
        }
        if (command.hasStartDataSource()) {
            GetAsyncCommandResponse.StartDataSource.Decoder start = new GetAsyncCommandResponse.StartDataSource.Decoder();
            return command.startDataSource(start) && !start.hasError() && start.hasNewInstanceId()
                    && start.hasConfig() && startDataSource(start.newInstanceId(),
                            start.field(GetAsyncCommandResponse.StartDataSource.CONFIG_FIELD_NUMBER).asBytes(), then);
        }
        if (command.hasStopDataSource()) {
            GetAsyncCommandResponse.StopDataSource.Decoder stop = new GetAsyncCommandResponse.StopDataSource.Decoder();
            return command.stopDataSource(stop) && !stop.hasError() && stop.hasInstanceId()
                    && stopDataSource(stop.instanceId(), then);
        }
        if (command.hasFlush()) {
            GetAsyncCommandResponse.Flush.Decoder flush = new GetAsyncCommandResponse.Flush.Decoder();
            return command.flush(flush) && !flush.hasError() && flush(flush, then);
        }
        if (command.hasClearIncrementalState()) {
            GetAsyncCommandResponse.ClearIncrementalState.Decoder clear =
                    new GetAsyncCommandResponse.ClearIncrementalState.Decoder();
            return command.clearIncrementalState(clear) && !clear.hasError() && clearIncrementalState(clear, then);
        }
        // A command this producer does not know: newer services send more kinds.
        return false;
    }

    private static boolean closing(int fd) {
        StreamSocket.closeReceived(fd);
        return false;
    }

    private boolean setupTracing(GetAsyncCommandResponse.SetupTracing.Decoder setup, int fd) {
        if (arbiter != null || !setup.hasSharedBufferPageSizeKb()) {
            return closing(fd);
        }
        long pageSize = setup.sharedBufferPageSizeKb() * 1024L;
        if (pageSize <= 0 || pageSize > Integer.MAX_VALUE) {
            return closing(fd);
        }
        if (emulated) {
            return fd < 0 && emulateSharedMemory((int) pageSize);
        }
        if (smb == null) {
            if (fd < 0) {
                return false;
            }
            MemoryFile file;
            try {
                file = MemoryFile.attach(fd, Seals.REQUIRED);
            } catch (RuntimeException e) {
                return false;
            }
            if (file.size() > MAX_SMB_SIZE || file.size() % pageSize != 0) {
                file.close();
                return false;
            }
            try {
                smb = SharedMemory.map(file);
            } catch (RuntimeException e) {
                file.close();
                return false;
            }
        } else if (fd >= 0) {
            // The service took the producer's buffer: it sends none of its own.
            return closing(fd);
        }
        if (localService != null) {
            local = localService.transportFor(smb.file());
        }
        try {
            arbiter = new SharedMemoryArbiter(smb.segment(), (int) pageSize, this);
            return true;
        } catch (IllegalArgumentException e) {
            smb.close();
            smb = null;
            return false;
        }
    }

    /** A buffer of this process's own for the writers, the service told only of the page size. */
    private boolean emulateSharedMemory(int pageSize) {
        if (smb != null || EMULATED_SMB_SIZE % pageSize != 0) {
            return false;
        }
        smb = SharedMemory.create("perfetto:shmem-emulation", EMULATED_SMB_SIZE);
        try {
            arbiter = SharedMemoryArbiter.emulated(smb.segment(), pageSize, this);
            return true;
        } catch (IllegalArgumentException e) {
            smb.close();
            smb = null;
            return false;
        }
    }

    /** A new instance in SETUP state, its handler to be told in {@code then}; null if the command does not fit. */
    private EndpointInstance setupDataSource(long id, byte[] raw, List<Runnable> then) {
        DataSourceConfig.Decoder config = new DataSourceConfig.Decoder();
        config.reset(MemorySegment.ofArray(raw));
        if (config.hasError() || !config.hasName() || !config.hasTargetBuffer() || instances.containsKey(id)) {
            return null;
        }
        long targetBuffer = config.targetBuffer() & 0xFFFF_FFFFL;
        // Perfetto's buffer ids are 16-bit.
        if (targetBuffer > 0xFFFF) {
            return null;
        }
        ProducerConnection.Registration registration = registrations.apply(config.name());
        if (registration == null) {
            return null;
        }
        EndpointInstance instance = new EndpointInstance(this, id, config.name(), raw, (int) targetBuffer,
                registration.descriptor(), registration.handler());
        instances.put(id, instance);
        then.add(() -> callbacks.tell(instance, () -> instance.handler().onSetup(instance)));
        return instance;
    }

    private boolean startDataSource(long id, byte[] config, List<Runnable> then) {
        if (arbiter == null) {
            // The service sends SetupTracing before any data source starts.
            return false;
        }
        EndpointInstance instance = instances.get(id);
        if (instance == null) {
            // Services older than Android Q send no SetupDataSource: set up here.
            instance = setupDataSource(id, config, then);
            if (instance == null) {
                return false;
            }
        } else if (instance.state() != EndpointInstance.State.SETUP) {
            return false;
        }
        instance.setState(EndpointInstance.State.STARTED);
        EndpointInstance started = instance;
        then.add(() -> callbacks.tellStart(started));
        if (instance.descriptor().willNotifyOnStart()) {
            byte[] args = encode(NotifyDataSourceStartedRequest.FACTORY, message -> message.setDataSourceId(id));
            then.add(() -> outgoing.add(this, "NotifyDataSourceStarted", args, null));
        }
        return true;
    }

    private boolean stopDataSource(long id, List<Runnable> then) {
        EndpointInstance instance = instances.get(id);
        if (instance == null || instance.state() == EndpointInstance.State.STOPPING) {
            return false;
        }
        instance.setState(EndpointInstance.State.STOPPING);
        AtomicBoolean done = new AtomicBoolean();
        Runnable finish = () -> {
            if (done.compareAndSet(false, true)) {
                finishStop(instance);
            }
        };
        then.add(() -> {
            if (!callbacks.tellStop(instance, finish, false)) {
                // Torn down meanwhile, its handler told then: the stop is done.
                finish.run();
            }
        });
        return true;
    }

    /** The handler is done: its writers are closed (committing what they hold), then the service told. */
    private void finishStop(EndpointInstance instance) {
        List<TraceWriter<TracePacket>> writers;
        synchronized (this) {
            if (instances.get(instance.id()) != instance) {
                return;
            }
            instances.remove(instance.id());
            instance.setState(EndpointInstance.State.STOPPED);
            writers = instance.takeWriters();
        }
        for (TraceWriter<TracePacket> writer : writers) {
            writer.close();
        }
        if (live && instance.descriptor().willNotifyOnStop()) {
            byte[] args = encode(NotifyDataSourceStoppedRequest.FACTORY, message -> message.setDataSourceId(instance.id()));
            outgoing.add(this, "NotifyDataSourceStopped", args, null);
        }
    }

    private boolean flush(GetAsyncCommandResponse.Flush.Decoder flush, List<Runnable> then) {
        RepeatedScalarIterator ids = flush.dataSourceIds(new RepeatedScalarIterator());
        while (ids.next()) {
            EndpointInstance instance = instances.get(ids.value());
            if (instance != null && instance.state() == EndpointInstance.State.STARTED
                    && !instance.descriptor().noFlush()) {
                then.add(() -> callbacks.tell(instance, () -> instance.handler().onFlush(instance)));
            }
        }
        if (ids.hasError()) {
            return false;
        }
        long requestId = flush.requestId();
        byte[] args = encode(CommitDataRequest.FACTORY, message -> message.setFlushRequestId(requestId));
        then.add(() -> {
            // After the handlers wrote what they held; the ack is queued behind the commits the
            // reclaim makes, so the service sees it after the data (as
            // SharedMemoryArbiterImpl::NotifyFlushComplete ensures). Under the monitor: a
            // teardown unmaps the buffer under it.
            synchronized (this) {
                if (arbiter != null && !closing) {
                    arbiter.reclaimIdleChunks();
                }
            }
            outgoing.add(this, "CommitData", args, null);
        });
        return true;
    }

    private boolean clearIncrementalState(GetAsyncCommandResponse.ClearIncrementalState.Decoder clear,
            List<Runnable> then) {
        RepeatedScalarIterator ids = clear.dataSourceIds(new RepeatedScalarIterator());
        while (ids.next()) {
            EndpointInstance instance = instances.get(ids.value());
            // An instance that just stopped is no error: the command crossed the stop.
            if (instance != null && instance.state() == EndpointInstance.State.STARTED) {
                instance.countIncrementalStateClear();
                then.add(() -> callbacks.tell(instance, () -> instance.handler().onClearIncrementalState(instance)));
            }
        }
        return !ids.hasError();
    }

    /** A request of {@code factory}'s type, filled by {@code fill}, serialized. */
    static <T extends Message> byte[] encode(MessageFactory<T> factory, Consumer<T> fill) {
        HeapBuffered<T> message = new HeapBuffered<>(factory);
        fill.accept(message.get());
        return message.toByteArray();
    }
}
