package dev.ffmtrace.tracing.buffer;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.stream.LongStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Random commits (in order, out of order within a batch, lost, scraped then completed,
 * needing a later patch, re-committed identically) and reads, checked against a
 * reference model that knows only the packets each writer wrote and which chunks
 * reached the buffer: a packet is readable when all its chunks are there (and patched
 * and complete), lost when one of them is missing while a later chunk is there, and
 * otherwise it, and everything after it on its sequence, waits. Per sequence, the
 * packets read and whether a loss preceded each must match.
 */
class TraceBufferV2ModelTest {
    private static final int FIRST = TBChunkDescriptor.FLAG_FIRST_PACKET_CONTINUES_FROM_PREV_CHUNK;
    private static final int LAST = TBChunkDescriptor.FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK;
    private static final int NEEDS_PATCHING = TBChunkDescriptor.FLAG_CHUNK_NEEDS_PATCHING;
    private static final ClientIdentity IDENTITY = new ClientIdentity(1, 2);

    static LongStream seeds() {
        return LongStream.rangeClosed(1, 60);
    }

    @ParameterizedTest
    @MethodSource("seeds")
    void buffersAgreeWithTheModel(long seed) {
        Random random = new Random(seed);
        try (Arena arena = Arena.ofConfined()) {
            TraceBufferV2 buffer = new TraceBufferV2(arena.allocate(1 << 20, 16), OverwritePolicy.RING_BUFFER);
            int writers = 1 + random.nextInt(6);
            List<Writer> all = new ArrayList<>();
            for (int w = 0; w < writers; w++) {
                all.add(new Writer(w + 1, random));
            }
            TracePacketView view = new TracePacketView();
            for (int step = 0; step < 300; step++) {
                int action = random.nextInt(10);
                Writer writer = all.get(random.nextInt(writers));
                if (action < 5) {
                    writer.commitBatch(buffer, random);
                } else if (action < 6) {
                    writer.finishScrape(buffer, random);
                } else if (action < 7) {
                    writer.applyPatch(buffer, random);
                } else if (action < 8) {
                    writer.recommitIdentical(buffer, random);
                } else {
                    readAndCheck(buffer, all, view);
                }
            }
            for (Writer writer : all) {
                boolean more = true;
                while (more) {
                    more = writer.finishScrape(buffer, random) | writer.applyPatch(buffer, random);
                }
            }
            readAndCheck(buffer, all, view);
            assertEquals(0, buffer.stats().abiViolations());
        }
    }

    private static void readAndCheck(TraceBufferV2 buffer, List<Writer> writers, TracePacketView view) {
        List<ArrayDeque<Expected>> expected = new ArrayList<>();
        for (Writer w : writers) {
            expected.add(new ArrayDeque<>(w.resolve()));
        }
        buffer.beginRead();
        while (buffer.readNextTracePacket(view)) {
            assertEquals(1, view.producerId());
            ArrayDeque<Expected> queue = expected.get(view.writerId() - 1);
            Expected next = queue.poll();
            assertNotNull(next, "unexpected packet on writer " + view.writerId());
            Writer writer = writers.get(view.writerId() - 1);
            byte[] got = view.toByteArray();
            assertArrayEquals(next.bytes, got, () -> "got packet " + writer.indexOf(got) + writer.describe(next));
            assertEquals(next.afterLoss, view.previousPacketDropped(),
                    () -> "loss reasons " + view.previousPacketDroppedReasons() + writer.describe(next));
        }
        for (int w = 0; w < expected.size(); w++) {
            assertTrue(expected.get(w).isEmpty(), "writer " + (w + 1) + " still expects " + expected.get(w).size());
        }
    }

    private record Expected(byte[] bytes, boolean afterLoss) {
    }

    private enum ChunkState { NOT_SENT, LOST, INCOMPLETE, COMPLETE }

    /** One chunk as the writer built it, and what the buffer was told about it. */
    private static final class Chunk {
        final int id;
        final int flags;
        final byte[] bytes;
        final int numFragments;
        /** Offset of the 4 bytes held back for a patch; -1 if none. */
        final int patchOffset;
        final byte[] scrapedBytes;
        ChunkState state = ChunkState.NOT_SENT;
        /** What each copy of the chunk did, for failure messages. */
        final StringBuilder history = new StringBuilder();
        boolean patchPending;

        Chunk(int id, int flags, byte[] bytes, int numFragments, int patchOffset, int size) {
            this.id = id;
            this.flags = flags;
            this.bytes = bytes;
            this.numFragments = numFragments;
            this.patchOffset = patchOffset;
            this.scrapedBytes = Arrays.copyOf(bytes, size);
        }

        byte[] committedBytes() {
            byte[] copy = bytes.clone();
            if (patchPending) {
                Arrays.fill(copy, patchOffset, patchOffset + 4, (byte) 0);
            }
            return copy;
        }
    }

