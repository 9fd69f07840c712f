package dev.ffmtrace.cli.stress;

import dev.ffmtrace.ipc.BoundService;
import dev.ffmtrace.ipc.IpcClient;
import dev.ffmtrace.ipc.Reply;
import dev.ffmtrace.memory.MemoryFile;
import dev.ffmtrace.memory.NativeException;
import dev.ffmtrace.memory.Seals;
import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.perfetto.protos.CommitDataRequest;
import dev.ffmtrace.perfetto.protos.DataSourceConfig;
import dev.ffmtrace.perfetto.protos.GetAsyncCommandResponse;
import dev.ffmtrace.perfetto.protos.InitializeConnectionRequest;
import dev.ffmtrace.perfetto.protos.RegisterDataSourceRequest;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbi;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A hostile producer, run as a process of its own by {@code stress --faults}: it joins the
 * service through Perfetto's producer IPC like any producer, registers its data source
 * ({@link StressRun#HOSTILE_SOURCE}, which has a buffer of its own), and once started
 * attacks what it was given, and the other producers' buffers by their ids. One thread rewrites its SMB at
 * random while chunks in it are in use (page headers, chunk headers, fragments); another
 * takes chunks the ABI's way, fills them with garbage and commits them, with patches at
 * random offsets and commits of pages and buffers that do not exist. It also tries to
 * resize the sealed SMB memfd, bigger and smaller. The service must survive, keep the
 * other producers' packets intact, and count what it refused.
 *
 * <p>Its first commit always names a page past the SMB's end and tries a resize, so the
 * attack is certain to be counted; once the service has answered its
 * {@link #MIN_COMMITS}th commit, {@link #run} tells its caller (the command prints
 * {@link #ATTACKED}), and the stress run ends no sooner. When the service hangs up it prints
 * one line, {@code H <commits> <rewrites> <resize attempts> <resizes refused>}, and exits 0.
 */
public final class HostilePeer {
    /** The garbage commits the service has handled when the peer reports itself under way. */
    public static final int MIN_COMMITS = 200;
    /** The line {@code stress-hostile} prints once {@link #MIN_COMMITS} commits are handled. */
    public static final String ATTACKED = "hostile: attacked";
    private static final long HANDSHAKE_SECONDS = 10;

    private final UnixAddress service;
    private final SplittableRandom random;
    private final Duration pace;
    private final Set<Integer> buffers = ConcurrentHashMap.newKeySet();
    private final AtomicLong commits = new AtomicLong();
    private final AtomicLong rewrites = new AtomicLong();
    private final AtomicLong resizeAttempts = new AtomicLong();
    private final AtomicLong resizesRefused = new AtomicLong();
    private volatile SharedMemory smb;
    /** The SMB's ABI view, made with it; null if its page size makes none (then commits go blind). */
    private volatile SharedMemoryAbi abi;
    private volatile int pageSize;

    public HostilePeer(UnixAddress service, long seed, Duration pace) {
        this.service = service;
        this.random = new SplittableRandom(seed);
        this.pace = pace;
    }

    /**
     * Attacks until the service hangs up; returns the summary line.
     *
     * @param attacked run once, when the service has handled {@link #MIN_COMMITS} commits
     */
    public String run(Runnable attacked) throws Exception {
        try (IpcClient client = IpcClient.connect(service)) {
            BoundService port = client.bindService("ProducerPort").get(HANDSHAKE_SECONDS, TimeUnit.SECONDS);
            HeapBuffered<InitializeConnectionRequest> init = new HeapBuffered<>(InitializeConnectionRequest.FACTORY);
            init.get().setProducerName("ffmtrace-stress-hostile");
            client.invoke(port, "InitializeConnection", init.toByteArray()).get(HANDSHAKE_SECONDS, TimeUnit.SECONDS);
            client.invoke(port, "GetAsyncCommand", new byte[0], -1, this::onCommand);
            HeapBuffered<RegisterDataSourceRequest> register = new HeapBuffered<>(RegisterDataSourceRequest.FACTORY);
            register.get().setDataSourceDescriptor().setName(StressRun.HOSTILE_SOURCE);
            client.invokeDropReply(port, "RegisterDataSource", register.toByteArray());
            Thread rewriter = Thread.ofPlatform().name("hostile rewriter").start(() -> rewrite(client));
            SplittableRandom commitRandom = random.split();
            while (client.isConnected()) {
                SharedMemory memory = smb;
                if (memory == null || buffers.isEmpty()) {
                    Thread.sleep(5);
                    continue;
                }
                boolean first = commits.get() == 0;
                byte[] commit = garbageCommit(memory, commitRandom, first);
                if (commits.get() == MIN_COMMITS - 1) {
                    // Answered in order on this connection: every commit before it is handled too.
                    client.invoke(port, "CommitData", commit).get(HANDSHAKE_SECONDS, TimeUnit.SECONDS);
                    attacked.run();
                } else {
                    client.invokeDropReply(port, "CommitData", commit);
                }
                commits.incrementAndGet();
                if (first || commitRandom.nextInt(50) == 0) {
                    tryResize(memory, commitRandom);
                }
                TimeUnit.NANOSECONDS.sleep(pace.toNanos());
            }
            rewriter.join();
        }
        return "H " + commits.get() + " " + rewrites.get() + " " + resizeAttempts.get() + " " + resizesRefused.get();
    }

    private void onCommand(Reply reply) {
        int fd = reply.fd();
        if (!reply.success()) {
            StreamSocket.closeReceived(fd);
            return;
        }
        GetAsyncCommandResponse.Decoder command = new GetAsyncCommandResponse.Decoder();
        command.reset(MemorySegment.ofArray(reply.replyProto()));
        if (command.hasSetupTracing() && fd >= 0 && smb == null) {
            GetAsyncCommandResponse.SetupTracing.Decoder setup = new GetAsyncCommandResponse.SetupTracing.Decoder();
            command.setupTracing(setup);
            try {
                MemoryFile file = MemoryFile.attach(fd, Seals.NOT_REQUIRED);
                pageSize = (int) (setup.sharedBufferPageSizeKb() * 1024L);
                SharedMemory mapped = SharedMemory.map(file);
                try {
                    abi = new SharedMemoryAbi(mapped.segment(), pageSize);
                } catch (IllegalArgumentException e) {
                    // A page size the ABI refuses: commits go blind.
                }
                smb = mapped;
            } catch (RuntimeException e) {
                StreamSocket.closeReceived(fd);
            }
            return;
        }
        StreamSocket.closeReceived(fd);
        if (command.hasStartDataSource()) {
            GetAsyncCommandResponse.StartDataSource.Decoder start = new GetAsyncCommandResponse.StartDataSource.Decoder();
            command.startDataSource(start);
            DataSourceConfig.Decoder config = new DataSourceConfig.Decoder();
            config.reset(start.field(GetAsyncCommandResponse.StartDataSource.CONFIG_FIELD_NUMBER));
            buffers.add(config.targetBuffer());
        }
    }

    /**
     * Chunks taken as a writer would, filled with garbage, committed with random patches and
     * bad ids; with {@code pastTheEnd}, also a move of a page past the SMB's end, which no
     * service may take.
     */
    private byte[] garbageCommit(SharedMemory memory, SplittableRandom random, boolean pastTheEnd) {
        HeapBuffered<CommitDataRequest> commit = new HeapBuffered<>(CommitDataRequest.FACTORY);
        Integer[] targets = buffers.toArray(new Integer[0]);
        int target = targets[random.nextInt(targets.length)];
        int pages = (int) (memory.segment().byteSize() / Math.max(pageSize, 4096));
        SharedMemoryAbi abi = this.abi;
        if (abi != null) {
            try {
                int page = random.nextInt(abi.numPages());
                abi.tryPartitionPage(page, 1 + random.nextInt(7));
                int layout = abi.pageLayout(page);
                int chunks = layout == 0 ? 0 : Math.max(1, abi.freeChunks(page));
                int chunk = chunks == 0 ? 0 : random.nextInt(chunks);
                long offset = abi.tryAcquireChunkForWriting(page, chunk, random.nextInt(), 1 + random.nextInt(1024));
                if (offset != SharedMemoryAbi.NO_CHUNK) {
                    MemorySegment payload = memory.segment().asSlice(offset, Math.min(256, abi.chunkSize(layout)));
                    for (long i = 16; i < payload.byteSize(); i++) {
                        payload.set(ValueLayout.JAVA_BYTE, i, (byte) random.nextInt());
                    }
                    abi.releaseChunkAsComplete(page, chunk);
                }
                CommitDataRequest.ChunksToMove move = commit.get().addChunksToMove();
                move.setPage(page);
                move.setChunk(chunk);
                move.setTargetBuffer(target);
            } catch (RuntimeException e) {
                // The rewriter may leave a page the ABI refuses: commit blind.
            }
        }
        if (pastTheEnd) {
            CommitDataRequest.ChunksToMove move = commit.get().addChunksToMove();
            move.setPage(pages);
            move.setChunk(0);
            move.setTargetBuffer(target);
        }
        for (int i = random.nextInt(3); i > 0; i--) {
            CommitDataRequest.ChunksToMove move = commit.get().addChunksToMove();
            move.setPage(random.nextInt(pages * 2 + 1));
            move.setChunk(random.nextInt(20));
            move.setTargetBuffer(otherTarget(random, target));
        }
        for (int i = random.nextInt(3); i > 0; i--) {
            CommitDataRequest.ChunkToPatch patch = commit.get().addChunksToPatch();
            patch.setTargetBuffer(otherTarget(random, target));
            patch.setWriterId(1 + random.nextInt(1024));
            patch.setChunkId(random.nextInt());
            CommitDataRequest.ChunkToPatch.Patch one = patch.addPatches();
            one.setOffset(random.nextInt(pageSize * 2));
            byte[] data = new byte[random.nextInt(3) == 0 ? 1 + random.nextInt(8) : 4];
            random.nextBytes(data);
            one.setData(data);
            patch.setHasMorePatches(random.nextBoolean());
        }
        return commit.toByteArray();
    }

    /**
     * Mostly its own buffer; else a small id, likely another producer's buffer, which the
     * service must refuse since no session granted it to this producer; else any id.
     */
    private static int otherTarget(SplittableRandom random, int own) {
        return switch (random.nextInt(4)) {
            case 0 -> random.nextInt(8);
            case 1 -> random.nextInt();
            default -> own;
        };
    }

    /** Rewrites random bytes of the SMB, now and then a whole page header, while the service reads it. */
    private void rewrite(IpcClient client) {
        SplittableRandom rewriteRandom = random.split();
        while (client.isConnected()) {
            SharedMemory memory = smb;
            if (memory == null) {
                sleepQuietly(5);
                continue;
            }
            MemorySegment segment = memory.segment();
            for (int i = 0; i < 64; i++) {
                long at = rewriteRandom.nextLong(segment.byteSize() - 4) & ~3L;
                segment.set(ValueLayout.JAVA_INT_UNALIGNED, at, rewriteRandom.nextInt());
            }
            rewrites.addAndGet(64);
            sleepQuietly(1);
        }
    }

    /** Tries to grow and to shrink the sealed SMB: each refusal is counted. */
    private void tryResize(SharedMemory memory, SplittableRandom random) {
        long size = memory.file().size();
        long newSize = random.nextBoolean() ? size * 2 : size / 2;
        resizeAttempts.incrementAndGet();
        try {
            memory.file().resize(newSize);
        } catch (NativeException e) {
            resizesRefused.incrementAndGet();
        }
    }

    private static void sleepQuietly(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
