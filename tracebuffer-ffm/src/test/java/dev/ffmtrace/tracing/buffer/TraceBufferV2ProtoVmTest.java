package dev.ffmtrace.tracing.buffer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A ring buffer hands the packets it overwrites to the ProtoVMs of their producers, so the
 * state a VM keeps is what those packets said, in order; other producers' packets, a
 * discarding buffer and a read-only clone leave it alone.
 */
class TraceBufferV2ProtoVmTest {
    private static final ClientIdentity IDENTITY = new ClientIdentity(3, 4);
    /** A VmProgram of one instruction: merge the whole packet into the state's root. */
    private static final byte[] MERGE_ALL = HexFormat.of().parseHex("0801" + "1202" + "1a00");
    private static final int PACKET_PAD = 100;

    /** Packet {@code i}: field 1 = i, field 2 = the writer, field 15 = padding so chunks fill. */
    private static byte[] packet(int i, int writer) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(0x08);
        writeVarint(out, i);
        out.write(0x10);
        out.write(writer);
        out.write(0x7a);
        out.write(PACKET_PAD);
        out.writeBytes(new byte[PACKET_PAD]);
        return out.toByteArray();
    }

    private static void writeVarint(ByteArrayOutputStream out, long value) {
        while ((value & ~0x7fL) != 0) {
            out.write((int) (value & 0x7f) | 0x80);
            value >>>= 7;
        }
        out.write((int) value);
    }

    /** Writes {@code count} chunks of 4 whole packets each for (producer, writer 1). */
    private static int writeChunks(TraceBufferV2 buffer, int producer, int firstPacket, int count, int chunkId) {
        int packet = firstPacket;
        for (int c = 0; c < count; c++) {
            ByteArrayOutputStream payload = new ByteArrayOutputStream();
            for (int f = 0; f < 4; f++) {
                byte[] bytes = packet(packet++, producer);
                writeVarint(payload, bytes.length);
                payload.writeBytes(bytes);
            }
            byte[] bytes = payload.toByteArray();
            buffer.copyChunkUntrusted(new ChunkCommit().producer(producer, IDENTITY).writerId(1).chunkId(chunkId + c)
                    .numFragments(4).flags(0).complete(true), MemorySegment.ofArray(bytes), bytes.length);
        }
        return packet;
    }

    /** The field-1 value of the first packet of {@code producer} still in the buffer. */
    private static int firstUnread(TraceBufferV2 buffer, int producer) {
        TracePacketView view = new TracePacketView();
        buffer.beginRead();
        while (buffer.readNextTracePacket(view)) {
            byte[] bytes = view.toByteArray();
            if (view.producerId() == producer) {
                int value = 0;
                for (int shift = 0, at = 1; ; shift += 7, at++) {
                    value |= (bytes[at] & 0x7f) << shift;
                    if (bytes[at] >= 0) {
                        return value;
                    }
                }
            }
        }
        return -1;
    }

    @Test
    void overwrittenPacketsOfItsProducerBuildTheVmsState() {
        try (Arena arena = Arena.ofConfined()) {
            TraceBufferV2 buffer = new TraceBufferV2(arena.allocate(8192, 16), OverwritePolicy.RING_BUFFER);
            buffer.protoVms().setUp("ds", MERGE_ALL, 64, 1);
            int written = 0;
            for (int round = 0; round < 12; round++) {
                written = writeChunks(buffer, 1, written, 1, round * 2);
                writeChunks(buffer, 2, 0, 1, round * 2 + 1);
            }
            int first = firstUnread(buffer, 1);
            assertTrue(first > 0, "nothing of producer 1 was overwritten");
            BufferProtoVms vms = buffer.protoVms();
            assertEquals(first, vms.patchesApplied());
            assertEquals(0, vms.patchesUnapplied());
            // The state is the last overwritten packet of producer 1: merge replaces each field.
            assertArrayEquals(packet(first - 1, 1), vms.instances().getFirst().vm().serializeState());
        }
    }

    @Test
    void aProducerRegisteringTheSameProgramSharesTheVmAndAnotherProgramGetsItsOwn() {
        try (Arena arena = Arena.ofConfined()) {
            TraceBufferV2 buffer = new TraceBufferV2(arena.allocate(4096, 16), OverwritePolicy.RING_BUFFER);
            buffer.protoVms().setUp("ds", MERGE_ALL, 64, 7);
            buffer.protoVms().setUp("ds", MERGE_ALL.clone(), 64, 3);
            buffer.protoVms().setUp("other", MERGE_ALL, 64, 3);
            byte[] newer = MERGE_ALL.clone();
            newer[1] = 2;
            buffer.protoVms().setUp("ds", newer, 32, 5);
            List<BufferProtoVms.Instance> instances = buffer.protoVms().instances();
            assertEquals(3, instances.size());
            assertArrayEquals(new int[] {3, 7}, instances.get(0).producerIds());
            assertEquals("other", instances.get(1).dataSourceName());
            assertArrayEquals(new int[] {5}, instances.get(2).producerIds());
            assertEquals(32, instances.get(2).memoryLimitKb());
        }
    }

    @Test
    void aCloneKeepsReadOnlySnapshotsOfTheVms() {
        try (Arena arena = Arena.ofConfined()) {
            TraceBufferV2 buffer = new TraceBufferV2(arena.allocate(4096, 16), OverwritePolicy.RING_BUFFER);
            buffer.protoVms().setUp("ds", MERGE_ALL, 64, 1);
            int written = writeChunks(buffer, 1, 0, 40, 0);
            TraceBufferV2 clone = buffer.cloneReadOnly(arena);
            byte[] state = buffer.protoVms().instances().getFirst().vm().serializeState();
            assertTrue(clone.protoVms().instances().getFirst().vm().isReadOnly());
            assertArrayEquals(state, clone.protoVms().instances().getFirst().vm().serializeState());
            assertThrows(IllegalStateException.class, () -> clone.protoVms().setUp("ds", MERGE_ALL, 64, 2));
            writeChunks(buffer, 1, written, 10, 40);
            assertArrayEquals(state, clone.protoVms().instances().getFirst().vm().serializeState());
        }
    }

    @Test
    void aDiscardingBufferNeverFeedsItsVms() {
        try (Arena arena = Arena.ofConfined()) {
            TraceBufferV2 buffer = new TraceBufferV2(arena.allocate(4096, 16), OverwritePolicy.DISCARD);
            buffer.protoVms().setUp("ds", MERGE_ALL, 64, 1);
            writeChunks(buffer, 1, 0, 40, 0);
            assertEquals(0, buffer.protoVms().patchesApplied());
            assertEquals(0, buffer.protoVms().instances().getFirst().vm().serializeState().length);
        }
    }
}