    /** A packet and the chunks its fragments live in. */
    private record Packet(byte[] bytes, int firstChunk, int lastChunk) {
    }

    private static final class Writer {
        final int writerId;
        final List<Packet> packets = new ArrayList<>();
        final List<Chunk> chunks = new ArrayList<>();
        int nextToSend;
        int nextPacket;
        boolean pendingLoss;
        final List<Chunk> scraped = new ArrayList<>();
        final List<Chunk> unpatched = new ArrayList<>();

        Writer(int writerId, Random random) {
            this.writerId = writerId;
            build(random);
        }

        /** Writes 60..200 packets the way a TraceWriter fragments them over chunks. */
        private void build(Random random) {
            int count = 60 + random.nextInt(140);
            List<byte[]> bodies = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                byte[] body = new byte[1 + random.nextInt(random.nextInt(8) == 0 ? 900 : 120)];
                random.nextBytes(body);
                bodies.add(body);
            }
            ByteArrayOutputStream chunk = new ByteArrayOutputStream();
            int capacity = 0;
            int flags = 0;
            int fragments = 0;
            int lastFragmentStart = 0;
            int lastFragmentSize = 0;
            int packetIndex = 0;
            int packetOffset = 0;
            int packetFirstChunk = 0;
            for (;;) {
                if (capacity == 0) {
                    chunk.reset();
                    capacity = 64 + random.nextInt(600);
                    fragments = 0;
                }
                byte[] body = bodies.get(packetIndex);
                int room = capacity - chunk.size() - 2;
                int length = Math.min(body.length - packetOffset, room);
                if (packetOffset == 0) {
                    packetFirstChunk = chunks.size();
                }
                chunk.write(length & 0x7F | 0x80);
                chunk.write(length >>> 7);
                lastFragmentStart = chunk.size();
                lastFragmentSize = length;
                chunk.write(body, packetOffset, length);
                fragments++;
                packetOffset += length;
                boolean packetDone = packetOffset == body.length;
                if (packetDone) {
                    packets.add(new Packet(body, packetFirstChunk, chunks.size()));
                    packetIndex++;
                    packetOffset = 0;
                }
                boolean lastPacket = packetIndex == bodies.size();
                if (!packetDone || lastPacket || capacity - chunk.size() < 3) {
                    int chunkFlags = flags | (packetDone ? 0 : LAST);
                    int patchOffset = -1;
                    if (!packetDone && lastFragmentSize >= 4 && random.nextInt(4) == 0) {
                        chunkFlags |= NEEDS_PATCHING;
                        patchOffset = lastFragmentStart;
                    }
                    Chunk c = new Chunk(chunks.size(), chunkFlags, chunk.toByteArray(), fragments, patchOffset,
                            capacity);
                    c.patchPending = patchOffset >= 0;
                    chunks.add(c);
                    flags = packetDone ? 0 : FIRST;
                    capacity = 0;
                    if (lastPacket) {
                        return;
                    }
                }
            }
        }

        void commitBatch(TraceBufferV2 buffer, Random random) {
            int n = Math.min(1 + random.nextInt(4), chunks.size() - nextToSend);
            List<Chunk> batch = new ArrayList<>(chunks.subList(nextToSend, nextToSend + n));
            nextToSend += n;
            Collections.shuffle(batch, random);
            for (Chunk c : batch) {
                if (c.id > 0 && random.nextInt(12) == 0) {
                    c.state = ChunkState.LOST;
                } else if (c.patchOffset < 0 && random.nextInt(6) == 0) {
                    c.state = ChunkState.INCOMPLETE;
                    copy(buffer, c, c.scrapedBytes, false);
                    scraped.add(c);
                } else {
                    c.state = ChunkState.COMPLETE;
                    copy(buffer, c, c.committedBytes(), true);
                    if (c.patchPending) {
                        unpatched.add(c);
                    }
                }
            }
        }

        boolean finishScrape(TraceBufferV2 buffer, Random random) {
            if (scraped.isEmpty()) {
                return false;
            }
            Chunk c = scraped.remove(random.nextInt(scraped.size()));
            c.state = ChunkState.COMPLETE;
            copy(buffer, c, c.bytes, true);
            return true;
        }

        boolean applyPatch(TraceBufferV2 buffer, Random random) {
            if (unpatched.isEmpty()) {
                return false;
            }
            Chunk c = unpatched.remove(random.nextInt(unpatched.size()));
            int data = (c.bytes[c.patchOffset] & 0xFF) | (c.bytes[c.patchOffset + 1] & 0xFF) << 8
                    | (c.bytes[c.patchOffset + 2] & 0xFF) << 16 | (c.bytes[c.patchOffset + 3] & 0xFF) << 24;
            // False once the chunk was consumed by a loss; a wrong failure shows as zeros read back.
            buffer.tryPatchChunkContents(1, writerId, c.id, new ChunkPatches().addLittleEndian(c.patchOffset, data),
                    false);
            c.patchPending = false;
            return true;
        }

