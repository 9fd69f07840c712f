package dev.ffmtrace.tracing.buffer;

import dev.ffmtrace.protozero.VarIntReader;

/**
 * The write path's pass over a chunk's fragments ({@code [varint size][bytes]} back to
 * back), on the heap copy the buffer takes of every chunk: where the sound fragments end,
 * and why the pass stopped short, as {@link FragmentIterator} tokenizes them. It reads
 * the array directly: it runs once per fragment of every chunk a producer commits, often
 * hundreds per chunk, and the service must be done with a chunk before the producer gets
 * it back, also while the JIT has not yet compiled this path (a segment access costs
 * tens of times an array read before it has). Reused: one instance per buffer.
 */
final class FragmentScan {
    /** {@link #stop()}: every fragment asked for was found. */
    static final int ALL = 0;
    /** The chunk ends before the fragments asked for. */
    static final int SHORT = 1;
    /** A size field that does not parse, or a fragment that runs past the chunk. */
    static final int CORRUPTED = 2;
    /** A trace writer's drop-packet marker: it abandoned the packet. */
    static final int WRITER_ABORT = 3;

    private final VarIntReader varInt = new VarIntReader();
    private int stop;

    /**
     * Passes over at most {@code fragments} fragments of {@code bytes[0, size)}; returns the
     * offset just past the last sound one (0 if none), and sets {@link #stop()}.
     */
    int scan(byte[] bytes, int size, int fragments) {
        int end = 0;
        for (int i = 0; i < fragments; i++) {
            if (end >= size) {
                stop = SHORT;
                return end;
            }
            int position = varInt.read(bytes, end, size);
            if (position < 0) {
                stop = CORRUPTED;
                return end;
            }
            long value = varInt.value();
            if (value == FragmentIterator.PACKET_SIZE_DROP_PACKET) {
                stop = WRITER_ABORT;
                return end;
            }
            if (Long.compareUnsigned(value, size - position) > 0) {
                stop = CORRUPTED;
                return end;
            }
            end = position + (int) value;
        }
        stop = ALL;
        return end;
    }

    /**
     * Where the last fragment of {@code bytes[0, size)} starts (0 for one fragment or
     * none), or, if the fragments stop parsing before {@code size}, where they stop.
     */
    int lastFragmentStart(byte[] bytes, int size) {
        int start = 0;
        int end = 0;
        while (end < size) {
            int position = varInt.read(bytes, end, size);
            if (position < 0) {
                return end;
            }
            long value = varInt.value();
            if (value == FragmentIterator.PACKET_SIZE_DROP_PACKET || Long.compareUnsigned(value, size - position) > 0) {
                return end;
            }
            start = end;
            end = position + (int) value;
        }
        return start;
    }

    /** Why the last {@link #scan} stopped: {@link #ALL}, {@link #SHORT}, {@link #CORRUPTED} or {@link #WRITER_ABORT}. */
    int stop() {
        return stop;
    }
}
