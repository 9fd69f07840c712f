package dev.ffmtrace.tracing.service;

import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.CHUNK_HEADER_SIZE;
import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.CHUNK_ID_OFFSET;
import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.CHUNK_PACKETS_OFFSET;
import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.CHUNK_WRITER_ID_OFFSET;
import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.MAX_WRITER_ID;
import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.flagsOf;
import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.packetCountOf;

import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.memory.MemoryFile;
import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protovm.CanonicalProgram;
import dev.ffmtrace.tracing.buffer.ChunkCommit;
import dev.ffmtrace.tracing.buffer.ChunkPatches;
import dev.ffmtrace.tracing.buffer.ClientIdentity;
import dev.ffmtrace.tracing.service.reader.SharedMemoryReader;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.CommitRequest;
import dev.ffmtrace.tracing.smb.SharedMemoryArbiter;
import dev.ffmtrace.tracing.smb.TraceWriter;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbi;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntPredicate;

/**
 * A producer connected to the in-process {@link TracingService}: its own sealed SMB memfd,
 * the arbiter its writers take chunks from, and the service side that moves its commits
 * into the sessions' buffers.
 *
 * <p>The commit path trusts nothing the producer says: a chunk is moved only into a
 * buffer that one of the producer's started data sources targets; anything else is
 * counted as an ABI violation and its chunk freed. Commits arrive on writer threads
 * (under the arbiter's lock); flushes scrape on the caller's thread; the reader is
 * guarded by its own lock so the two never interleave.
 *
 * <p>A producer in another process that speaks Perfetto's IPC is connected by a
 * {@link ProducerPort}: its commits arrive as CommitData requests and take the same path,
 * the service's commands reach it through the port, and it has no arbiter here (its
 * writers are in its process).
 *
 * <p>A producer in another process that maps the SMB and writes chunks without sending
 * commits (its writers {@linkplain #adoptRemoteWriter adopted} here) has its complete
 * chunks found by scanning the SMB at each flush, and only those writers' chunks are
 * scanned for, so in-process writers' chunks wait for their commits.
 *
 * <p><b>Threads:</b> {@link #registerDataSource}, the queries and the writers' commits may
 * come from any thread. {@link #close()} is the owner's: it flushes what the producer's
 * writers have written into the sessions' buffers, then stops its data sources; commits
 * that arrive afterwards are dropped (their chunks freed), and the SMB stays mapped, for
 * writers still open, until the service closes. Closing twice does nothing more.
 *
 * <p>A producer in another process that dies (killed mid-write) may leave chunks it
 * marked complete but never committed, and chunks being written that will never complete.
 * Its owner closes the producer when the connection ends: closing moves the former, as
 * their commits would have (Perfetto's scrape copies them too), and takes what the latter
 * show, counting each of those as discarded in
 * its session's {@code trace_stats} ({@code chunks_discarded}), since its last packet,
 * perhaps cut short, is lost. The patches it will never send are given up, so that a
 * packet it died in the middle of blocks none of those it finished.
 *
 * <p>Over 600 lines while it holds both the commit transport and the data sources'
 * registry, which share its reader lock: a commit names the buffers its started data
 * sources may write. Its registration side is the service package's own (its tests and
 * {@link ProducerPort}); applications write the SDK's data sources.
 */
