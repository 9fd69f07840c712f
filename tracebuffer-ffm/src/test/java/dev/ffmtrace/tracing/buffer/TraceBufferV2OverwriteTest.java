package dev.ffmtrace.tracing.buffer;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Overwrites take a shortcut for chunks that hold only whole packets when nobody
 * listens; with a listener every chunk goes through the full erase walk. Fed the same
 * random, wrapping workload (fragments, out-of-order ids, gaps, scrapes, patches), both
 * must read the same packets with the same loss reasons and end with the same stats.
 */
class TraceBufferV2OverwriteTest {
    private static final ClientIdentity IDENTITY = new ClientIdentity(3, 4);

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
    void overwriteShortcutAgreesWithTheEraseWalk(long seed) {
        try (Arena arena = Arena.ofConfined()) {
            int size = 4096 * (1 + (int) (seed % 4));
            TraceBufferV2 shortcut = new TraceBufferV2(arena.allocate(size, 16), OverwritePolicy.RING_BUFFER);
            List<String> overwritten = new ArrayList<>();
            TraceBufferV2 walked = new TraceBufferV2(arena.allocate(size, 16), OverwritePolicy.RING_BUFFER,
                    packet -> overwritten.add(packet.producerId() + "/" + packet.writerId() + ":" + packet.size()));
            List<String> fromShortcut = new ArrayList<>();
            List<String> fromWalk = new ArrayList<>();
            Random random = new Random(seed);
            int[] nextIds = new int[4];
            boolean[] midPacket = new boolean[4];
            for (int op = 0; op < 3000; op++) {
                int writer = 1 + random.nextInt(3);
                int choice = random.nextInt(10);
                if (choice < 7) {
                    int flags = midPacket[writer] ? TBChunkDescriptor.FLAG_FIRST_PACKET_CONTINUES_FROM_PREV_CHUNK : 0;
                    midPacket[writer] = random.nextInt(3) == 0;
                    if (midPacket[writer]) {
                        flags |= TBChunkDescriptor.FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK;
                        if (random.nextInt(3) == 0) {
                            flags |= TBChunkDescriptor.FLAG_CHUNK_NEEDS_PATCHING;
                        }
                    }
                    int fragments = random.nextInt(6);
                    ByteArrayOutputStream payload = new ByteArrayOutputStream();
                    for (int f = 0; f < fragments; f++) {
                        int length = random.nextInt(8) == 0 ? 0 : 1 + random.nextInt(400);
                        payload.write(length & 0x7F | 0x80);
                        payload.write(length >>> 7);
                        for (int i = 0; i < length; i++) {
                            payload.write(op + i);
                        }
                    }
                    byte[] bytes = payload.toByteArray();
                    int id = nextIds[writer]++;
                    if (random.nextInt(15) == 0) {
                        id = nextIds[writer]++;
                    }
                    boolean complete = random.nextInt(8) != 0;
                    for (TraceBufferV2 buffer : List.of(shortcut, walked)) {
                        buffer.copyChunkUntrusted(new ChunkCommit().producer(1, IDENTITY).writerId(writer).chunkId(id)
                                .numFragments(fragments).flags(flags).complete(complete),
                                MemorySegment.ofArray(bytes), bytes.length);
                    }
                } else if (choice < 8) {
                    int id = Math.max(0, nextIds[writer] - 1 - random.nextInt(3));
                    ChunkPatches patches = new ChunkPatches().addLittleEndian(random.nextInt(8), random.nextInt());
                    boolean pending = random.nextBoolean();
                    for (TraceBufferV2 buffer : List.of(shortcut, walked)) {
                        buffer.tryPatchChunkContents(1, writer, id, patches, pending);
                    }
                } else {
                    int limit = random.nextInt(30);
                    readSome(shortcut, limit, fromShortcut);
                    readSome(walked, limit, fromWalk);
                }
            }
            readSome(shortcut, Integer.MAX_VALUE, fromShortcut);
            readSome(walked, Integer.MAX_VALUE, fromWalk);
            for (int i = 0; i < Math.min(fromWalk.size(), fromShortcut.size()); i++) {
                int at = i;
                assertEquals(fromWalk.get(i), fromShortcut.get(i), () -> "packet " + at);
            }
            assertEquals(fromWalk.size(), fromShortcut.size());
            assertEquals(walked.stats(), shortcut.stats());
            assertEquals(true, walked.stats().chunksOverwritten() > 0);
            assertEquals(true, !overwritten.isEmpty());
        }
    }

    private static void readSome(TraceBufferV2 buffer, int limit, List<String> out) {
        TracePacketView view = new TracePacketView();
        buffer.beginRead();
        for (int i = 0; i < limit && buffer.readNextTracePacket(view); i++) {
            out.add(view.writerId() + ":" + Arrays.hashCode(view.toByteArray()) + ":"
                    + view.previousPacketDroppedReasons());
        }
    }

    /**
     * A packet begins in chunk 0 and continues in chunk 1; its end has not arrived when
     * chunk 0 is overwritten. The erase walk consumes chunk 1's continuation too, and
     * counts chunk 1 overwritten, rather than leaving it to be read later as an orphan
     * (the C++ does the same).
     */
    @Test
    void eraseWalkConsumesTheContinuationsOfAPacketWhoseEndIsMissing() {
        List<String> out = BufferScript.run(List.of(
                "# Buffer: 4096 overwrite",
                "copy 1 1 0 2 1 1 ee07+30*1006",
                "copy 1 1 1 3 1 1 ee07+31*1006",
                "copy 2 1 0 0 1 1 ee07+40*1006",
                "copy 2 1 1 0 1 1 ee07+41*1006",
                "copy 2 1 2 0 1 1 03424242",
                "readv",
                "stats"));
        assertTrue(out.containsAll(List.of("bytes_overwritten 2048", "chunks_overwritten 2", "bytes_read 2080",
                "chunks_read 3", "readaheads_failed 1")), () -> String.join("\n", out));
        assertEquals(List.of("pkt 2 1 0", "pkt 2 1 0", "pkt 2 1 0"),
                out.stream().filter(line -> line.startsWith("pkt")).map(line -> line.substring(0, 9)).toList());
    }
}
