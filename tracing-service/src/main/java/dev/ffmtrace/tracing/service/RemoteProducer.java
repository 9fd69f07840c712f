package dev.ffmtrace.tracing.service;

import dev.ffmtrace.ipc.ClientInfo;
import dev.ffmtrace.ipc.Invocation;
import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.memory.MemoryFile;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.Seals;
import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.perfetto.protos.ActivateTriggersRequest;
import dev.ffmtrace.perfetto.protos.CommitDataRequest;
import dev.ffmtrace.perfetto.protos.DataSourceDescriptor;
import dev.ffmtrace.perfetto.protos.GetAsyncCommandResponse;
import dev.ffmtrace.perfetto.protos.InitializeConnectionRequest;
import dev.ffmtrace.perfetto.protos.InitializeConnectionResponse;
import dev.ffmtrace.perfetto.protos.NotifyDataSourceStartedRequest;
import dev.ffmtrace.perfetto.protos.NotifyDataSourceStoppedRequest;
import dev.ffmtrace.perfetto.protos.RegisterDataSourceRequest;
import dev.ffmtrace.perfetto.protos.RegisterDataSourceResponse;
import dev.ffmtrace.perfetto.protos.RegisterTraceWriterRequest;
import dev.ffmtrace.perfetto.protos.UnregisterDataSourceRequest;
import dev.ffmtrace.perfetto.protos.UnregisterTraceWriterRequest;
import dev.ffmtrace.perfetto.protos.UpdateDataSourceRequest;
import dev.ffmtrace.protovm.CanonicalProgram;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.ProtoField;
import dev.ffmtrace.protozero.ProtoWire;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.protozero.TypedProtoDecoder;
import dev.ffmtrace.tracing.buffer.ClientIdentity;
import dev.ffmtrace.tracing.service.reader.SharedMemoryReader;
import dev.ffmtrace.tracing.smb.CommitRequest;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiPredicate;

/**
 * One producer connected to a {@link ProducerPort}: its {@link Producer} in the service,
 * the data sources it described, and the stream its commands go out on.
 *
 * <p>Requests arrive on the connection's I/O thread, one at a time. Commands come from
 * the service's threads and are queued; a thread of this producer's own sends them, so a
 * producer that stops reading blocks nobody but itself, and is disconnected once its
 * queue is full.
 *
 * <p>Over 600 lines: it is the service's side of Perfetto's whole producer port, each of
 * its requests decoded here (CommitData's chunks and patches into a {@code CommitRequest},
 * which the service copies out of the SMB) and each of its commands queued and sent, with
 * the flush and stop acknowledgements that pair them; both halves share the producer's
 * state (its data sources, its writers, its pending flushes and stops).
 */
final class RemoteProducer implements ProducerCommands {
    /** Commands waiting to be sent; a producer that lets more pile up is disconnected. */
    static final int MAX_QUEUED_COMMANDS = 1024;
    /** Perfetto's largest SMB page ({@code EnsureValidShmSizes}): its TraceBuffer takes chunks of at most 32 KiB. */
    static final int MAX_PAGE_SIZE = 32 * 1024;
    /** Of a producer's name, the part kept (in messages and the SMB's memfd name). */
    private static final int MAX_NAME_LENGTH = 64;
    /** The reply of the requests whose response message has no fields. */
    private static final byte[] NO_BYTES = new byte[0];

    private final ProducerPort port;
    private final ClientInfo client;
    private final Producer producer;
    private final boolean smbProvidedByProducer;
    private final Map<String, Descriptor> descriptors = new ConcurrentHashMap<>();
    private final BlockingQueue<Command> commands = new ArrayBlockingQueue<>(MAX_QUEUED_COMMANDS);
    private final Thread sender;
    /** The GetAsyncCommand invocation the commands are replies of; null until the producer asks. */
    private volatile Invocation commandStream;
    private final AtomicLong lastFlushRequestId = new AtomicLong();
    private final ConcurrentSkipListMap<Long, CompletableFuture<Void>> pendingFlushes = new ConcurrentSkipListMap<>();
    private final Map<Long, Runnable> pendingStops = new ConcurrentHashMap<>();
    private volatile boolean closed;