public final class Producer implements AutoCloseable {
    private final TracingService service;
    private final int id;
    private final String name;
    private final ClientIdentity identity;
    private final String machineName;
    private final int pageSize;
    private final SharedMemory smb;
    private final SharedMemoryReader reader;
    /** Null for a producer in another process: its writers take chunks there. */
    private final SharedMemoryArbiter arbiter;
    /** How the service reaches a producer in another process; null in-process. */
    private final ProducerCommands commands;
    /** Whether flushes take the chunks still being written (Perfetto's SMB scraping). */
    private final boolean scraping;
    private final ReentrantLock readerLock = new ReentrantLock();
    private final Map<String, DataSource> dataSources = new ConcurrentHashMap<>();
    /** The same data sources as an array, replaced on registration: the commit path walks it without allocating. */
    private volatile DataSource[] dataSourceArray = new DataSource[0];
    /** Writer id to the buffer its writer was created or adopted for: where scraped and scanned chunks go. */
    private final AtomicIntegerArray writerTargets = new AtomicIntegerArray(MAX_WRITER_ID + 1);
    private final BufferSink commitSink = new BufferSink(true, false);
    /** Sends each chunk to its writer's target: for scraped chunks and those of remote writers. */
    private final BufferSink writerSink = new BufferSink(false, false);
    /** {@link #writerSink} for the last scrape, at close: the chunks it takes will never complete. */
    private final BufferSink lastScrapeSink = new BufferSink(false, true);
    /** Writer ids of remote writers, whose complete chunks are found by scanning; guarded by the reader lock. */
    private final boolean[] remoteWriters = new boolean[MAX_WRITER_ID + 1];
    private final IntPredicate isRemoteWriter = writerId -> remoteWriters[writerId];
    private final IntPredicate isCommittingWriter = writerId -> !remoteWriters[writerId];
    /** Guarded by the reader lock. */
    private boolean hasRemoteWriters;
    private final ChunkPatches patches = new ChunkPatches();
    /** Per chunk of the commit round being handled, its slot in the reader's staging area, or -1; guarded by the reader lock. */
    private final int[] stagedSlots = new int[SharedMemoryReader.MAX_STAGED];
    /**
     * Every buffer a session ever started one of its data sources into (buffer ids are
     * never reused): a commit to one whose session has stopped is a late writer's, not a
     * violation. Read only when a commit names a buffer not granted now.
     */
    private final Set<Integer> everGranted = ConcurrentHashMap.newKeySet();
    /** Written only by commits, which the arbiter's lock serializes. */
    private volatile long abiViolations;
    /** Set by {@link #close()} under the reader lock: later commits and flushes leave the buffers alone. */
    private volatile boolean closed;

    Producer(TracingService service, int id, ProducerOptions options) {
        this(service, id, options, null, null, true);
    }

    /**
     * A producer; with {@code commands}, one in another process, in {@code providedSmb}
     * if it gave one (this producer then owns it), else in an SMB the service makes.
     */
    Producer(TracingService service, int id, ProducerOptions options, SharedMemory providedSmb,
             ProducerCommands commands, boolean scraping) {
        this.service = service;
        this.id = id;
        this.name = options.name();
        this.identity = options.identity();
        this.machineName = options.machineName();
        this.pageSize = options.pageSize();
        this.commands = commands;
        this.scraping = scraping;
        this.smb = providedSmb != null ? providedSmb : SharedMemory.create("ffmtrace-smb-" + name, options.smbSize());
        SharedMemoryAbi abi;
        try {
            abi = new SharedMemoryAbi(smb.segment(), options.pageSize());
        } catch (IllegalArgumentException e) {
            smb.close();
            throw e;
        }
        this.reader = new SharedMemoryReader(abi);
        this.arbiter = commands == null ? new SharedMemoryArbiter(smb.segment(), options.pageSize(), this::commit) : null;
    }

    /** The SMB's page size in bytes. */
    int pageSize() {
        return pageSize;
    }

    /** Whether the producer is in another process, reached through {@link ProducerCommands}. */
    boolean isRemote() {
        return commands != null;
    }

    ProducerCommands commands() {
        return commands;
    }

    /** The producer's id in the service (1..65535), the upper half of its writers' trusted sequence ids. */
    public int id() {
        return id;
    }

    /** The name it connected with. */
    public String name() {
        return name;
    }

    /** The trusted uid and pid it connected with, written into its packets by the service. */
    public ClientIdentity identity() {
        return identity;
    }

    /** The name a relay gave this producer's machine; empty for this machine. */
    public String machineName() {
        return machineName;
    }

    /** Whether {@link #close()} has been called, or the service closed it. */
    public boolean isClosed() {
        return closed;
    }

    /** Whether {@code file} is this producer's SMB, through another descriptor. */
    boolean hasSmb(MemoryFile file) {
        return smb.file().isSameFileAs(file);
    }

