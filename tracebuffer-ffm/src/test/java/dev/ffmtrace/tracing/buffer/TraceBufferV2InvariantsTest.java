package dev.ffmtrace.tracing.buffer;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32;

import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.FLAG_COUNTED;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.FLAG_CHUNK_NEEDS_PATCHING;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.FLAG_FIRST_PACKET_CONTINUES_FROM_PREV_CHUNK;
import static dev.ffmtrace.tracing.buffer.TBChunkDescriptor.FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The buffer's invariants (stated in the module's README) over random operation
 * sequences: writers that fragment self-checking packets over chunks as a TraceWriter
 * does, chunks committed out of order, lost, scraped then committed, needing patches
 * that come late or never, committed again; reads of any length in between; small
 * buffers, so that overwrites are frequent. After every operation:
 * <ul>
 *   <li>every packet read is one a writer wrote, intact (its checksum and bytes match),
 *       so never stitched across a hole;</li>
 *   <li>per sequence, packets come in the order written, none twice, and a packet read
 *       after one or more packets of its sequence were lost carries a loss flag;</li>
 *   <li>bytes_written = bytes_read + bytes_overwritten + the bytes of the stored chunks
 *       not yet counted, and the same for chunks.</li>
 * </ul>
 * jqwik prints the seed and the shrunk operation list of a failing case.
 */
class TraceBufferV2InvariantsTest {
    private static final ClientIdentity IDENTITY = new ClientIdentity(1000, 42);
    private static final int[] BUFFER_SIZES = {4096, 8192, 16384, 65536};
    /** Packet bytes around the body: sequence number, writer id, CRC32. */
    private static final int PACKET_OVERHEAD = 4 + 1 + 4;

    @Property(tries = 2000)
    void invariantsHoldAfterEveryOperation(@ForAll @IntRange(min = 0, max = 15) int config,
                                           @ForAll @Size(min = 1, max = 250) List<@IntRange(min = 0) Integer> ops) {
        int size = BUFFER_SIZES[config & 3];
        OverwritePolicy policy = (config & 12) == 12 ? OverwritePolicy.DISCARD : OverwritePolicy.RING_BUFFER;
        int writerCount = 1 + (config >> 2 & 1) + (config >> 3 & 1);
        try (Arena arena = Arena.ofConfined()) {
            TraceBufferV2 buffer = new TraceBufferV2(arena.allocate(size, 16), policy);
            List<Writer> writers = new ArrayList<>();
            for (int w = 1; w <= writerCount; w++) {
                writers.add(new Writer(w, config));
            }
            Reader reader = new Reader(buffer, writers);
            for (int op : ops) {
                Writer writer = writers.get((op >>> 4) % writerCount);
                Random random = new Random(op);
                switch (op & 15) {
                    case 0, 1, 2, 3, 4, 5 -> writer.commitBatch(buffer, random);
                    case 6 -> writer.finishScrape(buffer, random);
                    case 7 -> writer.patch(buffer, random);
                    case 8 -> writer.recommitIdentical(buffer, random);
                    case 9 -> writer.resendLost(buffer, random);
                    default -> reader.read(1 + random.nextInt(random.nextBoolean() ? 4 : 1000));
                }
                assertBalanced(buffer);
            }
            for (Writer writer : writers) {
                writer.flushEverything(buffer);
                assertBalanced(buffer);
            }
            reader.read(Integer.MAX_VALUE);
            assertBalanced(buffer);
            assertEquals(0, buffer.stats().abiViolations(), "well-formed writers make no ABI violation");
        }
    }