    /**
     * Decoding state, used on the I/O thread only. The request is reused for every
     * CommitData. An SDK producer under load batches tens of chunks and patches into one;
     * sized for a staging round of them, it does not grow (a branch the warm-up's one-chunk
     * commits never take, so a trap in compiled code) in an app's burst.
     */
    private final CommitRequest commit = new CommitRequest(SharedMemoryReader.MAX_STAGED);
    private final CommitDataRequest.Decoder commitDecoder = new CommitDataRequest.Decoder();
    private final CommitDataRequest.ChunksToMove.Decoder moveDecoder = new CommitDataRequest.ChunksToMove.Decoder();
    private final CommitDataRequest.ChunkToPatch.Decoder patchDecoder = new CommitDataRequest.ChunkToPatch.Decoder();
    private final CommitDataRequest.ChunkToPatch.Patch.Decoder patchEntry =
            new CommitDataRequest.ChunkToPatch.Patch.Decoder();
    private final RepeatedFieldIterator outer = new RepeatedFieldIterator();
    private final RepeatedFieldIterator inner = new RepeatedFieldIterator();

    /** What a producer said of a data source when it registered it. */
    record Descriptor(boolean notifiesOnStop, boolean clearsIncrementalState, boolean noFlush) {
        /** What the service keeps of a registered data source's descriptor. */
        static Descriptor of(DataSourceDescriptor.Decoder descriptor) {
            return new Descriptor(descriptor.willNotifyOnStop(), descriptor.handlesIncrementalStateClear(),
                    descriptor.noFlush());
        }
    }

    /** One command, serialized, with the fd it carries (owned by the command until sent), or -1. */
    private record Command(byte[] bytes, int fd) {
    }

    private static final Command END = new Command(new byte[0], -1);

    private RemoteProducer(ProducerPort port, ClientInfo client, ProducerOptions options, SharedMemory providedSmb,
                           boolean scraping) {
        this.port = port;
        this.client = client;
        this.smbProvidedByProducer = providedSmb != null;
        this.producer = port.service().connectRemoteProducer(options, providedSmb, this, scraping);
        this.sender = Thread.ofPlatform().daemon().name("ffmtrace-producer-commands " + producer.name())
                .unstarted(this::sendCommands);
    }

    Producer producer() {
        return producer;
    }

    /**
     * Answers InitializeConnection: connects a producer to the service and replies; null,
     * after failing the invocation, if the request is malformed or the service refuses.
     */
    static RemoteProducer initialize(ProducerPort port, Invocation invocation) {
        int fd = invocation.takeReceivedFd();
        InitializeConnectionRequest.Decoder request = new InitializeConnectionRequest.Decoder();
        invocation.readArgs(request);
        if (request.hasError()) {
            StreamSocket.closeReceived(fd);
            port.countViolation();
            invocation.fail();
            return null;
        }
        ClientInfo client = invocation.client();
        long[] sizes = validShmSizes(Integer.toUnsignedLong(request.sharedMemorySizeHintBytes()),
                Integer.toUnsignedLong(request.sharedMemoryPageSizeHintBytes()));
        ProducerOptions options = new ProducerOptions(producerName(request, client),
                new ClientIdentity(client.uid(), client.pid(), client.machineId()), sizes[0], (int) sizes[1],
                client.machineName() == null ? "" : client.machineName());
        SharedMemory provided = null;
        if (request.producerProvidedShmem() && fd >= 0 && !port.emulatesSharedMemory()) {
            provided = adoptProvidedSmb(fd, options.pageSize());
            fd = -1;
        }
        StreamSocket.closeReceived(fd);
        boolean scraping = request.smbScrapingModeEnum()
                != InitializeConnectionRequest.ProducerSMBScrapingMode.SMB_SCRAPING_DISABLED;
        RemoteProducer remote;
        try {
            remote = new RemoteProducer(port, client, options, provided, scraping);
        } catch (RuntimeException e) {
            // The service is closed, out of producer ids, or could not make the SMB.
            port.connectionRefused(e);
            if (provided != null) {
                provided.close();
            }
            invocation.fail();
            return null;
        }
        HeapBuffered<InitializeConnectionResponse> response = new HeapBuffered<>(InitializeConnectionResponse.FACTORY);
        response.get().setUsingShmemProvidedByProducer(remote.smbProvidedByProducer);
        // Chunks leave the SMB only when committed or scraped, so a producer may patch a
        // chunk it still holds in place, as Perfetto's service allows.
        response.get().setDirectSmbPatchingSupported(true);
        response.get().setUseShmemEmulation(port.emulatesSharedMemory());
        invocation.reply(response.toByteArray());
        remote.queueSetupTracing();
        remote.sender.start();
        return remote;
    }