    /** The SMB's fd, sealed against resizing, for a producer in another process. */
    public int smbFd() {
        return smb.fd();
    }

    /**
     * The arbiter in-process writers take the SMB's chunks from.
     *
     * @throws IllegalStateException for a producer in another process, whose writers are there
     */
    SharedMemoryArbiter arbiter() {
        if (arbiter == null) {
            throw new IllegalStateException("producer " + name + " is in another process: its writers are there");
        }
        return arbiter;
    }

    /**
     * Offers a data source; a running or later session naming it starts it, unless another
     * session has it. Registering a name twice returns the same one. On a closed producer
     * it returns a data source that no session will start, rather than throw.
     */
    synchronized DataSource registerDataSource(String dataSourceName) {
        if (closed) {
            return new DataSource(this, dataSourceName);
        }
        DataSource dataSource = dataSources.computeIfAbsent(dataSourceName, n -> new DataSource(this, n));
        dataSourceArray = dataSources.values().toArray(new DataSource[0]);
        service.dataSourceRegistered(this);
        return dataSource;
    }

    /**
     * Offers a data source with a ProtoVM program (see {@link DataSource#protoVmProgram}; null
     * for none), or replaces the program of one offered before. The program is in place
     * before a running session can start the data source, so a late registration runs it
     * too.
     *
     * @throws IllegalArgumentException if traced would read garbage from the program; then
     *                                  nothing is registered
     */
    DataSource registerDataSource(String dataSourceName, byte[] protoVmProgram) {
        return registerCanonical(dataSourceName,
                protoVmProgram == null ? null : CanonicalProgram.of(MemorySegment.ofArray(protoVmProgram)));
    }

    /** {@link #registerDataSource(String, byte[])} with a program already in traced's form, or null. */
    synchronized DataSource registerCanonical(String dataSourceName, byte[] canonicalProgram) {
        if (closed) {
            return new DataSource(this, dataSourceName);
        }
        DataSource dataSource = dataSources.computeIfAbsent(dataSourceName, n -> new DataSource(this, n));
        dataSource.canonicalProtoVmProgram(canonicalProgram);
        dataSourceArray = dataSources.values().toArray(new DataSource[0]);
        service.dataSourceRegistered(this);
        return dataSource;
    }

    /**
     * Commits that named a buffer this producer was never granted, or a chunk that was not
     * complete; commits to the buffer of a session that has stopped are dropped uncounted.
     */
    public long abiViolations() {
        return abiViolations + reader.abiViolations();
    }

    DataSource dataSource(String dataSourceName) {
        return dataSources.get(dataSourceName);
    }

    /** Withdraws a data source: a session that started it loses it (its writers' later commits are dropped). */
    synchronized void unregisterDataSource(String dataSourceName) {
        DataSource dataSource = dataSources.remove(dataSourceName);
        if (dataSource != null) {
            dataSourceArray = dataSources.values().toArray(new DataSource[0]);
            dataSource.stopAll();
        }
    }

    /**
     * Starts {@code dataSource} into buffer {@code bufferId} for data source
     * {@code configIndex} of {@code session}; a producer in another process is sent the
     * data source's config with the service's fields set.
     */
    void startDataSource(DataSource dataSource, TracingSession session, int configIndex, int bufferId) {
        bufferGranted(bufferId);
        setUpProtoVm(dataSource, session.config().dataSources().get(configIndex), bufferId);
        long instanceId = service.nextDataSourceInstanceId();
        dataSource.start(new DataSource.Instance(dataSource, instanceId, bufferId, session, configIndex));
        if (commands != null) {
            commands.startDataSource(dataSource, instanceId,
                    DataSourceConfigs.forProducer(session, configIndex, bufferId));
        } else if (dataSource.startHandler() != null) {
            dataSource.startHandler().onStart(DataSourceConfigs.forProducer(session, configIndex, bufferId));
        }
    }

