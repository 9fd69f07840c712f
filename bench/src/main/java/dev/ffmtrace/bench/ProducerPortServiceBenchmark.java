package dev.ffmtrace.bench;

import dev.ffmtrace.memory.Seals;
import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.memory.TcpAddress;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.perfetto.protos.CommitDataRequest;
import dev.ffmtrace.perfetto.protos.DataSourceConfig;
import dev.ffmtrace.perfetto.protos.GetAsyncCommandResponse;
import dev.ffmtrace.perfetto.protos.IPCFrame;
import dev.ffmtrace.perfetto.protos.InitializeConnectionRequest;
import dev.ffmtrace.perfetto.protos.RegisterDataSourceRequest;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.ProtoWire;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.buffer.TraceBufferStats;
import dev.ffmtrace.tracing.service.ProducerPort;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.CommitRequest;
import dev.ffmtrace.tracing.smb.SharedMemoryArbiter;
import dev.ffmtrace.tracing.smb.TraceWriter;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbi;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The service's side of CommitData, µs/op: a real {@link ProducerPort} on a real Unix
 * socket, whose I/O thread reads the frame, decodes it, moves the 4 KiB chunk holding a
 * 1 KiB packet into the session's buffer (and with {@code patch}, applies a 4-byte patch
 * to it) and replies. With {@code transport=tcp} the port is on TCP (loopback) and the
 * chunk's bytes travel inside the CommitData, as a producer of another machine sends
 * them (shared memory emulation). The producer end is this thread, written not to allocate: a
 * {@link TraceWriter} fills the chunk, the CommitData frame is encoded by hand into a
 * reused array, and the reply is read into another. So the allocation column is the
 * service's. Read it per iteration: its 0.1 B/op is the service's periodic threads,
 * and JMH counts the trial's {@code @TearDown} (closing the session and the service)
 * into the last iteration, which then shows 10-20 B/op on either transport.
 */
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Benchmark)
public class ProducerPortServiceBenchmark {
    private static final int HEADER_SIZE = 4;
    /** Where the patch lands in the chunk's payload: inside the packet's marker bytes, so the packet stays whole. */
    private static final int PATCH_OFFSET = 16;

    @Param({"false", "true"})
    public boolean patch;

    @Param({"unix", "tcp"})
    public String transport;

    private TracingService service;
    private ProducerPort port;
    private StreamSocket socket;
    private SharedMemory smb;
    private TracingSession session;
    private TraceWriter<TracePacket> writer;
    private int serviceId;
    private int commitDataId;
    private int targetBuffer;
    private final byte[] kilobyte = new byte[1024];
    /** The CommitData frame being written, and the reply bytes being read. */
    private final byte[] out = new byte[8192];
    /** The producer's own SMB's layout, on TCP: it frees each chunk it sends, as the service cannot. */
    private SharedMemoryAbi emulatedAbi;
    private int outLength;
    private final byte[] in = new byte[4096];
    private final int[] fds = new int[1];
    private int chunkId;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        service = new TracingService();
        boolean tcp = transport.equals("tcp");
        port = ProducerPort.listen(service, tcp ? TcpAddress.loopback(0)
                : UnixAddress.abstractName("ffmtrace-bench-service-" + System.nanoTime()));
        socket = StreamSocket.connect(port.address());
        Handshake handshake = new Handshake(socket);
        Map<String, Integer> methods = handshake.bind(ProducerPort.SERVICE_NAME);
        serviceId = handshake.serviceId;
        commitDataId = methods.get("CommitData");

        HeapBuffered<InitializeConnectionRequest> init = new HeapBuffered<>(InitializeConnectionRequest.FACTORY);
        init.get().setProducerName("bench");
        init.get().setSharedMemorySizeHintBytes(1 << 20);
        init.get().setSharedMemoryPageSizeHintBytes(4096);
        handshake.invoke(2, methods.get("InitializeConnection"), init.toByteArray());
        handshake.invoke(3, methods.get("GetAsyncCommand"), new byte[0]);
        HeapBuffered<RegisterDataSourceRequest> register = new HeapBuffered<>(RegisterDataSourceRequest.FACTORY);
        register.get().setDataSourceDescriptor().setName("bench");
        handshake.invoke(4, methods.get("RegisterDataSource"), register.toByteArray());
        session = service.startSession(SessionConfig.builder().buffer(64 * 1024, OverwritePolicy.RING_BUFFER)
                .dataSource("bench").build());

