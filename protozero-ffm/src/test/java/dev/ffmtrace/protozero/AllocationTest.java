package dev.ffmtrace.protozero;

import dev.ffmtrace.protozero.TestMessages.Event;
import dev.ffmtrace.protozero.TestMessages.Packet;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * After warm-up, writing and decoding message trees allocates nothing on the heap. The
 * bound is under one byte per operation: any per-operation allocation is at least 16
 * bytes, while the JIT and the measurement itself may allocate a few bytes once.
 */
class AllocationTest {
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private static void writeTree(HeapBuffered<Packet> buffered, String name) {
        buffered.reset();
        Packet packet = buffered.get();
        packet.setTimestamp(200);
        packet.setTrustedPacketSequenceId(3903809);
        Event event = packet.setTrackEvent();
        event.setType(1);
        event.setTrackUuid(49083589894L);
        event.setName(name);
        Event child = event.addChild();
        child.setName(name);
        child.addChild().setType(3);
        event.addChild().setTrackUuid(-1);
        packet.setTimestamp(201);
        packet.finalizeMessage();
    }

    @Test
    void writingAWarmTreeAllocatesNothing() {
        try (Arena arena = Arena.ofConfined()) {
            HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY, arena, 64, 256);
            String name = "caf\u00e9 name that spans slices \ud83d\ude00 " + "z".repeat(100);
            for (int i = 0; i < 20_000; i++) {
                writeTree(buffered, name);
            }
            assertTrue(THREADS.isThreadAllocatedMemorySupported());
            long before = THREADS.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < 10_000; i++) {
                writeTree(buffered, name);
            }
            long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
            assertTrue(allocated < 10_000, allocated + " bytes allocated by 10000 warm writes");
        }
    }

    @Test
    void decodingAllocatesNothing() {
        HeapBuffered<Packet> buffered = new HeapBuffered<>(Packet.FACTORY);
        writeTree(buffered, "name");
        MemorySegment bytes = MemorySegment.ofArray(buffered.toByteArray());
        ProtoDecoder decoder = new ProtoDecoder();
        ProtoDecoder nested = new ProtoDecoder();
        long sink = 0;
        for (int round = 0; round < 2; round++) {
            long before = THREADS.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < 20_000; i++) {
                decoder.reset(bytes);
                while (decoder.next()) {
                    ProtoField f = decoder.field();
                    sink += f.asLong();
                    if (f.id() == Packet.TRACK_EVENT) {
                        nested.reset(f);
                        while (nested.next()) {
                            sink += nested.field().length();
                        }
                    }
                }
            }
            long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
            if (round == 1) {
                assertTrue(allocated < 20_000, allocated + " bytes allocated by 20000 warm decodes");
            }
        }
        assertTrue(sink != 0);
    }

    @Test
    void redirectingSizeFieldsAllocatesNothing() {
        try (Arena arena = Arena.ofConfined()) {
            ChunkRing ring = new ChunkRing(arena);
            ScatteredStreamWriter writer = new ScatteredStreamWriter(ring);
            Packet packet = new Packet();
            ring.root = packet;
            for (int i = 0; i < 20_000; i++) {
                writeCrossingPacket(writer, packet);
            }
            long redirectedBefore = ring.redirected;
            long before = THREADS.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < 10_000; i++) {
                writeCrossingPacket(writer, packet);
            }
            long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
            assertTrue(ring.redirected - redirectedBefore >= 10_000, "every packet redirects a size field");
            assertTrue(allocated < 10_000, allocated + " bytes allocated by 10000 redirecting writes");
        }
    }

    private static void writeCrossingPacket(ScatteredStreamWriter writer, Packet packet) {
        packet.reset(writer);
        packet.setTimestamp(7);
        Event event = packet.setTrackEvent();
        event.setName("a name long enough to leave the 32-byte chunk it started in");
        event.addChild().setTrackUuid(42);
        packet.finalizeMessage();
    }

    /**
     * Like a trace writer: fixed chunks reused in turn, and size fields left in a chunk
     * being handed back go to slots of a patch buffer it owns.
     */
    private static final class ChunkRing implements ScatteredStreamWriter.Delegate, SizeFieldRedirector {
        private final MemorySegment[] chunks = new MemorySegment[4];
        private final MemorySegment patches;
        private int next;
        private int patchSlot;
        private long redirected;
        private Message root;

        ChunkRing(Arena arena) {
            for (int i = 0; i < chunks.length; i++) {
                chunks[i] = arena.allocate(32);
            }
            patches = arena.allocate(16L * ProtoWire.MESSAGE_LENGTH_FIELD_SIZE);
        }

        @Override
        public MemorySegment newSlice(long usedBytes) {
            root.redirectSizeFields(this);
            MemorySegment chunk = chunks[next];
            next = (next + 1) % chunks.length;
            return chunk;
        }

        @Override
        public void redirect(Message message) {
            message.redirectSizeField(patches, (long) patchSlot * ProtoWire.MESSAGE_LENGTH_FIELD_SIZE);
            patchSlot = (patchSlot + 1) % 16;
            redirected++;
        }
    }
}