    /** Perfetto's {@code EnsureValidShmSizes}: the hints if they make a valid SMB, else the defaults. */
    static long[] validShmSizes(long sizeHint, long pageSizeHint) {
        long pageSize = pageSizeHint == 0 ? ProducerOptions.DEFAULT_PAGE_SIZE : Math.min(pageSizeHint, MAX_PAGE_SIZE);
        long size = sizeHint == 0 ? ProducerOptions.DEFAULT_SMB_SIZE : Math.min(sizeHint, ProducerOptions.MAX_SMB_SIZE);
        long pages = pageSize / SharedMemoryAbiDescriptor.MIN_PAGE_SIZE;
        boolean valid = pageSize % SharedMemoryAbiDescriptor.MIN_PAGE_SIZE == 0 && pages > 0
                && (pages & (pages - 1)) == 0 && size >= pageSize && size % pageSize == 0;
        return valid ? new long[] {size, pageSize}
                : new long[] {ProducerOptions.DEFAULT_SMB_SIZE, ProducerOptions.DEFAULT_PAGE_SIZE};
    }

    private static String producerName(InitializeConnectionRequest.Decoder request, ClientInfo client) {
        String name = request.hasProducerName() ? request.producerName().strip() : "";
        if (name.isEmpty()) {
            return "producer-pid-" + client.pid();
        }
        StringBuilder kept = new StringBuilder();
        name.codePoints().limit(MAX_NAME_LENGTH).forEach(c -> kept.appendCodePoint(Character.isISOControl(c) ? '?' : c));
        return kept.toString();
    }

    /**
     * Maps a producer's own SMB if it is a sealed file of whole pages within Perfetto's
     * largest SMB; null otherwise (the fd closed), and the service makes one, as Perfetto's does.
     */
    private static SharedMemory adoptProvidedSmb(int fd, int pageSize) {
        SharedMemory smb;
        try {
            smb = SharedMemory.attach(fd, Seals.REQUIRED);
        } catch (RuntimeException e) {
            return null;
        }
        if (smb.size() % pageSize != 0 || smb.size() > ProducerOptions.MAX_SMB_SIZE) {
            smb.close();
            return null;
        }
        return smb;
    }

    /** SetupTracing comes first on the stream; with the SMB's fd when the service made it. */
    private void queueSetupTracing() {
        HeapBuffered<GetAsyncCommandResponse> command = newCommand();
        int fd = -1;
        GetAsyncCommandResponse.SetupTracing setup = command.get().setSetupTracing();
        if (!smbProvidedByProducer) {
            setup.setSharedBufferPageSizeKb(producer.pageSize() / 1024);
            // An emulated producer keeps its SMB to itself: no descriptor crosses TCP.
            fd = port.emulatesSharedMemory() ? -1 : MemoryFile.duplicate(producer.smbFd());
        }
        queue(new Command(command.toByteArray(), fd));
    }

