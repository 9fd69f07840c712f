package dev.ffmtrace.tracing.buffer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.statistics.Statistics;

/**
 * A producer's ProtoVMs only watch what the ring overwrites: with a garbage program, a
 * merging one, or both, fed garbage packets, a buffer keeps and reads back exactly what the
 * same writes leave in a buffer without VMs, for every producer, with the same stats, and
 * no VM goes past its memory limit.
 */
class TraceBufferV2ProtoVmFuzzTest {
    private static final ClientIdentity IDENTITY = new ClientIdentity(3, 4);
    private static final byte[] MERGE_ALL = HexFormat.of().parseHex("0801" + "1202" + "1a00");
    private static final int HOSTILE = 1;
    private static final int BYSTANDER = 2;

    @Property
    void vmsFedGarbageLeaveTheBufferAsItWouldBeWithout(@ForAll long seed,
                                                       @ForAll @Size(max = 96) byte[] program,
                                                       @ForAll @IntRange(max = 16) int limitKb) {
        try (Arena arena = Arena.ofConfined()) {
            TraceBufferV2 plain = new TraceBufferV2(arena.allocate(8192, 16), OverwritePolicy.RING_BUFFER);
            TraceBufferV2 watched = new TraceBufferV2(arena.allocate(8192, 16), OverwritePolicy.RING_BUFFER);
            watched.protoVms().setUp("garbage", program, limitKb, HOSTILE);
            watched.protoVms().setUp("merge", MERGE_ALL, limitKb, HOSTILE);
            Random random = new Random(seed);
            int[] chunkIds = new int[3];
            for (int round = 0; round < 60; round++) {
                int producer = random.nextInt(3) == 0 ? BYSTANDER : HOSTILE;
                byte[] chunk = producer == HOSTILE ? garbageChunk(random) : bystanderChunk(round);
                int fragments = producer == HOSTILE ? chunk[chunk.length - 1] & 3 : 4;
                ChunkCommit commit = new ChunkCommit().producer(producer, IDENTITY).writerId(1)
                        .chunkId(chunkIds[producer]++).numFragments(fragments).flags(random.nextInt(4))
                        .complete(true);
                plain.copyChunkUntrusted(commit, MemorySegment.ofArray(chunk), chunk.length);
                watched.copyChunkUntrusted(commit, MemorySegment.ofArray(chunk), chunk.length);
            }
            assertEquals(readBack(plain), readBack(watched));
            assertEquals(plain.stats(), watched.stats());
            BufferProtoVms vms = watched.protoVms();
            Statistics.label("fed").collect(vms.patchesApplied() + vms.patchesUnapplied() + vms.patchesAborted() > 0);
            Statistics.label("fed").coverage(fed -> fed.check(true).percentage(p -> p > 80));
            for (BufferProtoVms.Instance vm : vms.instances()) {
                assertTrue(vm.vm().memoryUsageBytes() <= vm.vm().program().length + limitKb * 1024L,
                        vm.dataSourceName() + " uses " + vm.vm().memoryUsageBytes());
            }
        }
    }

    /** Up to 4 fragments of random bytes, each behind its length (one time in 8, a wrong one). */
    private static byte[] garbageChunk(Random random) {
        ByteArrayOutputStream chunk = new ByteArrayOutputStream();
        int fragments = 1 + random.nextInt(4);
        for (int f = 0; f < fragments; f++) {
            byte[] bytes = new byte[random.nextInt(random.nextBoolean() ? 24 : 400)];
            random.nextBytes(bytes);
            int length = random.nextInt(8) == 0 ? random.nextInt(512) : bytes.length;
            chunk.write(length < 0x80 ? length : length & 0x7f | 0x80);
            if (length >= 0x80) {
                chunk.write(length >>> 7);
            }
            chunk.writeBytes(bytes);
        }
        return chunk.toByteArray();
    }

    /** Four well-formed packets, each naming the round it was written in. */
    private static byte[] bystanderChunk(int round) {
        ByteArrayOutputStream chunk = new ByteArrayOutputStream();
        for (int f = 0; f < 4; f++) {
            byte[] packet = {0x08, (byte) round, 0x10, (byte) f, 0x7a, 0x40};
            chunk.write(packet.length + 0x40);
            chunk.writeBytes(packet);
            chunk.writeBytes(new byte[0x40]);
        }
        return chunk.toByteArray();
    }

    /** Every packet readable, as "producer:hex". */
    private static List<String> readBack(TraceBufferV2 buffer) {
        List<String> packets = new ArrayList<>();
        TracePacketView view = new TracePacketView();
        buffer.beginRead();
        while (buffer.readNextTracePacket(view)) {
            packets.add(view.producerId() + ":" + HexFormat.of().formatHex(view.toByteArray()));
        }
        return packets;
    }
}
