package dev.ffmtrace.tracing.service;

import dev.ffmtrace.ipc.BoundService;
import dev.ffmtrace.ipc.IpcClient;
import dev.ffmtrace.ipc.PeerIdentity;
import dev.ffmtrace.ipc.Reply;
import dev.ffmtrace.memory.Seals;
import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.perfetto.protos.CommitDataRequest;
import dev.ffmtrace.perfetto.protos.DataSourceConfig;
import dev.ffmtrace.perfetto.protos.GetAsyncCommandResponse;
import dev.ffmtrace.perfetto.protos.InitializeConnectionRequest;
import dev.ffmtrace.perfetto.protos.InitializeConnectionResponse;
import dev.ffmtrace.perfetto.protos.NotifyDataSourceStoppedRequest;
import dev.ffmtrace.perfetto.protos.RegisterDataSourceRequest;
import dev.ffmtrace.perfetto.protos.RegisterTraceWriterRequest;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.RepeatedScalarIterator;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.CommitRequest;
import dev.ffmtrace.tracing.smb.SharedMemoryArbiter;
import dev.ffmtrace.tracing.smb.TraceWriter;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbi;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A producer in the tests' hands, speaking the producer port's protocol message by
 * message over a real socket, as a Perfetto producer does; it maps the SMB the service
 * sends and writes through an arbiter whose commits are CommitData requests.
 */
final class PortProducer implements AutoCloseable {
    final IpcClient client;
    final BoundService port;
    final byte[] initializeReply;
    final BlockingQueue<Command> commands = new LinkedBlockingQueue<>();
    /** Flush request ids to acknowledge; null: flushes are acknowledged at once after committing. */
    volatile Consumer<Long> onFlush;
    /** Whether a flush returns idle writers' chunks first, as ffmtrace's producer does; the SDK leaves them to scraping. */
    volatile boolean reclaimOnFlush = true;
    volatile SharedMemory smb;
    volatile SharedMemoryArbiter arbiter;
    /** The ABI over {@link #smb} when the service emulates shared memory; written before {@link #arbiter}. */
    private volatile SharedMemoryAbi emulatedAbi;
    volatile int pageSizeKb;
    /** Whether a test has taken the SetupTracing command off {@link #commands}. */
    private boolean setupTracingTaken;

    /** One command from the service, decoded. */
    record Command(int kind, long instanceId, byte[] config, long flushRequestId, List<Long> dataSourceIds, int fd) {
    }

    private PortProducer(IpcClient client, BoundService port, byte[] initializeReply) {
        this.client = client;
        this.port = port;
        this.initializeReply = initializeReply;
    }

    /** Connects, initializes with the given hints, and opens the command stream. */
    static PortProducer connect(StreamAddress address, String name, int sizeHint, int pageHint) throws Exception {
        return connect(address, name, sizeHint, pageHint, -1, 0);
    }

    static PortProducer connect(StreamAddress address, String name, int sizeHint, int pageHint, int providedSmbFd,
                                int scrapingMode) throws Exception {
        return connect(IpcClient.connect(address), name, sizeHint, pageHint, providedSmbFd, scrapingMode);
    }

    /** As a relay connects a producer of machine {@code machineIdHint}: it names the producer first. */
    static PortProducer connectRelayed(StreamAddress address, String name, int pid, int uid, String machineIdHint,
                                       String machineName) throws Exception {
        IpcClient client = IpcClient.connect(address);
        client.setPeerIdentity(new PeerIdentity(pid, uid, machineIdHint, machineName));
        return connect(client, name, 1 << 20, 4096, -1, 0);
    }

    private static PortProducer connect(IpcClient client, String name, int sizeHint, int pageHint, int providedSmbFd,
                                        int scrapingMode) throws Exception {
        BoundService port = client.bindService(ProducerPort.SERVICE_NAME).get(5, TimeUnit.SECONDS);
        HeapBuffered<InitializeConnectionRequest> request = new HeapBuffered<>(InitializeConnectionRequest.FACTORY);
        request.get().setSharedMemorySizeHintBytes(sizeHint);
        request.get().setSharedMemoryPageSizeHintBytes(pageHint);
        request.get().setProducerName(name);
        if (scrapingMode != 0) {
            request.get().setSmbScrapingMode(InitializeConnectionRequest.ProducerSMBScrapingMode.forNumber(scrapingMode));
        }
        if (providedSmbFd >= 0) {
            request.get().setProducerProvidedShmem(true);
        }
        BlockingQueue<Reply> replies = new LinkedBlockingQueue<>();
        client.invoke(port, "InitializeConnection", request.toByteArray(), providedSmbFd, replies::add);
        Reply reply = replies.poll(5, TimeUnit.SECONDS);
        if (reply == null || !reply.success()) {
            client.close();
            throw new IllegalStateException("InitializeConnection failed: " + reply);
        }
        PortProducer producer = new PortProducer(client, port, reply.replyProto());
        client.invoke(port, "GetAsyncCommand", new byte[0], -1, producer::onCommand);
        return producer;
    }

