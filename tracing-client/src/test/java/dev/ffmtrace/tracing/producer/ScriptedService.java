package dev.ffmtrace.tracing.producer;

import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.*;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.ffmtrace.ipc.Invocation;
import dev.ffmtrace.ipc.IpcHost;
import dev.ffmtrace.ipc.ServiceDescriptor;
import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbi;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import perfetto.protos.CommitDataRequestOuterClass.CommitDataRequest;
import perfetto.protos.DataSourceConfigOuterClass.DataSourceConfig;
import perfetto.protos.ProducerPort.GetAsyncCommandResponse;
import perfetto.protos.ProducerPort.InitializeConnectionResponse;

/**
 * The service's end of ProducerPort, scripted by a test, playing traced's part: it
 * records every call, makes a sealed memfd SMB and sends it with SetupTracing, sends
 * commands on the GetAsyncCommand stream, and on CommitData copies the chunks to move
 * out of the SMB (freeing them, as traced does) and applies the patches to its copies,
 * so that a test can read back the packets each writer wrote.
 */
final class ScriptedService implements AutoCloseable {
    /** ProducerPort's methods, in the order of Perfetto's producer_port.proto. */
    static final List<String> METHODS = List.of("InitializeConnection", "RegisterDataSource", "UnregisterDataSource",
            "CommitData", "GetAsyncCommand", "RegisterTraceWriter", "UnregisterTraceWriter",
            "NotifyDataSourceStarted", "NotifyDataSourceStopped", "ActivateTriggers", "Sync", "UpdateDataSource");

    /** One call as the service received it. */
    record Call(String method, byte[] args, boolean hadFd) {
    }

    /** A chunk copied out of the SMB when its commit arrived. */
    record Chunk(int writerId, int chunkId, int targetBuffer, int packets, byte[] payload) {
        int count() {
            return packetCountOf(packets);
        }

        int flags() {
            return flagsOf(packets);
        }
    }

    final UnixAddress address;
    final LinkedBlockingQueue<Call> calls = new LinkedBlockingQueue<>();
    /** What CommitData brought, in order: "move W/C", "patch W/C", "flush N". */
    final List<String> commitLog = new CopyOnWriteArrayList<>();
    private final Map<Long, Chunk> chunks = new TreeMap<>();
    private final CompletableFuture<Invocation> stream = new CompletableFuture<>();
    private final IpcHost host;
    private volatile InitializeConnectionResponse initResponse = InitializeConnectionResponse.getDefaultInstance();
    private volatile CompletableFuture<Void> commitGate = CompletableFuture.completedFuture(null);
    private volatile int producerFd = -1;
    private SharedMemory smb;
    private SharedMemoryAbi abi;

    ScriptedService() {
        this(UnixAddress.abstractName("ffmtrace-producer-test-" + UUID.randomUUID()));
    }

    ScriptedService(UnixAddress address) {
        this.address = address;
        this.host = IpcHost.listen(address);
        List<ServiceDescriptor.Method> methods = new ArrayList<>();
        for (String name : METHODS) {
            methods.add(new ServiceDescriptor.Method(name, name.equals("InitializeConnection"), call -> handle(name, call)));
        }
        host.exposeService(new ServiceDescriptor("ProducerPort", methods));
    }

    void answerInitializeWith(InitializeConnectionResponse response) {
        initResponse = response;
    }

    /** CommitData handling waits for {@code gate}: a service that stops reading. */
    void holdCommits(CompletableFuture<Void> gate) {
        commitGate = gate;
    }

    /** The fd of a producer-provided SMB, or -1. */
    int producerFd() {
        return producerFd;
    }

    private void handle(String method, Invocation call) {
        int fd = call.takeReceivedFd();
        calls.add(new Call(method, call.args(), fd >= 0));
        switch (method) {
            case "InitializeConnection" -> {
                if (fd >= 0) {
                    producerFd = fd;
                }
                call.reply(initResponse.toByteArray());
            }
            case "GetAsyncCommand" -> stream.complete(call);
            case "CommitData" -> {
                commitGate.join();
                onCommit(call.args());
                call.reply(new byte[0]);
            }
            default -> call.reply(new byte[0]);
        }
    }