    void registerDataSource(Invocation invocation) {
        DataSourceDescriptor.Decoder descriptor = describedIn(invocation, new RegisterDataSourceRequest.Decoder(),
                RegisterDataSourceRequest.Decoder::dataSourceDescriptor);
        if (descriptor == null) {
            return;
        }
        // Perfetto's service ignores a data source without a name; so does this one.
        if (descriptor.hasName() && !descriptor.name().isEmpty()) {
            String refusal = registrationRefusal(descriptor.name());
            if (refusal != null) {
                port.countRefusal();
                HeapBuffered<RegisterDataSourceResponse> response = new HeapBuffered<>(RegisterDataSourceResponse.FACTORY);
                response.get().setError(refusal);
                invocation.reply(response.toByteArray());
                return;
            }
            describe(descriptor);
            producer.registerCanonical(descriptor.name(), protoVmProgramOf(descriptor));
        }
        invocation.reply(NO_BYTES);
    }

    /** Why data source {@code name} may not be registered (its error reply), or null. */
    private String registrationRefusal(String name) {
        int bytes = name.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > Guardrails.MAX_DATA_SOURCE_NAME_BYTES) {
            return "Data source name too long (" + bytes + " bytes > " + Guardrails.MAX_DATA_SOURCE_NAME_BYTES + ")";
        }
        if (!descriptors.containsKey(name) && descriptors.size() >= Guardrails.MAX_DATA_SOURCES_PER_PRODUCER) {
            return "Too many data sources registered by the producer (limit is "
                    + Guardrails.MAX_DATA_SOURCES_PER_PRODUCER + ")";
        }
        return null;
    }

    void updateDataSource(Invocation invocation) {
        DataSourceDescriptor.Decoder descriptor = describedIn(invocation, new UpdateDataSourceRequest.Decoder(),
                UpdateDataSourceRequest.Decoder::dataSourceDescriptor);
        if (descriptor == null) {
            return;
        }
        if (descriptor.hasName() && descriptors.containsKey(descriptor.name())) {
            describe(descriptor);
            DataSource dataSource = producer.dataSource(descriptor.name());
            if (dataSource != null) {
                dataSource.canonicalProtoVmProgram(protoVmProgramOf(descriptor));
            }
        }
        invocation.reply(NO_BYTES);
    }

    /**
     * The DataSourceDescriptor a Register- or UpdateDataSource request carries; null, after
     * failing the invocation and counting it, if the request or its descriptor does not parse.
     */
    private <D extends TypedProtoDecoder> DataSourceDescriptor.Decoder describedIn(
            Invocation invocation, D request, BiPredicate<D, DataSourceDescriptor.Decoder> field) {
        DataSourceDescriptor.Decoder descriptor = new DataSourceDescriptor.Decoder();
        if (decode(invocation, request) == null) {
            return null;
        }
        if (!field.test(request, descriptor) || descriptor.hasError()) {
            port.countViolation();
            invocation.fail();
            return null;
        }
        return descriptor;
    }

    /**
     * The descriptor's ProtoVM program as traced keeps it (every occurrence of the field
     * parsed into one program, as its cppgen descriptor does), or null: also for a program
     * traced would misread, which is counted as a violation.
     */
    private byte[] protoVmProgramOf(DataSourceDescriptor.Decoder descriptor) {
        if (!descriptor.hasProtovmProgram()) {
            return null;
        }
        List<MemorySegment> occurrences = new ArrayList<>();
        RepeatedFieldIterator field = descriptor.repeated(
                DataSourceDescriptor.PROTOVM_PROGRAM_FIELD_NUMBER, new RepeatedFieldIterator());
        while (field.next()) {
            // A program written as a scalar is parsed from no bytes, as cppgen parses it.
            occurrences.add(field.field().wireType() == ProtoWire.WIRE_TYPE_LENGTH_DELIMITED
                    ? field.field().asSlice() : MemorySegment.NULL);
        }
        try {
            return CanonicalProgram.of(occurrences);
        } catch (IllegalArgumentException misread) {
            port.countViolation();
            return null;
        }
    }

    private void describe(DataSourceDescriptor.Decoder descriptor) {
        descriptors.put(descriptor.name(), Descriptor.of(descriptor));
    }

    void unregisterDataSource(Invocation invocation) {
        UnregisterDataSourceRequest.Decoder request = decode(invocation, new UnregisterDataSourceRequest.Decoder());
        if (request != null) {
            descriptors.remove(request.dataSourceName());
            producer.unregisterDataSource(request.dataSourceName());
            invocation.reply(NO_BYTES);
        }
    }

    void registerTraceWriter(Invocation invocation) {
        RegisterTraceWriterRequest.Decoder request = decode(invocation, new RegisterTraceWriterRequest.Decoder());
        if (request != null) {
            if (!producer.registerTraceWriter(request.traceWriterId(), request.targetBuffer())) {
                port.countViolation();
            }
            invocation.reply(NO_BYTES);
        }
    }

    void unregisterTraceWriter(Invocation invocation) {
        UnregisterTraceWriterRequest.Decoder request = decode(invocation, new UnregisterTraceWriterRequest.Decoder());
        if (request != null) {
            if (!producer.unregisterTraceWriter(request.traceWriterId())) {
                port.countViolation();
            }
            invocation.reply(NO_BYTES);
        }
    }

    void notifyDataSourceStarted(Invocation invocation) {
        if (decode(invocation, new NotifyDataSourceStartedRequest.Decoder()) != null) {
            invocation.reply(NO_BYTES);
        }
    }

    void notifyDataSourceStopped(Invocation invocation) {
        NotifyDataSourceStoppedRequest.Decoder request = decode(invocation, new NotifyDataSourceStoppedRequest.Decoder());
        if (request != null) {
            Runnable done = pendingStops.remove(request.dataSourceId());
            if (done != null) {
                done.run();
            }
            invocation.reply(NO_BYTES);
        }
    }

    /** Triggers act on the sessions that listen to them ({@link Triggers}); the producer's name and uid go with them. */
    void activateTriggers(Invocation invocation) {
        ActivateTriggersRequest.Decoder request = decode(invocation, new ActivateTriggersRequest.Decoder());
        if (request == null) {
            return;
        }
        List<String> names = new ArrayList<>(request.triggerNamesCount());
        RepeatedFieldIterator entries = request.triggerNames(new RepeatedFieldIterator());
        while (entries.next()) {
            names.add(entries.field().asString());
        }
        port.service().activateTriggers(producer.name(), client.uid(), names);
        invocation.reply(NO_BYTES);
    }

    /** Everything this producer sent before has been handled: requests are handled in order. */
    void sync(Invocation invocation) {
        invocation.reply(NO_BYTES);
    }

    void getAsyncCommand(Invocation invocation) {
        // As Perfetto's port: a second stream replaces the first.
        commandStream = invocation;
        synchronized (this) {
            notifyAll();
        }
    }

    void commitData(Invocation invocation) {
        invocation.readArgs(commitDecoder);
        if (commitDecoder.hasError()) {
            port.countViolation();
            invocation.fail();
            return;
        }
        commit.clear();
        readChunksToMove();
        readChunksToPatch();
        producer.commit(commit);
        if (commitDecoder.hasFlushRequestId()) {
            flushAcknowledged(commitDecoder.flushRequestId());
        }
        invocation.reply(NO_BYTES);
    }

    private void readChunksToMove() {
        commitDecoder.chunksToMove(outer);
        while (outer.next()) {
            moveDecoder.reset(outer.field());
            // Chunk bytes come in the request exactly when the port emulates shared memory.
            if (moveDecoder.hasError() || moveDecoder.hasData() != port.emulatesSharedMemory()) {
                port.countViolation();
                continue;
            }
            if (moveDecoder.hasData()) {
                // Written at once, before any patch of the request, as traced does; the
                // bytes are the frame's copy, which the producer cannot change.
                ProtoField data = moveDecoder.field(CommitDataRequest.ChunksToMove.DATA_FIELD_NUMBER);
                producer.moveSerializedChunk(moveDecoder.targetBuffer(), data.segment(), data.offset(),
                        (int) Math.min(data.length(), Integer.MAX_VALUE), !moveDecoder.chunkIncomplete());
                continue;
            }
            commit.addChunkToMove(moveDecoder.page(), moveDecoder.chunk(), moveDecoder.targetBuffer());
        }
    }

    private void readChunksToPatch() {
        commitDecoder.chunksToPatch(outer);
        while (outer.next()) {
            patchDecoder.reset(outer.field());
            if (patchDecoder.hasError() || !patchesAreValid()) {
                port.countViolation();
                continue;
            }
            int first = commit.patches();
            patchDecoder.patches(inner);
            while (inner.next()) {
                patchEntry.reset(inner.field());
                ProtoField data = patchEntry.field(CommitDataRequest.ChunkToPatch.Patch.DATA_FIELD_NUMBER);
                // The patch's 4 bytes as CommitRequest holds them: little-endian in an int.
                int value = data.segment().get(Layouts.INT_UNALIGNED, data.offset());
                commit.addPatch(patchDecoder.targetBuffer(), patchDecoder.writerId(), patchDecoder.chunkId(),
                        patchEntry.offset(), value, false);
            }
            if (patchDecoder.hasMorePatches() && commit.patches() > first) {
                commit.markHasMorePatches(commit.patches() - 1);
            }
        }
    }

    /** Whether every patch of the current ChunkToPatch parses and carries 4 bytes, as Perfetto's patches do. */
    private boolean patchesAreValid() {
        patchDecoder.patches(inner);
        while (inner.next()) {
            patchEntry.reset(inner.field());
            if (patchEntry.hasError() || !patchEntry.hasData()
                    || patchEntry.field(CommitDataRequest.ChunkToPatch.Patch.DATA_FIELD_NUMBER).length() != 4) {
                return false;
            }
        }
        return true;
    }

    /** Completes every pending flush up to {@code requestId}, as Perfetto's service does. */
    private void flushAcknowledged(long requestId) {
        Map<Long, CompletableFuture<Void>> done = pendingFlushes.headMap(requestId, true);
        done.values().forEach(future -> future.complete(null));
        done.clear();
    }

    /** Decodes a request; null after failing the invocation if it does not parse. */
    private <D extends TypedProtoDecoder> D decode(Invocation invocation, D decoder) {
        invocation.readArgs(decoder);
        if (decoder.hasError()) {
            port.countViolation();
            invocation.fail();
            return null;
        }
        return decoder;
    }

    @Override
    public void startDataSource(DataSource dataSource, long instanceId, byte[] config) {
        HeapBuffered<GetAsyncCommandResponse> setup = newCommand();
        GetAsyncCommandResponse.SetupDataSource setupCommand = setup.get().setSetupDataSource();
        setupCommand.setNewInstanceId(instanceId);
        setupCommand.appendBytes(GetAsyncCommandResponse.SetupDataSource.CONFIG_FIELD_NUMBER, config);
        queue(new Command(setup.toByteArray(), -1));
        HeapBuffered<GetAsyncCommandResponse> start = newCommand();
        GetAsyncCommandResponse.StartDataSource startCommand = start.get().setStartDataSource();
        startCommand.setNewInstanceId(instanceId);
        startCommand.appendBytes(GetAsyncCommandResponse.StartDataSource.CONFIG_FIELD_NUMBER, config);
        queue(new Command(start.toByteArray(), -1));
    }

    @Override
    public void stopDataSource(DataSource dataSource, long instanceId, Runnable done) {
        Descriptor descriptor = descriptors.get(dataSource.name());
        if (descriptor != null && descriptor.notifiesOnStop() && !closed) {
            pendingStops.put(instanceId, done);
        } else {
            done.run();
        }
        HeapBuffered<GetAsyncCommandResponse> command = newCommand();
        command.get().setStopDataSource().setInstanceId(instanceId);
        queue(new Command(command.toByteArray(), -1));
        if (closed) {
            runPendingStops();
        }
    }

    @Override
    public CompletableFuture<Void> flush(List<DataSource.Instance> instances) {
        HeapBuffered<GetAsyncCommandResponse> command = newCommand();
        GetAsyncCommandResponse.Flush flush = command.get().setFlush();
        boolean any = false;
        for (DataSource.Instance instance : instances) {
            Descriptor descriptor = descriptors.get(instance.dataSource().name());
            if (descriptor == null || !descriptor.noFlush()) {
                flush.addDataSourceIds(instance.id());
                any = true;
            }
        }
        if (!any || closed) {
            return CompletableFuture.completedFuture(null);
        }
        long requestId = lastFlushRequestId.incrementAndGet();
        flush.setRequestId(requestId);
        CompletableFuture<Void> acknowledged = new CompletableFuture<>();
        pendingFlushes.put(requestId, acknowledged);
        queue(new Command(command.toByteArray(), -1));
        if (closed) {
            acknowledged.complete(null);
        }
        return acknowledged;
    }

    @Override
    public void clearIncrementalState(DataSource.Instance instance) {
        Descriptor descriptor = descriptors.get(instance.dataSource().name());
        if (descriptor != null && descriptor.clearsIncrementalState()) {
            HeapBuffered<GetAsyncCommandResponse> command = newCommand();
            command.get().setClearIncrementalState().addDataSourceIds(instance.id());
            queue(new Command(command.toByteArray(), -1));
        }
    }

    private static HeapBuffered<GetAsyncCommandResponse> newCommand() {
        return new HeapBuffered<>(GetAsyncCommandResponse.FACTORY, 256, 64 * 1024);
    }

    /** Queues a command; a producer whose queue is full has stopped reading and is disconnected. */
    private void queue(Command command) {
        if (closed || !commands.offer(command)) {
            closeFd(command.fd());
            if (!closed) {
                port.countViolation();
                port.disconnect(client);
            }
        }
    }

    /** The sender thread: waits for the command stream, then sends commands in order until closed. */
    private void sendCommands() {
        try {
            Invocation stream = awaitStream();
            while (stream != null) {
                Command command = commands.take();
                if (command == END) {
                    return;
                }
                // A producer may open a new stream: send on the latest.
                commandStream.reply(command.bytes(), true, command.fd());
                closeFd(command.fd());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            // The stream ended (the producer went away, or sent its request with drop_reply).
            port.disconnect(client);
        } finally {
            dropQueuedCommands();
        }
    }

    private void dropQueuedCommands() {
        for (Command left; (left = commands.poll()) != null; ) {
            closeFd(left.fd());
        }
    }

    private static void closeFd(int fd) {
        if (fd >= 0) {
            Os.closeFd(fd);
        }
    }

    private synchronized Invocation awaitStream() throws InterruptedException {
        while (commandStream == null && !closed) {
            wait();
        }
        return closed ? null : commandStream;
    }

    private void runPendingStops() {
        for (Long instanceId : List.copyOf(pendingStops.keySet())) {
            Runnable done = pendingStops.remove(instanceId);
            if (done != null) {
                done.run();
            }
        }
    }

    /**
     * The producer went away: what waits for it is released, its commands dropped, and its
     * {@link Producer} closed, which takes what it wrote into the sessions.
     */
    void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            notifyAll();
        }
        pendingFlushes.values().forEach(future -> future.complete(null));
        pendingFlushes.clear();
        runPendingStops();
        dropQueuedCommands();
        commands.offer(END);
        producer.close();
        try {
            sender.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