        void recommitIdentical(TraceBufferV2 buffer, Random random) {
            if (nextToSend == 0) {
                return;
            }
            Chunk c = chunks.get(random.nextInt(nextToSend));
            if (c.state == ChunkState.COMPLETE) {
                copy(buffer, c, c.committedBytes(), true);
            } else if (c.state == ChunkState.INCOMPLETE) {
                copy(buffer, c, c.scrapedBytes, false);
            }
        }

        private void copy(TraceBufferV2 buffer, Chunk c, byte[] bytes, boolean complete) {
            int flags = complete ? c.flags : c.flags & ~NEEDS_PATCHING;
            TraceBufferStats before = buffer.stats();
            buffer.copyChunkUntrusted(new ChunkCommit().producer(1, IDENTITY).writerId(writerId).chunkId(c.id)
                    .numFragments(c.numFragments).flags(flags).complete(complete), MemorySegment.ofArray(bytes),
                    bytes.length);
            TraceBufferStats after = buffer.stats();
            c.history.append(complete ? " complete" : " scraped")
                    .append(after.chunksWritten() > before.chunksWritten() ? "+written" : "")
                    .append(after.chunksRelocated() > before.chunksRelocated() ? "+relocated" : "")
                    .append(after.chunksRewritten() > before.chunksRewritten() ? "+rewritten" : "")
                    .append(after.chunksDiscarded() > before.chunksDiscarded() ? "+discarded" : "");
        }

        /** Advances the model over everything the buffer can now resolve; returns the packets it must deliver. */
        List<Expected> resolve() {
            int maxSent = -1;
            for (int i = 0; i < nextToSend; i++) {
                if (chunks.get(i).state != ChunkState.LOST) {
                    maxSent = i;
                }
            }
            int firstIncomplete = Integer.MAX_VALUE;
            for (int i = 0; i < nextToSend; i++) {
                if (chunks.get(i).state == ChunkState.INCOMPLETE) {
                    firstIncomplete = i;
                    break;
                }
            }
            List<Expected> out = new ArrayList<>();
            for (; nextPacket < packets.size(); nextPacket++) {
                Packet p = packets.get(nextPacket);
                // A scraped chunk stalls its sequence: nothing after it is read.
                if (p.firstChunk > firstIncomplete) {
                    return out;
                }
                // The first problem in chunk order decides: missing (lost if a later
                // chunk is there, else not sent yet), hidden by a scrape, or unpatched.
                for (int id = p.firstChunk; id <= p.lastChunk; id++) {
                    Chunk c = chunks.get(id);
                    if (c.state == ChunkState.LOST || c.state == ChunkState.NOT_SENT) {
                        if (id < maxSent) {
                            pendingLoss = true;
                            break;
                        }
                        return out;
                    }
                    boolean hidden = c.state == ChunkState.INCOMPLETE && (id < p.lastChunk || isLastFragmentOf(c, p));
                    if (hidden || (p.firstChunk != p.lastChunk && c.patchPending)) {
                        return out;
                    }
                    if (id == p.lastChunk) {
                        out.add(new Expected(p.bytes, pendingLoss));
                        pendingLoss = false;
                    }
                }
            }
            return out;
        }

        int indexOf(byte[] bytes) {
            for (int i = 0; i < packets.size(); i++) {
                if (Arrays.equals(packets.get(i).bytes, bytes)) {
                    return i;
                }
            }
            return -1;
        }

        /** The writer's chunks and the packets around {@code expected}, for failure messages. */
        String describe(Expected expected) {
            int index = indexOf(expected.bytes);
            StringBuilder sb = new StringBuilder(" instead of packet ").append(index).append(" of writer ")
                    .append(writerId).append('\n');
            for (int i = Math.max(0, index - 3); i <= Math.min(packets.size() - 1, index + 1); i++) {
                Packet p = packets.get(i);
                sb.append(" packet ").append(i).append(": chunks ").append(p.firstChunk).append("..")
                        .append(p.lastChunk).append('\n');
            }
            for (int i = 0; i < nextToSend; i++) {
                Chunk c = chunks.get(i);
                sb.append(" chunk ").append(i).append(' ').append(c.state).append(" flags ").append(c.flags)
                        .append(c.patchPending ? " patch pending" : "").append(" copies:").append(c.history)
                        .append('\n');
            }
            return sb.toString();
        }

        /** Whether the packet's fragment in {@code c} is the chunk's last one (hidden while scraped). */
        private boolean isLastFragmentOf(Chunk c, Packet p) {
            int next = packets.indexOf(p) + 1;
            return next == packets.size() || packets.get(next).firstChunk != c.id;
        }
    }
}