    /** The next call of {@code method}; the calls before it are taken off {@link #calls}. */
    Call next(String method) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            Call call = calls.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (call == null) {
                throw new AssertionError("no " + method + " call within 10 s");
            }
            if (call.method().equals(method)) {
                return call;
            }
        }
    }

    /** Sends one command on the GetAsyncCommand stream, with {@code fd} if not negative. */
    void send(byte[] command, int fd) {
        stream.join().reply(command, true, fd);
    }

    void send(GetAsyncCommandResponse command) {
        send(command.toByteArray(), -1);
    }

    /** Makes the SMB (a sealed memfd) and sends SetupTracing with it. */
    void setupTracing(int sizeBytes, int pageSizeKb) {
        smb = SharedMemory.create("perfetto:shmem", sizeBytes);
        abi = new SharedMemoryAbi(smb.segment(), pageSizeKb * 1024);
        send(GetAsyncCommandResponse.newBuilder().setSetupTracing(GetAsyncCommandResponse.SetupTracing.newBuilder()
                .setSharedBufferPageSizeKb(pageSizeKb)).build().toByteArray(), smb.fd());
    }

    /** Uses the producer's SMB, mapped from the fd it sent with InitializeConnection, and sends SetupTracing without fd. */
    void setupTracingOnProducerSmb(int pageSizeKb) {
        smb = SharedMemory.attach(producerFd);
        abi = new SharedMemoryAbi(smb.segment(), pageSizeKb * 1024);
        send(GetAsyncCommandResponse.newBuilder().setSetupTracing(GetAsyncCommandResponse.SetupTracing.newBuilder()
                .setSharedBufferPageSizeKb(pageSizeKb)).build());
    }

    static DataSourceConfig config(String name, int targetBuffer) {
        return DataSourceConfig.newBuilder().setName(name).setTargetBuffer(targetBuffer).build();
    }

    void setupAndStart(long id, DataSourceConfig config) {
        send(GetAsyncCommandResponse.newBuilder().setSetupDataSource(GetAsyncCommandResponse.SetupDataSource.newBuilder()
                .setNewInstanceId(id).setConfig(config)).build());
        send(GetAsyncCommandResponse.newBuilder().setStartDataSource(GetAsyncCommandResponse.StartDataSource.newBuilder()
                .setNewInstanceId(id).setConfig(config)).build());
    }

    void stop(long id) {
        send(GetAsyncCommandResponse.newBuilder().setStopDataSource(GetAsyncCommandResponse.StopDataSource.newBuilder()
                .setInstanceId(id)).build());
    }

    void flush(long requestId, long... ids) {
        GetAsyncCommandResponse.Flush.Builder flush = GetAsyncCommandResponse.Flush.newBuilder().setRequestId(requestId);
        for (long id : ids) {
            flush.addDataSourceIds(id);
        }
        send(GetAsyncCommandResponse.newBuilder().setFlush(flush).build());
    }

    void clearIncrementalState(long... ids) {
        GetAsyncCommandResponse.ClearIncrementalState.Builder clear = GetAsyncCommandResponse.ClearIncrementalState.newBuilder();
        for (long id : ids) {
            clear.addDataSourceIds(id);
        }
        send(GetAsyncCommandResponse.newBuilder().setClearIncrementalState(clear).build());
    }

    /** Waits until the commit log has an entry {@code entry}. */
    void awaitCommitLog(String entry) throws InterruptedException {
        Await.until(entry + " in the commit log", () -> commitLog.contains(entry), commitLog::toString);
    }

    private synchronized void onCommit(byte[] args) {
        CommitDataRequest request;
        try {
            request = CommitDataRequest.parseFrom(args);
        } catch (InvalidProtocolBufferException e) {
            commitLog.add("malformed");
            return;
        }
        for (CommitDataRequest.ChunksToMove move : request.getChunksToMoveList()) {
            long offset = abi.chunkOffset(move.getPage(), move.getChunk(), abi.pageLayout(move.getPage()));
            if (abi.tryAcquireChunkForReading(move.getPage(), move.getChunk()) == SharedMemoryAbi.NO_CHUNK) {
                commitLog.add("unreadable " + move.getPage() + "/" + move.getChunk());
                continue;
            }
            int writerId = abi.writerId(offset);
            int chunkId = abi.chunkId(offset);
            int packets = abi.packetsAcquire(offset);
            byte[] payload = smb.segment().asSlice(offset + CHUNK_HEADER_SIZE,
                    abi.chunkSize(abi.pageLayout(move.getPage())) - CHUNK_HEADER_SIZE).toArray(ValueLayout.JAVA_BYTE);
            abi.releaseChunkAsFree(move.getPage(), move.getChunk());
            chunks.put(key(writerId, chunkId), new Chunk(writerId, chunkId, move.getTargetBuffer(), packets, payload));
            commitLog.add("move " + writerId + "/" + chunkId);
        }
        for (CommitDataRequest.ChunkToPatch patch : request.getChunksToPatchList()) {
            Chunk chunk = chunks.get(key(patch.getWriterId(), patch.getChunkId()));
            for (CommitDataRequest.ChunkToPatch.Patch p : patch.getPatchesList()) {
                byte[] data = p.getData().toByteArray();
                System.arraycopy(data, 0, chunk.payload(), p.getOffset(), data.length);
            }
            if (!patch.getHasMorePatches()) {
                chunks.put(key(chunk.writerId(), chunk.chunkId()), new Chunk(chunk.writerId(), chunk.chunkId(),
                        chunk.targetBuffer(), chunk.packets() & ~(FLAG_CHUNK_NEEDS_PATCHING << FLAGS_SHIFT),
                        chunk.payload()));
            }
            commitLog.add("patch " + patch.getWriterId() + "/" + patch.getChunkId());
        }
        if (request.hasFlushRequestId()) {
            commitLog.add("flush " + request.getFlushRequestId());
        }
    }

    private static long key(int writerId, int chunkId) {
        return ((long) writerId << 32) | chunkId;
    }

    /** The committed chunks of {@code writerId}, by chunk id. */
    synchronized List<Chunk> chunksOf(int writerId) {
        return chunks.values().stream().filter(c -> c.writerId() == writerId).toList();
    }

    /**
     * The packets {@code writerId} committed, reassembled from their fragments in chunk id
     * order, as traced's TraceBuffer reads them; a chunk still waiting for patches is an error.
     */
    synchronized List<byte[]> packetsOf(int writerId) {
        List<byte[]> packets = new ArrayList<>();
        ByteArrayOutputStream pending = null;
        for (Chunk chunk : chunksOf(writerId)) {
            if ((chunk.flags() & FLAG_CHUNK_NEEDS_PATCHING) != 0) {
                throw new AssertionError("chunk " + chunk.chunkId() + " still needs patching");
            }
            MemorySegment payload = MemorySegment.ofArray(chunk.payload());
            long at = 0;
            for (int i = 0; i < chunk.count(); i++) {
                int size = redundantVarInt(payload, at);
                byte[] fragment = payload.asSlice(at + PACKET_HEADER_SIZE, size).toArray(ValueLayout.JAVA_BYTE);
                at += PACKET_HEADER_SIZE + size;
                boolean continues = i == 0 && (chunk.flags() & FLAG_FIRST_PACKET_CONTINUES_FROM_PREV_CHUNK) != 0;
                if (!continues) {
                    pending = new ByteArrayOutputStream();
                } else if (pending == null) {
                    throw new AssertionError("chunk " + chunk.chunkId() + " continues a packet never started");
                }
                pending.writeBytes(fragment);
                boolean last = i == chunk.count() - 1 && (chunk.flags() & FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK) != 0;
                if (!last) {
                    packets.add(pending.toByteArray());
                    pending = null;
                }
            }
        }
        return packets;
    }

    private static int redundantVarInt(MemorySegment bytes, long at) {
        int value = 0;
        for (int i = 0; i < PACKET_HEADER_SIZE; i++) {
            value |= (bytes.get(ValueLayout.JAVA_BYTE, at + i) & 0x7F) << (7 * i);
        }
        return value;
    }

    /** Disconnects the producer and stops listening: the service went away. */
    @Override
    public void close() {
        commitGate.complete(null);
        host.close();
        if (smb != null) {
            smb.close();
        }
        if (producerFd >= 0 && smb == null) {
            dev.ffmtrace.memory.StreamSocket.closeReceived(producerFd);
        }
    }
}
