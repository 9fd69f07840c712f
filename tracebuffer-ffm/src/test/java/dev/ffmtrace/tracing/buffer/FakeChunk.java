package dev.ffmtrace.tracing.buffer;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;

/** Builds an SMB chunk payload the way a TraceWriter would, and copies it into a buffer. */
final class FakeChunk {
    static final ClientIdentity DEFAULT_IDENTITY = new ClientIdentity(0, 0);

    private final TraceBufferV2 buffer;
    private final int producerId;
    private final int writerId;
    private final int chunkId;
    private final ByteArrayOutputStream payload = new ByteArrayOutputStream();
    private int numFragments;
    private int flags;
    private ClientIdentity identity = DEFAULT_IDENTITY;

    FakeChunk(TraceBufferV2 buffer, int producerId, int writerId, int chunkId) {
        this.buffer = buffer;
        this.producerId = producerId;
        this.writerId = writerId;
        this.chunkId = chunkId;
    }

    /** A fragment of {@code size} bytes including its size varint (1 byte up to 128, else 2). */
    FakeChunk addPacket(int size, char seed) {
        return addPacket(size, seed, 0);
    }

    FakeChunk addPacket(int size, char seed, int chunkFlags) {
        byte[] encoded = encode(size, seed);
        payload.writeBytes(encoded);
        numFragments++;
        flags |= chunkFlags;
        return this;
    }

    /** Raw fragment bytes, header included, counted as one fragment. */
    FakeChunk addRawFragment(int... bytes) {
        for (int b : bytes) {
            payload.write(b);
        }
        numFragments++;
        return this;
    }

    /** Raw bytes not counted as a fragment. */
    FakeChunk addRawBytes(int... bytes) {
        for (int b : bytes) {
            payload.write(b);
        }
        return this;
    }

    FakeChunk padTo(int size) {
        while (payload.size() < size) {
            payload.write(0);
        }
        return this;
    }

    FakeChunk setFlags(int chunkFlags) {
        flags = chunkFlags;
        return this;
    }

    FakeChunk setNumFragments(int count) {
        numFragments = count;
        return this;
    }

    FakeChunk identity(int uid, int pid) {
        identity = new ClientIdentity(uid, pid);
        return this;
    }

    byte[] bytes() {
        return payload.toByteArray();
    }

    /** Copies as a complete chunk; returns the stored size the bytes need. */
    int copyIntoTraceBuffer() {
        return copyIntoTraceBuffer(true);
    }

    int copyIntoTraceBuffer(boolean complete) {
        byte[] bytes = payload.toByteArray();
        MemorySegment src = MemorySegment.ofArray(bytes);
        buffer.copyChunkUntrusted(new ChunkCommit().producer(producerId, identity).writerId(writerId)
                .chunkId(chunkId).numFragments(numFragments).flags(flags).complete(complete), src, bytes.length);
        return TBChunkDescriptor.outerSize(bytes.length);
    }

    /** The payload (without header) of a fragment built by {@link #addPacket(int, char)}. */
    static byte[] fragmentPayload(int size, char seed) {
        byte[] encoded = encode(size, seed);
        int header = size <= 128 ? 1 : 2;
        return java.util.Arrays.copyOfRange(encoded, header, encoded.length);
    }

    static byte[] encode(int size, char seed) {
        int header = size <= 128 ? 1 : 2;
        if (size < header) {
            throw new IllegalArgumentException("size " + size);
        }
        int payloadSize = size - header;
        byte[] out = new byte[size];
        if (header == 1) {
            out[0] = (byte) payloadSize;
        } else {
            out[0] = (byte) (payloadSize & 0x7F | 0x80);
            out[1] = (byte) (payloadSize >>> 7);
        }
        for (int i = 0; i < payloadSize; i++) {
            out[header + i] = (byte) (seed + i);
        }
        return out;
    }
}
