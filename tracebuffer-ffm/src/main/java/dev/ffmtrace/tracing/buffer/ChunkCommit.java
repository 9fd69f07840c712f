package dev.ffmtrace.tracing.buffer;

import java.util.Objects;

/**
 * One chunk as handed to {@link TraceBufferV2#copyChunkUntrusted}: who sent it (the
 * service's producer id and the connection's {@link ClientIdentity}, both trusted) and
 * what the producer claims about it (writer id, chunk id, fragment count, SMB flags;
 * untrusted, checked by the buffer, which counts a bad value instead of throwing).
 * The payload itself is passed next to it.
 *
 * <p>Set by name, so the fragment count and the flags, both ints, cannot be swapped
 * unnoticed. Mutable and meant to be reused, one per committing thread: a fresh object
 * per chunk would be allocated on every copy, because {@code copyChunkUntrusted} is too
 * large to be inlined and so the object escapes. Every setter returns {@code this};
 * a field not set keeps its previous value ({@link #complete()} starts true, the ids,
 * count and flags 0, the identity unset).
 */
public final class ChunkCommit {
    private int producerId;
    private ClientIdentity clientIdentity;
    private int writerId;
    private int chunkId;
    private int numFragments;
    private int flags;
    private boolean complete = true;

    /** An empty commit, to fill with the setters and reuse. */
    public ChunkCommit() {
    }

    /** Sets the sender: the service's id of the producer and the identity its connection proved. */
    public ChunkCommit producer(int producerId, ClientIdentity clientIdentity) {
        this.clientIdentity = Objects.requireNonNull(clientIdentity, "clientIdentity");
        this.producerId = producerId;
        return this;
    }

    /** Sets the id of the TraceWriter that wrote the chunk (valid: 0..65535, not 0 with producer id 0). */
    public ChunkCommit writerId(int writerId) {
        this.writerId = writerId;
        return this;
    }

    /** Sets the chunk's id in its writer's sequence (any int; ordered modulo 2^32). */
    public ChunkCommit chunkId(int chunkId) {
        this.chunkId = chunkId;
        return this;
    }

    /** Sets how many fragments the chunk header counts (valid: 0..65535). */
    public ChunkCommit numFragments(int numFragments) {
        this.numFragments = numFragments;
        return this;
    }

    /** Sets the chunk header's flags (the SMB ABI's; other bits are ignored). */
    public ChunkCommit flags(int flags) {
        this.flags = flags;
        return this;
    }

    /** Sets whether the chunk was committed (true) or scraped while its writer may still write it (false). */
    public ChunkCommit complete(boolean complete) {
        this.complete = complete;
        return this;
    }

    /** The service's id of the producer. */
    public int producerId() {
        return producerId;
    }

    /** The identity of the producer's process, from its connection; null until {@link #producer} is called. */
    public ClientIdentity clientIdentity() {
        return clientIdentity;
    }

    /** The writer id the producer claims. */
    public int writerId() {
        return writerId;
    }

    /** The chunk id the producer claims. */
    public int chunkId() {
        return chunkId;
    }

    /** The fragment count the producer claims. */
    public int numFragments() {
        return numFragments;
    }

    /** The flags the producer claims. */
    public int flags() {
        return flags;
    }

    /** Whether the chunk was committed rather than scraped. */
    public boolean complete() {
        return complete;
    }

    @Override
    public String toString() {
        return "ChunkCommit[producer=" + producerId + " " + clientIdentity + ", writer=" + writerId + ", chunk="
                + chunkId + ", fragments=" + numFragments + ", flags=0x" + Integer.toHexString(flags)
                + (complete ? "" : ", scraped") + "]";
    }
}