    /** Written = read + overwritten + stored and not yet counted, in bytes and in chunks. */
    private static void assertBalanced(TraceBufferV2 buffer) {
        MemorySegment segment = buffer.segment();
        long storedBytes = 0;
        long storedChunks = 0;
        for (int offset = 0, outer; offset < buffer.usedSize(); offset += outer) {
            outer = TBChunkDescriptor.outerSize(TBChunkDescriptor.size(segment, offset));
            if (!TBChunkDescriptor.isPadding(segment, offset)
                    && (TBChunkDescriptor.flags(segment, offset) & FLAG_COUNTED) == 0) {
                storedBytes += outer;
                storedChunks++;
            }
        }
        TraceBufferStats stats = buffer.stats();
        String detail = "stored and uncounted: " + storedChunks + " chunks, " + storedBytes + " bytes; " + stats;
        assertEquals(stats.bytesWritten(), stats.bytesRead() + stats.bytesOverwritten() + storedBytes, detail);
        assertEquals(stats.chunksWritten(), stats.chunksRead() + stats.chunksOverwritten() + storedChunks, detail);
    }

    /** Reads packets and checks each against what its writer wrote and what was read before. */
    private static final class Reader {
        private final TraceBufferV2 buffer;
        private final List<Writer> writers;
        private final TracePacketView view = new TracePacketView();

        Reader(TraceBufferV2 buffer, List<Writer> writers) {
            this.buffer = buffer;
            this.writers = writers;
        }

        void read(int max) {
            buffer.beginRead();
            for (int n = 0; n < max && buffer.readNextTracePacket(view); n++) {
                assertEquals(1, view.producerId());
                assertTrue(view.writerId() >= 1 && view.writerId() <= writers.size(), "writer " + view.writerId());
                writers.get(view.writerId() - 1).check(view.toByteArray(), view.previousPacketDropped());
            }
        }
    }

    private enum State { NOT_SENT, LOST, SCRAPED, COMMITTED }

    private static final class Chunk {
        final int id;
        final int flags;
        final byte[] bytes;
        final int numFragments;
        final int capacity;
        /** Offset of the 4 payload bytes that only a patch brings; -1 if none. */
        final int patchOffset;
        boolean patchPending;
        State state = State.NOT_SENT;

        Chunk(int id, int flags, byte[] bytes, int numFragments, int capacity, int patchOffset) {
            this.id = id;
            this.flags = flags;
            this.bytes = bytes;
            this.numFragments = numFragments;
            this.capacity = capacity;
            this.patchOffset = patchOffset;
            this.patchPending = patchOffset >= 0;
        }

        /** The payload as committed: the patch's bytes zero until the patch is sent. */
        byte[] committedBytes() {
            byte[] copy = bytes.clone();
            if (patchPending) {
                Arrays.fill(copy, patchOffset, patchOffset + 4, (byte) 0);
            }
            return copy;
        }
    }

    /** A TraceWriter's sequence: packets fragmented over chunks, and what was sent of them. */
    private static final class Writer {
        final int writerId;
        final Random content;
        final List<byte[]> packets = new ArrayList<>();
        final List<Chunk> chunks = new ArrayList<>();
        int nextToSend;
        /** The packet being fragmented, and how much of it is already in chunks. */
        byte[] current;
        int currentOffset;
        /** The sequence number the reader may see next without a loss. */
        int expectedNext;

        Writer(int writerId, int config) {
            this.writerId = writerId;
            this.content = new Random(writerId * 1_000_003L + config);
        }

        void check(byte[] packet, boolean lossFlagged) {
            assertTrue(packet.length >= PACKET_OVERHEAD, () -> "short packet: " + packet.length + " bytes");
            ByteBuffer bytes = ByteBuffer.wrap(packet).order(ByteOrder.LITTLE_ENDIAN);
            int seq = bytes.getInt(0);
            assertEquals(writerId, packet[4], "writer id inside the packet");
            assertEquals(crc(packet, packet.length - 4), bytes.getInt(packet.length - 4),
                    () -> "checksum of packet " + seq + " of writer " + writerId);
            assertTrue(seq >= 0 && seq < packets.size(), () -> "packet " + seq + " was never written");
            assertArrayEquals(packets.get(seq), packet);
            assertTrue(seq >= expectedNext, () -> "writer " + writerId + ": packet " + seq
                    + " read again or out of order, expected " + expectedNext + " or later");
            if (seq > expectedNext && !lossFlagged) {
                fail("writer " + writerId + ": packets " + expectedNext + ".." + (seq - 1)
                        + " lost, yet packet " + seq + " carries no loss flag");
            }
            expectedNext = seq + 1;
        }