    /**
     * Sends this producer's overwritten packets of {@code dataSource} to a ProtoVM of the
     * buffer when both the session's config and the data source ask for one, as Perfetto's
     * service does (a config without a program, or a program without a config, sets up none).
     */
    private void setUpProtoVm(DataSource dataSource, SessionConfig.DataSource config, int bufferId) {
        byte[] program = dataSource.protoVmProgram();
        if (program == null || !config.hasProtoVm()) {
            return;
        }
        ServiceBuffer target = service.buffer(bufferId);
        target.lock.lock();
        try {
            target.buffer.protoVms().setUp(config.name(), program, (int) config.protoVmMemoryLimitKb(), id);
        } finally {
            target.lock.unlock();
        }
    }

    /**
     * Binds writer {@code writerId} of a producer in another process to buffer
     * {@code bufferId}, where its scraped chunks go (Perfetto's RegisterTraceWriter).
     * Chunks reach the buffer only while one of this producer's data sources writes there.
     *
     * @return false if the writer id is out of range
     */
    boolean registerTraceWriter(int writerId, int bufferId) {
        if (writerId < 1 || writerId > MAX_WRITER_ID) {
            return false;
        }
        writerTargets.set(writerId, bufferId);
        return true;
    }

    /** Forgets where writer {@code writerId} writes; false if the id is out of range. */
    boolean unregisterTraceWriter(int writerId) {
        return registerTraceWriter(writerId, 0);
    }

    /**
     * Asks a producer in another process to commit what the data sources writing into
     * {@code session} hold; completes when it has. For a producer in this process, runs its
     * data sources' flush handlers and completes at once.
     */
    CompletableFuture<Void> requestFlush(TracingSession session) {
        if (closed) {
            return CompletableFuture.completedFuture(null);
        }
        if (commands == null) {
            flushInProcess(session);
            return CompletableFuture.completedFuture(null);
        }
        List<DataSource.Instance> flushed = new ArrayList<>();
        for (DataSource dataSource : dataSourceArray) {
            for (DataSource.Instance instance : dataSource.instances()) {
                if (instance.session() == session) {
                    flushed.add(instance);
                }
            }
        }
        return flushed.isEmpty() ? CompletableFuture.completedFuture(null) : commands.flush(flushed);
    }

    /** Runs the flush handlers of this in-process producer's data sources writing into {@code session}. */
    private void flushInProcess(TracingSession session) {
        for (DataSource dataSource : dataSourceArray) {
            DataSource.FlushHandler handler = dataSource.flushHandler();
            if (handler != null && dataSource.startedIn(session)) {
                try {
                    handler.onFlush();
                } catch (RuntimeException e) {
                    // A data source that fails to write loses only its own packets, not the flush.
                }
            }
        }
    }

    Iterable<DataSource> dataSources() {
        return dataSources.values();
    }

    /**
     * Takes writer {@code writerId} of a producer in another process, which writes into
     * this SMB without commits, as a writer of {@code dataSource}: its chunks go to the
     * buffer the data source writes to now. Adopting it again rebinds it (a new session).
     * The remote side is trusted no more than commits are: its chunks reach only a buffer
     * one of this producer's started data sources writes to.
     *
     * @throws IllegalArgumentException if the id is not 1..32767 or is an in-process writer's,
     *         or the data source is another producer's
     * @throws IllegalStateException if no session has started the data source
     */
    void adoptRemoteWriter(int writerId, DataSource dataSource) {
        if (writerId < 1 || writerId > MAX_WRITER_ID) {
            throw new IllegalArgumentException("writer id " + writerId + " is not 1.." + MAX_WRITER_ID);
        }
        if (dataSources.get(dataSource.name()) != dataSource) {
            throw new IllegalArgumentException("data source \"" + dataSource.name() + "\" is not producer "
                    + name + "'s");
        }
        int target = dataSource.targetBuffer();
        if (target == 0) {
            throw new IllegalStateException("data source \"" + dataSource.name() + "\" is not started by any session");
        }
        readerLock.lock();
        try {
            if (!remoteWriters[writerId] && writerTargets.get(writerId) != 0) {
                throw new IllegalArgumentException("writer id " + writerId + " is an in-process writer's");
            }
            remoteWriters[writerId] = true;
            writerTargets.set(writerId, target);
            hasRemoteWriters = true;
        } finally {
            readerLock.unlock();
        }
    }