    void registerDataSource(String name, boolean notifyOnStop, boolean clearsIncrementalState) throws Exception {
        HeapBuffered<RegisterDataSourceRequest> request = new HeapBuffered<>(RegisterDataSourceRequest.FACTORY);
        var descriptor = request.get().setDataSourceDescriptor();
        descriptor.setName(name);
        if (notifyOnStop) {
            descriptor.setWillNotifyOnStop(true);
        }
        if (clearsIncrementalState) {
            descriptor.setHandlesIncrementalStateClear(true);
        }
        call("RegisterDataSource", request.toByteArray());
    }

    void registerTraceWriter(int writerId, int targetBuffer) throws Exception {
        HeapBuffered<RegisterTraceWriterRequest> request = new HeapBuffered<>(RegisterTraceWriterRequest.FACTORY);
        request.get().setTraceWriterId(writerId);
        request.get().setTargetBuffer(targetBuffer);
        call("RegisterTraceWriter", request.toByteArray());
    }

    void notifyStopped(long instanceId) throws Exception {
        HeapBuffered<NotifyDataSourceStoppedRequest> request = new HeapBuffered<>(NotifyDataSourceStoppedRequest.FACTORY);
        request.get().setDataSourceId(instanceId);
        call("NotifyDataSourceStopped", request.toByteArray());
    }

    /** Invokes a method and waits for its reply; returns it. */
    Reply call(String method, byte[] args) throws Exception {
        return client.invoke(port, method, args).get(5, TimeUnit.SECONDS);
    }

    /** The next command, waiting at most 5 s; throws if none came. */
    Command next() throws InterruptedException {
        Command command = commands.poll(5, TimeUnit.SECONDS);
        if (command == null) {
            throw new AssertionError("no command from the service within 5 s");
        }
        setupTracingTaken |= command.kind() == GetAsyncCommandResponse.SETUP_TRACING_FIELD_NUMBER;
        return command;
    }

    /** The next command, which must be of {@code kind} (a GetAsyncCommandResponse field number). */
    Command next(int kind) throws InterruptedException {
        Command command = next();
        if (command.kind() != kind) {
            throw new AssertionError("expected command " + kind + ", got " + command);
        }
        return command;
    }

    /**
     * Takes the commands that start a data source, with SetupTracing before the first:
     * what a session that names it sends; returns the target buffer the config names.
     */
    int awaitStarted() throws InterruptedException {
        if (!setupTracingTaken) {
            next(GetAsyncCommandResponse.SETUP_TRACING_FIELD_NUMBER);
        }
        next(GetAsyncCommandResponse.SETUP_DATA_SOURCE_FIELD_NUMBER);
        return targetBuffer(next(GetAsyncCommandResponse.START_DATA_SOURCE_FIELD_NUMBER));
    }

    /** A writer on the mapped SMB for buffer {@code targetBuffer}, registered with the service. */
    TraceWriter<TracePacket> newWriter(int targetBuffer) throws Exception {
        TraceWriter<TracePacket> writer = arbiter.createTraceWriter(targetBuffer, BufferExhaustedPolicy.STALL);
        registerTraceWriter(writer.writerId(), targetBuffer);
        return writer;
    }