        int smbFd = -1;
        boolean setUp = false;
        while (!setUp || targetBuffer == 0) {
            GetAsyncCommandResponse.Decoder command = handshake.nextCommand(3);
            if (command.hasSetupTracing()) {
                smbFd = handshake.lastFd;
                setUp = true;
            }
            GetAsyncCommandResponse.StartDataSource.Decoder start = new GetAsyncCommandResponse.StartDataSource.Decoder();
            DataSourceConfig.Decoder config = new DataSourceConfig.Decoder();
            if (command.startDataSource(start) && start.config(config)) {
                targetBuffer = config.targetBuffer();
            }
        }
        smb = tcp ? SharedMemory.create("bench-emulated-smb", 1 << 20) : SharedMemory.attach(smbFd, Seals.REQUIRED);
        emulatedAbi = tcp ? new SharedMemoryAbi(smb.segment(), 4096) : null;
        SharedMemoryArbiter arbiter = new SharedMemoryArbiter(smb.segment(), 4096, this::encode);
        writer = arbiter.createTraceWriter(targetBuffer, BufferExhaustedPolicy.STALL);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        // A benchmark that measured refused commits or failed patches measured the wrong thing.
        TraceBufferStats stats = session.stats().getFirst();
        if (port.violations() != 0 || stats.chunksWritten() < chunkId
                || stats.patchesSucceeded() != (patch ? chunkId : 0) || stats.patchesFailed() != 0) {
            throw new IllegalStateException("the service refused commits: " + port.violations() + " violations, "
                    + stats + " after " + chunkId + " commits");
        }
        writer.close();
        session.close();
        socket.close();
        port.close();
        service.close();
        smb.close();
    }

    @Benchmark
    public int commitOneChunk() {
        TracePacket packet = writer.newTracePacket();
        packet.setSynchronizationMarker(kilobyte);
        writer.finishTracePacket();
        writer.flush();
        socket.sendBytes(out, outLength, -1);
        return awaitReply();
    }

    /** Reads the reply, a frame of a few bytes, which the service sends in one message; returns its length. */
    private int awaitReply() {
        int have = socket.receive(in, fds);
        if (have < HEADER_SIZE) {
            throw new IllegalStateException("the service closed the connection or split its reply");
        }
        int frame = HEADER_SIZE + payloadSize(in);
        while (have < frame) {
            int n = socket.receive(in, fds);
            if (n == 0) {
                throw new IllegalStateException("the service closed the connection");
            }
            have += n;
        }
        return have;
    }

    /** The commit transport: CommitData of what the writer returned, as a frame in {@link #out}. */
    private void encode(CommitRequest request) {
        int args = 0;
        for (int i = 0; i < request.chunksToMove(); i++) {
            args += nestedSize(CommitDataRequest.CHUNKS_TO_MOVE_FIELD_NUMBER, chunkToMoveSize(request, i));
        }
        if (patch) {
            args += nestedSize(CommitDataRequest.CHUNKS_TO_PATCH_FIELD_NUMBER, chunkToPatchSize());
        }
        int invoke = varintFieldSize(IPCFrame.InvokeMethod.SERVICE_ID_FIELD_NUMBER, serviceId)
                + varintFieldSize(IPCFrame.InvokeMethod.METHOD_ID_FIELD_NUMBER, commitDataId)
                + nestedSize(IPCFrame.InvokeMethod.ARGS_PROTO_FIELD_NUMBER, args)
                + varintFieldSize(IPCFrame.InvokeMethod.DROP_REPLY_FIELD_NUMBER, 0);
        int frame = varintFieldSize(IPCFrame.REQUEST_ID_FIELD_NUMBER, 5)
                + nestedSize(IPCFrame.MSG_INVOKE_METHOD_FIELD_NUMBER, invoke);
        out[0] = (byte) frame;
        out[1] = (byte) (frame >>> 8);
        out[2] = (byte) (frame >>> 16);
        out[3] = (byte) (frame >>> 24);
        int at = HEADER_SIZE;
        at = varintField(at, IPCFrame.REQUEST_ID_FIELD_NUMBER, 5);
        at = lengthField(at, IPCFrame.MSG_INVOKE_METHOD_FIELD_NUMBER, invoke);
        at = varintField(at, IPCFrame.InvokeMethod.SERVICE_ID_FIELD_NUMBER, serviceId);
        at = varintField(at, IPCFrame.InvokeMethod.METHOD_ID_FIELD_NUMBER, commitDataId);
        at = lengthField(at, IPCFrame.InvokeMethod.ARGS_PROTO_FIELD_NUMBER, args);
        for (int i = 0; i < request.chunksToMove(); i++) {
            at = lengthField(at, CommitDataRequest.CHUNKS_TO_MOVE_FIELD_NUMBER, chunkToMoveSize(request, i));
            at = varintField(at, CommitDataRequest.ChunksToMove.PAGE_FIELD_NUMBER, request.movePage(i));
            at = varintField(at, CommitDataRequest.ChunksToMove.CHUNK_FIELD_NUMBER, request.moveChunk(i));
            at = varintField(at, CommitDataRequest.ChunksToMove.TARGET_BUFFER_FIELD_NUMBER, request.moveTargetBuffer(i));
            if (emulatedAbi != null) {
                int page = request.movePage(i);
                int chunk = request.moveChunk(i);
                int layout = emulatedAbi.pageLayout(page);
                int size = emulatedAbi.chunkSize(layout);
                at = lengthField(at, CommitDataRequest.ChunksToMove.DATA_FIELD_NUMBER, size);
                MemorySegment.copy(smb.segment(), ValueLayout.JAVA_BYTE, emulatedAbi.chunkOffset(page, chunk, layout),
                        out, at, size);
                at += size;
                emulatedAbi.tryAcquireChunkForReading(page, chunk);
                emulatedAbi.releaseChunkAsFree(page, chunk);
            }
        }
        if (patch) {
            // A patch of the chunk just moved (the writer's chunks count from 0, one per op).
            at = lengthField(at, CommitDataRequest.CHUNKS_TO_PATCH_FIELD_NUMBER, chunkToPatchSize());
            at = varintField(at, CommitDataRequest.ChunkToPatch.TARGET_BUFFER_FIELD_NUMBER, targetBuffer);
            at = varintField(at, CommitDataRequest.ChunkToPatch.WRITER_ID_FIELD_NUMBER, writer.writerId());
            at = varintField(at, CommitDataRequest.ChunkToPatch.CHUNK_ID_FIELD_NUMBER, chunkId);
            at = lengthField(at, CommitDataRequest.ChunkToPatch.PATCHES_FIELD_NUMBER, patchSize());
            at = varintField(at, CommitDataRequest.ChunkToPatch.Patch.OFFSET_FIELD_NUMBER, PATCH_OFFSET);
            at = lengthField(at, CommitDataRequest.ChunkToPatch.Patch.DATA_FIELD_NUMBER, 4);
            at += 4;
        }
        outLength = varintField(at, IPCFrame.InvokeMethod.DROP_REPLY_FIELD_NUMBER, 0);
        chunkId++;
    }

    private int chunkToMoveSize(CommitRequest request, int i) {
        int size = varintFieldSize(CommitDataRequest.ChunksToMove.PAGE_FIELD_NUMBER, request.movePage(i))
                + varintFieldSize(CommitDataRequest.ChunksToMove.CHUNK_FIELD_NUMBER, request.moveChunk(i))
                + varintFieldSize(CommitDataRequest.ChunksToMove.TARGET_BUFFER_FIELD_NUMBER, request.moveTargetBuffer(i));
        if (emulatedAbi != null) {
            size += nestedSize(CommitDataRequest.ChunksToMove.DATA_FIELD_NUMBER,
                    emulatedAbi.chunkSize(emulatedAbi.pageLayout(request.movePage(i))));
        }
        return size;
    }

    private int chunkToPatchSize() {
        return varintFieldSize(CommitDataRequest.ChunkToPatch.TARGET_BUFFER_FIELD_NUMBER, targetBuffer)
                + varintFieldSize(CommitDataRequest.ChunkToPatch.WRITER_ID_FIELD_NUMBER, writer.writerId())
                + varintFieldSize(CommitDataRequest.ChunkToPatch.CHUNK_ID_FIELD_NUMBER, chunkId)
                + nestedSize(CommitDataRequest.ChunkToPatch.PATCHES_FIELD_NUMBER, patchSize());
    }

    private static int patchSize() {
        return varintFieldSize(CommitDataRequest.ChunkToPatch.Patch.OFFSET_FIELD_NUMBER, PATCH_OFFSET)
                + nestedSize(CommitDataRequest.ChunkToPatch.Patch.DATA_FIELD_NUMBER, 4);
    }

    private static int varintSize(long value) {
        int size = 1;
        while ((value >>>= 7) != 0) {
            size++;
        }
        return size;
    }

    private static int varintFieldSize(int field, long value) {
        return varintSize(field << 3) + varintSize(value);
    }

    private static int nestedSize(int field, int length) {
        return varintSize(field << 3) + varintSize(length) + length;
    }

    private int varint(int at, long value) {
        while ((value & ~0x7fL) != 0) {
            out[at++] = (byte) (value | 0x80);
            value >>>= 7;
        }
        out[at++] = (byte) value;
        return at;
    }

    private int varintField(int at, int field, long value) {
        return varint(varint(at, (long) field << 3 | ProtoWire.WIRE_TYPE_VARINT), value);
    }

    /** The tag and length of a length-delimited field; its bytes follow. */
    private int lengthField(int at, int field, int length) {
        return varint(varint(at, (long) field << 3 | ProtoWire.WIRE_TYPE_LENGTH_DELIMITED), length);
    }

    private static int payloadSize(byte[] frame) {
        return (frame[0] & 0xff) | (frame[1] & 0xff) << 8 | (frame[2] & 0xff) << 16 | (frame[3] & 0xff) << 24;
    }

    /** The handshake, before measuring: a plain, allocating client of the port. */
    private static final class Handshake {
        private final StreamSocket socket;
        private byte[] stream = new byte[0];
        int serviceId;
        int lastFd = -1;

        Handshake(StreamSocket socket) {
            this.socket = socket;
        }

        /** Binds {@code service}: its method ids by name; its id in {@link #serviceId}. */
        Map<String, Integer> bind(String name) {
            HeapBuffered<IPCFrame> frame = new HeapBuffered<>(IPCFrame.FACTORY);
            frame.get().setRequestId(1);
            frame.get().setMsgBindService().setServiceName(name);
            send(frame);
            IPCFrame.Decoder reply = nextFrame();
            IPCFrame.BindServiceReply.Decoder bound = new IPCFrame.BindServiceReply.Decoder();
            reply.msgBindServiceReply(bound);
            Map<String, Integer> methods = new HashMap<>();
            serviceId = bound.serviceId();
            IPCFrame.BindServiceReply.MethodInfo.Decoder info = new IPCFrame.BindServiceReply.MethodInfo.Decoder();
            RepeatedFieldIterator it = bound.methods(new RepeatedFieldIterator());
            while (it.next()) {
                info.reset(it.field());
                methods.put(info.name(), info.id());
            }
            return methods;
        }

        void invoke(long requestId, int methodId, byte[] args) {
            HeapBuffered<IPCFrame> frame = new HeapBuffered<>(IPCFrame.FACTORY);
            frame.get().setRequestId(requestId);
            IPCFrame.InvokeMethod invoke = frame.get().setMsgInvokeMethod();
            invoke.setServiceId(serviceId);
            invoke.setMethodId(methodId);
            invoke.setArgsProto(args);
            invoke.setDropReply(false);
            send(frame);
        }

        /** The next reply to request {@code streamId}, a command; other replies are skipped. */
        GetAsyncCommandResponse.Decoder nextCommand(long streamId) {
            while (true) {
                IPCFrame.Decoder frame = nextFrame();
                IPCFrame.InvokeMethodReply.Decoder reply = new IPCFrame.InvokeMethodReply.Decoder();
                if (frame.requestId() == streamId && frame.msgInvokeMethodReply(reply)) {
                    GetAsyncCommandResponse.Decoder command = new GetAsyncCommandResponse.Decoder();
                    command.reset(MemorySegment.ofArray(reply.replyProto()));
                    return command;
                }
            }
        }

        private void send(HeapBuffered<IPCFrame> frame) {
            byte[] payload = frame.toByteArray();
            byte[] framed = new byte[HEADER_SIZE + payload.length];
            framed[0] = (byte) payload.length;
            framed[1] = (byte) (payload.length >>> 8);
            System.arraycopy(payload, 0, framed, HEADER_SIZE, payload.length);
            socket.send(framed);
        }

        private IPCFrame.Decoder nextFrame() {
            while (stream.length < HEADER_SIZE || stream.length < HEADER_SIZE + payloadSize(stream)) {
                byte[] chunk = new byte[64 * 1024];
                StreamSocket.Received received = socket.receive(chunk, 1);
                if (received.bytes() == 0) {
                    throw new IllegalStateException("the service closed the connection");
                }
                if (received.fds().length > 0) {
                    lastFd = received.fds()[0];
                }
                int at = stream.length;
                stream = Arrays.copyOf(stream, at + received.bytes());
                System.arraycopy(chunk, 0, stream, at, received.bytes());
            }
            int end = HEADER_SIZE + payloadSize(stream);
            IPCFrame.Decoder frame = new IPCFrame.Decoder();
            frame.reset(MemorySegment.ofArray(Arrays.copyOfRange(stream, HEADER_SIZE, end)));
            stream = Arrays.copyOfRange(stream, end, stream.length);
            return frame;
        }
    }
}
