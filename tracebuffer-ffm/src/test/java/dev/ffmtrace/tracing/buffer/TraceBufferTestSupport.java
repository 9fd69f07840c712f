package dev.ffmtrace.tracing.buffer;

import org.junit.jupiter.api.AfterEach;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Shared fixture: buffers in confined native memory, and readers that turn packets into byte arrays. */
abstract class TraceBufferTestSupport {
    static final int FIRST = TBChunkDescriptor.FLAG_FIRST_PACKET_CONTINUES_FROM_PREV_CHUNK;
    static final int LAST = TBChunkDescriptor.FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK;
    static final int NEEDS_PATCHING = TBChunkDescriptor.FLAG_CHUNK_NEEDS_PATCHING;

    final Arena arena = Arena.ofConfined();
    TraceBufferV2 tb;
    final TracePacketView view = new TracePacketView();

    @AfterEach
    void closeArena() {
        arena.close();
    }

    TraceBufferV2 reset(int size) {
        return reset(size, OverwritePolicy.RING_BUFFER);
    }

    TraceBufferV2 reset(int size, OverwritePolicy policy) {
        tb = new TraceBufferV2(arena.allocate(size, 16), policy);
        return tb;
    }

    TraceBufferV2 reset(int size, OverwriteListener listener) {
        tb = new TraceBufferV2(arena.allocate(size, 16), OverwritePolicy.RING_BUFFER, listener);
        return tb;
    }

    FakeChunk chunk(int producerId, int writerId, int chunkId) {
        return new FakeChunk(tb, producerId, writerId, chunkId);
    }

    /** Reads one packet from {@link #tb}: its fragments, or an empty list. */
    Packet read() {
        return read(tb);
    }

    Packet read(TraceBufferV2 buffer) {
        if (!buffer.readNextTracePacket(view)) {
            assertEquals(0, view.fragmentCount());
            return Packet.NONE;
        }
        List<Frag> frags = new ArrayList<>();
        for (int i = 0; i < view.fragmentCount(); i++) {
            byte[] bytes = view.fragment(i).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
            frags.add(new Frag(bytes));
        }
        return new Packet(frags, view.producerId(), view.writerId(), view.clientUid(), view.clientPid(),
                view.previousPacketDroppedReasons());
    }

    /** The expected fragment of {@link FakeChunk#addPacket(int, char)}. */
    static Frag frag(int size, char seed) {
        return new Frag(FakeChunk.fragmentPayload(size, seed));
    }

    static List<Frag> frags(Frag... frags) {
        return List.of(frags);
    }

    void assertRead(Frag... expected) {
        Packet packet = read();
        assertEquals(List.of(expected), packet.fragments());
    }

    void assertReadNothing() {
        assertEquals(List.of(), read().fragments());
    }

    void patch(int producer, int writer, int chunkId, boolean pending, long offset, int b0, int b1, int b2, int b3) {
        tb.tryPatchChunkContents(producer, writer, chunkId,
                new ChunkPatches().add(offset, (byte) b0, (byte) b1, (byte) b2, (byte) b3), pending);
    }

    record Frag(byte[] bytes) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Frag f && Arrays.equals(bytes, f.bytes);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(bytes);
        }

        @Override
        public String toString() {
            return bytes.length + ":" + (bytes.length > 8
                    ? HexFormat.of().formatHex(bytes, 0, 8) + ".."
                    : HexFormat.of().formatHex(bytes));
        }
    }

    record Packet(List<Frag> fragments, int producerId, int writerId, int uid, int pid, int dropped) {
        static final Packet NONE = new Packet(List.of(), 0, 0, 0, 0, 0);

        boolean isEmpty() {
            return fragments.isEmpty();
        }
    }
}
