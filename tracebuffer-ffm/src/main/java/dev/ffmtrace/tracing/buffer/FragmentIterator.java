package dev.ffmtrace.tracing.buffer;

import dev.ffmtrace.protozero.VarIntReader;
import java.lang.foreign.MemorySegment;

import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.FLAG_FIRST_PACKET_CONTINUES_FROM_PREV_CHUNK;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK;

/**
 * Forward-only tokenizer of the fragments of one chunk: {@code [varint size][bytes]}
 * back to back. Treats the bytes as untrusted: every size is bounded by the chunk,
 * and it stops, flagging why, at the first fragment that is not sound. It never
 * changes the bytes. Reused: {@link #reset} points it at another chunk.
 */
final class FragmentIterator {
    /** The drop-packet size a trace writer leaves when it abandons a fragmented packet. */
    static final long PACKET_SIZE_DROP_PACKET = 0x0FFF_FFFFL;

    static final int WHOLE_PACKET = 0;
    /** Last fragment of a chunk whose packet continues on the next chunk. */
    static final int BEGIN = 1;
    /** The only fragment of a chunk, continued from the previous and on the next. */
    static final int CONTINUE = 2;
    /** First fragment of a chunk, continuing the previous chunk's packet. */
    static final int END = 3;

    private final VarIntReader varInt = new VarIntReader();
    private MemorySegment segment;
    private long payloadStart;
    private int payloadSize;
    private int nextOffset;
    private int flags;
    private boolean corrupted;
    private boolean writerAbort;

    private int fragmentOffset;
    private int fragmentHeaderSize;
    private int fragmentSize;
    private int fragmentType;

    /**
     * @param payloadStart absolute offset of the chunk's first fragment header
     * @param payloadSize  bytes of fragments
     * @param startOffset  offset of the first fragment to tokenize, relative to {@code payloadStart}
     */
    void reset(MemorySegment segment, long payloadStart, int payloadSize, int startOffset, int flags) {
        this.segment = segment;
        this.payloadStart = payloadStart;
        this.payloadSize = payloadSize;
        this.nextOffset = startOffset;
        this.flags = flags;
        this.corrupted = false;
        this.writerAbort = false;
    }

    /** Tokenizes the next fragment; false at the end of the chunk or at the first unsound one. */
    boolean next() {
        int headerOffset = nextOffset;
        if (headerOffset >= payloadSize) {
            return false;
        }
        long headerStart = payloadStart + headerOffset;
        long headerEnd = varInt.read(segment, headerStart, payloadStart + payloadSize);
        if (headerEnd < 0) {
            corrupted = true;
            return false;
        }
        long value = varInt.value();
        int position = (int) (headerEnd - payloadStart);
        if (value == PACKET_SIZE_DROP_PACKET) {
            writerAbort = true;
            return false;
        }
        if (Long.compareUnsigned(value, payloadSize - position) > 0) {
            corrupted = true;
            return false;
        }
        fragmentOffset = position;
        fragmentHeaderSize = position - headerOffset;
        fragmentSize = (int) value;
        nextOffset = position + fragmentSize;

        boolean first = headerOffset == 0;
        boolean last = nextOffset >= payloadSize;
        boolean continuesFromPrev = (flags & FLAG_FIRST_PACKET_CONTINUES_FROM_PREV_CHUNK) != 0;
        if (last && (flags & FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK) != 0) {
            fragmentType = first && continuesFromPrev ? CONTINUE : BEGIN;
        } else if (first && continuesFromPrev) {
            fragmentType = END;
        } else {
            fragmentType = WHOLE_PACKET;
        }
        return true;
    }

    /** Offset just past the last fragment tokenized, relative to the payload start. */
    int nextOffset() {
        return nextOffset;
    }

    boolean corrupted() {
        return corrupted;
    }

    boolean writerAbort() {
        return writerAbort;
    }

    /** Absolute offset of the current fragment's bytes (after its size varint). */
    long fragmentStart() {
        return payloadStart + fragmentOffset;
    }

    int fragmentHeaderSize() {
        return fragmentHeaderSize;
    }

    int fragmentSize() {
        return fragmentSize;
    }

    int fragmentType() {
        return fragmentType;
    }
}