        private byte[] newPacket() {
            int body = content.nextInt(8) == 0 ? content.nextInt(1500) : content.nextInt(120);
            byte[] packet = new byte[body + PACKET_OVERHEAD];
            content.nextBytes(packet);
            ByteBuffer bytes = ByteBuffer.wrap(packet).order(ByteOrder.LITTLE_ENDIAN);
            bytes.putInt(0, packets.size());
            packet[4] = (byte) writerId;
            bytes.putInt(packet.length - 4, crc(packet, packet.length - 4));
            packets.add(packet);
            return packet;
        }

        /** Fills the next chunk as a TraceWriter does: whole packets, a fragment continuing on the next. */
        private Chunk buildChunk() {
            int capacity = 32 + content.nextInt(content.nextBoolean() ? 200 : 1200);
            ByteArrayOutputStream payload = new ByteArrayOutputStream();
            int flags = current != null && currentOffset > 0 ? FLAG_FIRST_PACKET_CONTINUES_FROM_PREV_CHUNK : 0;
            int fragments = 0;
            int lastStart = 0;
            int lastLength = 0;
            for (;;) {
                int room = capacity - payload.size() - 2;
                if (room < 1) {
                    break;
                }
                if (current == null) {
                    current = newPacket();
                    currentOffset = 0;
                }
                int length = Math.min(current.length - currentOffset, room);
                // A two-byte redundant varint, like the reserved size fields of a TraceWriter.
                payload.write(length & 0x7F | 0x80);
                payload.write(length >>> 7);
                lastStart = payload.size();
                lastLength = length;
                payload.write(current, currentOffset, length);
                fragments++;
                currentOffset += length;
                if (currentOffset < current.length) {
                    break;
                }
                current = null;
                if (content.nextInt(4) == 0) {
                    break;
                }
            }
            int patchOffset = -1;
            if (current != null && currentOffset > 0) {
                flags |= FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK;
                if (lastLength >= 4 && content.nextInt(3) == 0) {
                    flags |= FLAG_CHUNK_NEEDS_PATCHING;
                    patchOffset = lastStart + content.nextInt(lastLength - 3);
                }
            }
            return new Chunk(chunks.size(), flags, payload.toByteArray(), fragments, capacity, patchOffset);
        }

        void commitBatch(TraceBufferV2 buffer, Random random) {
            List<Chunk> batch = new ArrayList<>();
            for (int n = 1 + random.nextInt(3); n > 0; n--) {
                if (nextToSend == chunks.size()) {
                    chunks.add(buildChunk());
                }
                batch.add(chunks.get(nextToSend++));
            }
            if (random.nextInt(3) == 0) {
                Collections.shuffle(batch, random);
            }
            for (Chunk chunk : batch) {
                if (chunk.id > 0 && random.nextInt(15) == 0) {
                    chunk.state = State.LOST;
                } else if (chunk.patchOffset < 0 && random.nextInt(6) == 0) {
                    chunk.state = State.SCRAPED;
                    copyScraped(buffer, chunk, random);
                } else {
                    chunk.state = State.COMMITTED;
                    copy(buffer, chunk, chunk.committedBytes(), chunk.numFragments, true);
                }
            }
        }

