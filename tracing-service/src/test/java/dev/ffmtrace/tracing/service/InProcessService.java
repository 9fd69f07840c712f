package dev.ffmtrace.tracing.service;

import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.flagsOf;
import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.packetCountOf;

import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.tracing.buffer.ChunkCommit;
import dev.ffmtrace.tracing.buffer.ChunkPatches;
import dev.ffmtrace.tracing.buffer.ClientIdentity;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.buffer.TraceBufferV2;
import dev.ffmtrace.tracing.buffer.TracePacketView;
import dev.ffmtrace.tracing.service.reader.SharedMemoryReader;
import dev.ffmtrace.tracing.smb.CommitRequest;
import dev.ffmtrace.tracing.smb.CommitTransport;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbi;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;

/**
 * The service half of the writer tests: a sealed-memfd SMB, a commit transport that
 * moves committed chunks into a real {@link TraceBufferV2} and applies patches, and a
 * reader of whole packets.
 */
final class InProcessService implements CommitTransport, AutoCloseable {
    static final int PRODUCER_ID = 1;
    static final ClientIdentity IDENTITY = new ClientIdentity(1000, 42);

    final SharedMemory memory;
    final SharedMemoryAbi abi;
    final SharedMemoryReader reader;
    final TraceBufferV2 buffer;
    private final Arena arena = Arena.ofShared();
    private final TracePacketView view = new TracePacketView();
    private final SharedMemoryReader.ChunkSink sink;
    private final ChunkPatches patches = new ChunkPatches();
    long commits;
    long patchesApplied;
    long patchesRejected;

    InProcessService(int smbSize, int pageSize, int bufferSize) {
        memory = SharedMemory.create("test-smb", smbSize);
        abi = new SharedMemoryAbi(memory.segment(), pageSize);
        reader = new SharedMemoryReader(abi);
        buffer = new TraceBufferV2(arena.allocate(bufferSize, 16), OverwritePolicy.RING_BUFFER);
        sink = (writerId, chunkId, packets, complete, smb, offset, size) -> buffer.copyChunkUntrusted(
                chunk(PRODUCER_ID, writerId, chunkId, packets, complete), smb, offset, size);
    }

    /** A chunk of {@code producerId} from {@link #IDENTITY}, described by its SMB header's packets word. */
    static ChunkCommit chunk(int producerId, int writerId, int chunkId, int packets, boolean complete) {
        return new ChunkCommit().producer(producerId, IDENTITY).writerId(writerId).chunkId(chunkId)
                .numFragments(packetCountOf(packets)).flags(flagsOf(packets)).complete(complete);
    }

    @Override
    public synchronized void commit(CommitRequest request) {
        commits++;
        for (int i = 0; i < request.chunksToMove(); i++) {
            reader.moveChunk(request.movePage(i), request.moveChunk(i), sink);
        }
        for (int start = 0, end; start < request.patches(); start = end) {
            end = request.patchRunEnd(start);
            int count = end - start;
            patches.clear();
            for (int j = 0; j < count; j++) {
                patches.addLittleEndian(request.patchOffset(start + j), request.patchData(start + j));
            }
            if (buffer.tryPatchChunkContents(PRODUCER_ID, request.patchWriterId(start), request.patchChunkId(start),
                    patches, request.patchHasMorePatches(end - 1))) {
                patchesApplied += count;
            } else {
                patchesRejected += count;
            }
        }
    }

    /** A packet as read back: its bytes, writer and loss flags. */
    record ReadPacket(int writerId, byte[] bytes, int droppedReasons) {
    }

    /** Reads every packet the buffer can return now. */
    synchronized List<ReadPacket> readAll() {
        List<ReadPacket> packets = new ArrayList<>();
        buffer.beginRead();
        while (buffer.readNextTracePacket(view)) {
            packets.add(new ReadPacket(view.writerId(), view.toByteArray(), view.previousPacketDroppedReasons()));
        }
        return packets;
    }

    @Override
    public void close() {
        memory.close();
        arena.close();
    }
}