    TraceWriter<TracePacket> newTraceWriter(int bufferId, BufferExhaustedPolicy policy) {
        TraceWriter<TracePacket> writer = arbiter().createTraceWriter(bufferId, policy);
        // The arbiter does not know the remote writers' ids: pass over them.
        while (!bindInProcessWriter(writer.writerId(), bufferId)) {
            TraceWriter<TracePacket> taken = writer;
            writer = arbiter().createTraceWriter(bufferId, policy);
            taken.close();
        }
        return writer;
    }

    /** Records an in-process writer's target, unless its id is a remote writer's. */
    private boolean bindInProcessWriter(int writerId, int bufferId) {
        readerLock.lock();
        try {
            if (remoteWriters[writerId]) {
                return false;
            }
            writerTargets.set(writerId, bufferId);
            return true;
        } finally {
            readerLock.unlock();
        }
    }

    /**
     * Commits the chunks of idle writers, moves the complete chunks of remote writers,
     * then scrapes the chunks still being written into their buffers as incomplete: what
     * a flush can take without the writers' threads.
     */
    void flush() {
        flush(false);
    }

    /** {@link #flush()}, as the last one at close if {@code last}. */
    private void flush(boolean last) {
        if (arbiter != null) {
            arbiter.reclaimIdleChunks();
        }
        readerLock.lock();
        try {
            if (closed) {
                return;
            }
            if (hasRemoteWriters) {
                // A writer first seen in one scan is learned there and moved from in the next:
                // two scans take, in order, what the remote writers had completed by the flush.
                reader.moveCompleteChunks(writerSink, isRemoteWriter);
                reader.moveCompleteChunks(writerSink, isRemoteWriter);
            }
            if (last && commands != null) {
                // The producer's process sends no more commits, so the chunks it completed and
                // did not commit would stay in the SMB for good. (In-process writers' complete
                // chunks are in the middle of a commit, which moves them itself.)
                reader.moveUncommittedChunks(writerSink, isCommittingWriter);
            }
            if (scraping) {
                reader.scrapeChunksBeingWritten(last ? lastScrapeSink : writerSink);
            }
            if (last) {
                abandonPendingPatches();
                // Set in the same hold of the lock as the last take: no commit slips in between
                // to name a chunk the take has already freed, nor a patch one just abandoned.
                closed = true;
            }
        } finally {
            readerLock.unlock();
        }
    }

    /**
     * Closing, the producer sends no more patches: in every buffer it was granted, its
     * chunks still waiting for some give up the fragment they were for, so the packets
     * before it can be read
     * ({@link dev.ffmtrace.tracing.buffer.TraceBufferV2#abandonPendingPatches}). The caller holds
     * the reader lock.
     */
    private void abandonPendingPatches() {
        for (int bufferId : everGranted) {
            ServiceBuffer target = service.buffer(bufferId);
            if (target == null) {
                continue;
            }
            target.lock.lock();
            try {
                if (!target.memory.isClosed()) {
                    target.buffer.abandonPendingPatches(id);
                }
            } finally {
                target.lock.unlock();
            }
        }
    }

    /** Returns the chunks of in-process writers idle since the previous sweep (the service's timer calls it). */
    void sweepIdleWriters() {
        if (arbiter != null) {
            arbiter.sweepIdleWriters();
        }
    }

    /** Chunks taken out of the SMB whole: committed, or found complete for remote writers. */
    public long chunksMoved() {
        readerLock.lock();
        try {
            return reader.chunksMoved();
        } finally {
            readerLock.unlock();
        }
    }

    /**
     * Moves and patches what {@code request} names: the commit transport, called by the
     * arbiter with its lock held, or a producer in another process's CommitData, or that
     * producer's writers directly when it is in this process
     * ({@link TracingService#localCommitTransport}); the reader lock makes the two kinds
     * of caller take turns.
     */
    void commit(CommitRequest request) {
        readerLock.lock();
        try {
            if (closed) {
                // Writers still open after the producer closed: free their chunks, keep
                // nothing; once the service has unmapped the SMB, there is nothing to free.
                for (int i = 0; i < request.chunksToMove() && !smb.isClosed(); i++) {
                    reader.moveChunk(request.movePage(i), request.moveChunk(i), DISCARD);
                }
                return;
            }
            for (int start = 0, end; start < request.chunksToMove(); start = end) {
                end = stageChunks(request, start);
                deliverStagedChunks(request, start, end);
            }
            applyPatches(request);
        } finally {
            readerLock.unlock();
        }
    }