        /** The chunk as the service finds it while its writer is still in it: a prefix, the rest zero. */
        private void copyScraped(TraceBufferV2 buffer, Chunk chunk, Random random) {
            int written = random.nextInt(chunk.bytes.length + 1);
            byte[] scraped = Arrays.copyOf(Arrays.copyOf(chunk.bytes, written), chunk.capacity);
            int fragments = 0;
            for (int at = 0; at < written; fragments++) {
                at += 2 + ((chunk.bytes[at] & 0x7F) | (chunk.bytes[at + 1] & 0xFF) << 7);
            }
            int flags = chunk.flags & ~(FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK | FLAG_CHUNK_NEEDS_PATCHING);
            copy(buffer, chunk, scraped, fragments, false, flags);
        }

        void finishScrape(TraceBufferV2 buffer, Random random) {
            commitOne(buffer, random, State.SCRAPED);
        }

        /** Commits one chunk in {@code state}, if any: the final commit of a scraped one, or a lost one sent late. */
        private void commitOne(TraceBufferV2 buffer, Random random, State state) {
            List<Chunk> candidates = chunks.stream().filter(c -> c.state == state).toList();
            if (!candidates.isEmpty()) {
                Chunk chunk = candidates.get(random.nextInt(candidates.size()));
                chunk.state = State.COMMITTED;
                copy(buffer, chunk, chunk.committedBytes(), chunk.numFragments, true);
            }
        }

        void patch(TraceBufferV2 buffer, Random random) {
            List<Chunk> pending = chunks.stream().filter(c -> c.state == State.COMMITTED && c.patchPending).toList();
            if (pending.isEmpty()) {
                return;
            }
            Chunk chunk = pending.get(random.nextInt(pending.size()));
            if (random.nextInt(8) != 0) {
                sendPatch(buffer, chunk);
            } else {
                chunk.patchPending = false;
            }
        }

        /** Sends the chunk's patch; false when the chunk is gone already (reading it unpatched would break a checksum). */
        private void sendPatch(TraceBufferV2 buffer, Chunk chunk) {
            int at = chunk.patchOffset;
            chunk.patchPending = false;
            buffer.tryPatchChunkContents(1, writerId, chunk.id, new ChunkPatches()
                    .add(at, chunk.bytes[at], chunk.bytes[at + 1], chunk.bytes[at + 2], chunk.bytes[at + 3]), false);
        }

        void recommitIdentical(TraceBufferV2 buffer, Random random) {
            if (nextToSend == 0) {
                return;
            }
            Chunk chunk = chunks.get(random.nextInt(nextToSend));
            if (chunk.state == State.COMMITTED) {
                copy(buffer, chunk, chunk.committedBytes(), chunk.numFragments, true);
            }
        }

        void resendLost(TraceBufferV2 buffer, Random random) {
            commitOne(buffer, random, State.LOST);
        }

        /** Commits every scraped chunk and sends every pending patch, as a final flush would. */
        void flushEverything(TraceBufferV2 buffer) {
            Random random = new Random(writerId);
            while (chunks.stream().anyMatch(c -> c.state == State.SCRAPED)) {
                finishScrape(buffer, random);
            }
            for (Chunk chunk : chunks) {
                if (chunk.state == State.COMMITTED && chunk.patchPending) {
                    sendPatch(buffer, chunk);
                }
            }
        }

        private void copy(TraceBufferV2 buffer, Chunk chunk, byte[] payload, int fragments, boolean complete) {
            copy(buffer, chunk, payload, fragments, complete, chunk.flags);
        }

        private void copy(TraceBufferV2 buffer, Chunk chunk, byte[] payload, int fragments, boolean complete,
                          int flags) {
            buffer.copyChunkUntrusted(new ChunkCommit().producer(1, IDENTITY).writerId(writerId).chunkId(chunk.id)
                    .numFragments(fragments).flags(flags).complete(complete), MemorySegment.ofArray(payload),
                    payload.length);
        }
    }

    private static int crc(byte[] bytes, int length) {
        CRC32 crc = new CRC32();
        crc.update(bytes, 0, length);
        return (int) crc.getValue();
    }
}