    private void onCommand(Reply reply) {
        if (!reply.success()) {
            return;
        }
        GetAsyncCommandResponse.Decoder command = new GetAsyncCommandResponse.Decoder();
        command.reset(MemorySegment.ofArray(reply.replyProto()));
        Command decoded;
        if (command.hasSetupTracing()) {
            var setup = new GetAsyncCommandResponse.SetupTracing.Decoder();
            command.setupTracing(setup);
            pageSizeKb = setup.sharedBufferPageSizeKb();
            if (reply.fd() >= 0) {
                smb = SharedMemory.attach(reply.fd(), Seals.REQUIRED);
                arbiter = new SharedMemoryArbiter(smb.segment(), pageSizeKb * 1024, this::commit);
            } else if (emulating()) {
                // Shared memory emulation: an SMB of our own, whose chunks travel in CommitData.
                smb = SharedMemory.create("emulated-smb", 256 * 1024);
                emulatedAbi = new SharedMemoryAbi(smb.segment(), pageSizeKb * 1024);
                arbiter = new SharedMemoryArbiter(smb.segment(), pageSizeKb * 1024, this::commitEmulated);
            }
            decoded = new Command(GetAsyncCommandResponse.SETUP_TRACING_FIELD_NUMBER, 0, null, 0, List.of(), reply.fd());
        } else if (command.hasSetupDataSource() || command.hasStartDataSource()) {
            boolean setup = command.hasSetupDataSource();
            var start = new GetAsyncCommandResponse.StartDataSource.Decoder();
            int field = setup ? GetAsyncCommandResponse.SETUP_DATA_SOURCE_FIELD_NUMBER
                    : GetAsyncCommandResponse.START_DATA_SOURCE_FIELD_NUMBER;
            start.reset(command.field(field));
            byte[] config = start.field(GetAsyncCommandResponse.StartDataSource.CONFIG_FIELD_NUMBER).asBytes();
            decoded = new Command(field, start.newInstanceId(), config, 0, List.of(), -1);
        } else if (command.hasStopDataSource()) {
            var stop = new GetAsyncCommandResponse.StopDataSource.Decoder();
            command.stopDataSource(stop);
            decoded = new Command(GetAsyncCommandResponse.STOP_DATA_SOURCE_FIELD_NUMBER, stop.instanceId(), null, 0,
                    List.of(), -1);
        } else if (command.hasFlush()) {
            var flush = new GetAsyncCommandResponse.Flush.Decoder();
            command.flush(flush);
            decoded = new Command(GetAsyncCommandResponse.FLUSH_FIELD_NUMBER, 0, null, flush.requestId(),
                    ids(flush.dataSourceIds(new RepeatedScalarIterator())), -1);
            Consumer<Long> handler = onFlush;
            if (handler == null) {
                acknowledgeFlush(flush.requestId());
            } else {
                handler.accept(flush.requestId());
            }
        } else if (command.hasClearIncrementalState()) {
            var clear = new GetAsyncCommandResponse.ClearIncrementalState.Decoder();
            command.clearIncrementalState(clear);
            decoded = new Command(GetAsyncCommandResponse.CLEAR_INCREMENTAL_STATE_FIELD_NUMBER, 0, null, 0,
                    ids(clear.dataSourceIds(new RepeatedScalarIterator())), -1);
        } else {
            StreamSocket.closeReceived(reply.fd());
            return;
        }
        commands.add(decoded);
    }

    private static List<Long> ids(RepeatedScalarIterator it) {
        List<Long> ids = new ArrayList<>();
        while (it.next()) {
            ids.add(it.value());
        }
        return ids;
    }

    /** What an SDK producer does on Flush: commit idle writers' chunks, then CommitData with the request id. */
    void acknowledgeFlush(long requestId) {
        if (arbiter != null && reclaimOnFlush) {
            arbiter.reclaimIdleChunks();
        }
        HeapBuffered<CommitDataRequest> ack = new HeapBuffered<>(CommitDataRequest.FACTORY);
        ack.get().setFlushRequestId(requestId);
        client.invoke(port, "CommitData", ack.toByteArray());
    }

    /** Whether the service asked for shared memory emulation in its InitializeConnection reply. */
    boolean emulating() {
        InitializeConnectionResponse.Decoder init = new InitializeConnectionResponse.Decoder();
        init.reset(MemorySegment.ofArray(initializeReply));
        return init.useShmemEmulation();
    }

    /**
     * What Perfetto's arbiter does in emulation mode: each chunk to move goes as its bytes,
     * header first, and is freed here, since the service cannot free it. Patches are not
     * sent: the tests that emulate write packets that need none.
     */
    private void commitEmulated(CommitRequest request) {
        HeapBuffered<CommitDataRequest> message = new HeapBuffered<>(CommitDataRequest.FACTORY);
        for (int i = 0; i < request.chunksToMove(); i++) {
            int page = request.movePage(i);
            int chunk = request.moveChunk(i);
            int layout = emulatedAbi.pageLayout(page);
            long offset = emulatedAbi.chunkOffset(page, chunk, layout);
            CommitDataRequest.ChunksToMove move = message.get().addChunksToMove();
            move.setPage(page);
            move.setChunk(chunk);
            move.setTargetBuffer(request.moveTargetBuffer(i));
            move.setData(smb.segment().asSlice(offset, emulatedAbi.chunkSize(layout)));
            emulatedAbi.tryAcquireChunkForReading(page, chunk);
            emulatedAbi.releaseChunkAsFree(page, chunk);
        }
        client.invoke(port, "CommitData", message.toByteArray());
    }

    private void commit(CommitRequest request) {
        HeapBuffered<CommitDataRequest> message = new HeapBuffered<>(CommitDataRequest.FACTORY);
        request.writeTo(message.get());
        client.invoke(port, "CommitData", message.toByteArray());
    }

    /** The target buffer a start command's config names. */
    static int targetBuffer(Command start) {
        DataSourceConfig.Decoder config = new DataSourceConfig.Decoder();
        config.reset(MemorySegment.ofArray(start.config()));
        return config.targetBuffer();
    }

    @Override
    public void close() {
        client.close();
        if (smb != null) {
            smb.close();
        }
    }
}