    /**
     * Writes a chunk that came inside a CommitData request into buffer {@code bufferId}:
     * shared memory emulation, for a producer on another machine, which shares no memory
     * with the service. {@code chunk} holds the whole chunk from {@code offset}, its header
     * first, in a copy the producer can no longer change; {@code complete} is false for a
     * chunk its writer may still add to (scraped). A size that is no chunk, or a buffer the
     * producer may not write, is counted as an ABI violation, as an SMB commit's would be.
     */
    void moveSerializedChunk(int bufferId, MemorySegment chunk, long offset, int size, boolean complete) {
        readerLock.lock();
        try {
            if (closed) {
                return;
            }
            // A chunk's size is 16 bits in Perfetto's ABI.
            if (size < CHUNK_HEADER_SIZE || size > 0xFFFF) {
                abiViolations++;
                return;
            }
            ServiceBuffer buffer = grantedBuffer(bufferId);
            if (buffer == null) {
                countUnlessFormerlyGranted(bufferId);
                return;
            }
            int writerId = Short.toUnsignedInt(chunk.get(Layouts.SHORT_UNALIGNED, offset + CHUNK_WRITER_ID_OFFSET));
            if (writerId == 0 || writerId > MAX_WRITER_ID) {
                abiViolations++;
                return;
            }
            commitSink.buffer = buffer;
            commitSink.accept(writerId, chunk.get(Layouts.INT_UNALIGNED, offset + CHUNK_ID_OFFSET),
                    Short.toUnsignedInt(chunk.get(Layouts.SHORT_UNALIGNED, offset + CHUNK_PACKETS_OFFSET)), complete,
                    chunk, offset + CHUNK_HEADER_SIZE, size - CHUNK_HEADER_SIZE);
        } finally {
            readerLock.unlock();
        }
    }

    /**
     * Takes the chunks {@code request} names from {@code start} out of the SMB, freeing
     * each before any is written into a buffer, as many as the reader stages at once;
     * returns where the next round starts. The producer's writers get the whole commit
     * back after copies only, and a producer behind on its commits (that batches many
     * chunks into one) is not made to wait longer for it. The caller holds the reader lock.
     */
    private int stageChunks(CommitRequest request, int start) {
        reader.clearStaged();
        int end = start;
        for (; end < request.chunksToMove() && !reader.stagingFull(); end++) {
            stagedSlots[end - start] = reader.stageChunk(request.movePage(end), request.moveChunk(end));
        }
        return end;
    }

    /** Writes the chunks {@link #stageChunks} took for {@code request}'s {@code [start, end)} into their buffers. */
    private void deliverStagedChunks(CommitRequest request, int start, int end) {
        for (int i = start; i < end; i++) {
            int slot = stagedSlots[i - start];
            if (slot < 0) {
                continue;
            }
            ServiceBuffer buffer = grantedBuffer(request.moveTargetBuffer(i));
            if (buffer == null) {
                countUnlessFormerlyGranted(request.moveTargetBuffer(i));
                reader.deliverStaged(slot, DISCARD);
                continue;
            }
            commitSink.buffer = buffer;
            reader.deliverStaged(slot, commitSink);
        }
    }

    private void applyPatches(CommitRequest request) {
        for (int start = 0, end; start < request.patches(); start = end) {
            end = request.patchRunEnd(start);
            int count = end - start;
            patches.clear();
            for (int j = 0; j < count; j++) {
                patches.addLittleEndian(Integer.toUnsignedLong(request.patchOffset(start + j)),
                        request.patchData(start + j));
            }
            ServiceBuffer buffer = grantedBuffer(request.patchTargetBuffer(start));
            if (buffer == null) {
                countUnlessFormerlyGranted(request.patchTargetBuffer(start));
                continue;
            }
            buffer.lock.lock();
            try {
                buffer.buffer.tryPatchChunkContents(id, request.patchWriterId(start), request.patchChunkId(start),
                        patches, request.patchHasMorePatches(end - 1));
            } finally {
                buffer.lock.unlock();
            }
        }
    }

    /** Called by the service when it starts one of this producer's data sources into buffer {@code bufferId}. */
    void bufferGranted(int bufferId) {
        everGranted.add(bufferId);
    }

    /** Counts a commit to a buffer not granted now as an ABI violation, unless a stopped session had granted it. */
    private void countUnlessFormerlyGranted(int bufferId) {
        if (!everGranted.contains(bufferId)) {
            abiViolations++;
        }
    }

    /** The buffer with this id, if one of this producer's started data sources writes to it. */
    private ServiceBuffer grantedBuffer(int bufferId) {
        for (DataSource dataSource : dataSourceArray) {
            if (bufferId != 0 && dataSource.writesTo(bufferId)) {
                return service.buffer(bufferId);
            }
        }
        return null;
    }

    /** Asks this producer's data sources that write into buffer {@code bufferId} to clear their incremental state. */
    void clearIncrementalState(int bufferId) {
        for (DataSource dataSource : dataSourceArray) {
            if (!dataSource.writesTo(bufferId)) {
                continue;
            }
            dataSource.clearIncrementalState();
            if (commands != null) {
                for (DataSource.Instance instance : dataSource.instances()) {
                    if (instance.bufferId() == bufferId) {
                        commands.clearIncrementalState(instance);
                    }
                }
            }
        }
    }

    /**
     * Disconnects the producer: takes what its writers have written into the sessions'
     * buffers (as a flush does, counting each chunk still being written as discarded, and,
     * for a producer in another process, moving the chunks it completed but never
     * committed), gives up the patches it still owes, stops its data sources, and leaves the sessions running.
     * Writers still open keep writing into the SMB, which stays mapped until the service
     * closes, but what they commit is dropped. Closing twice does nothing more.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            flush(true);
            for (DataSource dataSource : dataSourceArray) {
                dataSource.stopAll();
            }
        }
        service.producerClosed(this);
    }

    /** Unmaps the SMB: called by the service once, when both it and this producer are closed. */
    void unmap() {
        readerLock.lock();
        try {
            smb.close();
        } finally {
            readerLock.unlock();
        }
    }

    private static final SharedMemoryReader.ChunkSink DISCARD =
            (writerId, chunkId, packets, complete, segment, offset, size) -> { };

    /** Copies chunks into a session buffer, under that buffer's lock. */
    private final class BufferSink implements SharedMemoryReader.ChunkSink {
        private final boolean committed;
        /** Whether each chunk is the last version the service will take: counted as discarded. */
        private final boolean last;
        /** Reused: a fresh one per chunk would escape into copyChunkUntrusted and be allocated. */
        private final ChunkCommit chunk = new ChunkCommit();
        ServiceBuffer buffer;

        BufferSink(boolean committed, boolean last) {
            this.committed = committed;
            this.last = last;
        }

        @Override
        public void accept(int writerId, int chunkId, int packets, boolean complete,
                           MemorySegment segment, long offset, int size) {
            ServiceBuffer target = committed ? buffer : grantedBuffer(writerTargets.get(writerId));
            if (target == null) {
                return;
            }
            boolean lostData = false;
            target.lock.lock();
            try {
                if (!target.memory.isClosed()) {
                    long lostBefore = target.buffer.chunksLost();
                    chunk.producer(id, identity).writerId(writerId).chunkId(chunkId)
                            .numFragments(packetCountOf(packets)).flags(flagsOf(packets)).complete(complete);
                    target.buffer.copyChunkUntrusted(chunk, segment, offset, size);
                    lostData = target.shouldClearAfterLoss(lostBefore);
                    if (last) {
                        target.chunksDiscarded++;
                    }
                }
            } finally {
                target.lock.unlock();
            }
            if (lostData) {
                service.clearIncrementalState(target.id);
            }
        }
    }
}
