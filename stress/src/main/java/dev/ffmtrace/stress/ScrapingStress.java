package dev.ffmtrace.stress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.protozero.MessageFactory;
import dev.ffmtrace.stress.SharedMemoryAbiStress.RawPacket;
import dev.ffmtrace.tracing.buffer.ChunkCommit;
import dev.ffmtrace.tracing.buffer.ClientIdentity;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.buffer.TraceBufferV2;
import dev.ffmtrace.tracing.buffer.TracePacketView;
import dev.ffmtrace.tracing.service.reader.SharedMemoryReader;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.CommitTransport;
import dev.ffmtrace.tracing.smb.SharedMemoryArbiter;
import dev.ffmtrace.tracing.smb.TraceWriter;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbi;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Arrays;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * The service's flush-time paths against a TraceWriter in another thread, through the
 * real classes: {@link SharedMemoryReader#scrapeChunksBeingWritten} while the writer
 * continues a packet into its next chunk or back-fills a nested size, a scrape followed
 * by the commit of the same chunk into one TraceBufferV2, and the arbiter's idle-chunk
 * reclaim against the writer's own flush. Each state is a one-page SMB in native memory,
 * shared by a writer (writer id 1) and the service's reader.
 */
public final class ScrapingStress {
    private static final MessageFactory<RawPacket> RAW = MessageFactory.of(RawPacket::new);

    private ScrapingStress() {
    }

    static MemorySegment newSmbMemory() {
        return Arena.ofAuto().allocate(4096, 4096);
    }

    static SharedMemoryArbiter newArbiter(MemorySegment smb, int chunksPerPage, CommitTransport transport) {
        return new SharedMemoryArbiter(smb, 4096, chunksPerPage, transport, Duration.ofSeconds(1));
    }

    /**
     * A sink that keeps what a scrape handed it: the chunk id, its packets word and the
     * int found at each of {@code probes} (offsets in the payload), read once, as a
     * service that copies the chunk would.
     */
    static final class ScrapeProbe implements SharedMemoryReader.ChunkSink {
        final long[] probes;
        final int[] seen;
        int chunkId = -1;
        int packets;

        ScrapeProbe(long... probes) {
            this.probes = probes;
            this.seen = new int[probes.length];
        }

        @Override
        public void accept(int writerId, int chunkId, int packets, boolean complete,
                           MemorySegment smb, long payloadOffset, int payloadSize) {
            this.chunkId = chunkId;
            this.packets = packets;
            for (int i = 0; i < probes.length; i++) {
                seen[i] = smb.get(Layouts.INT_UNALIGNED, payloadOffset + probes[i]);
            }
        }

        /** 1 if the int scraped at probe {@code i} is what the payload at {@code payload} holds now. */
        int sameAsNow(int i, MemorySegment smb, long payload) {
            return seen[i] == smb.get(Layouts.INT_UNALIGNED, payload + probes[i]) ? 1 : 0;
        }
    }

    @JCStressTest
    @Description("Invariant: the writer's packet 2 runs off its chunk 0 (4 per page) into chunk 1: it writes the "
            + "fragment's size into packet 2's size field, then sets 'last packet continues' with a release store, "
            + "then returns chunk 0 as complete. A scrape that sees the flag sees the final size field, and a scrape "
            + "never hands over chunk 1 while chunk 0 is still in the SMB (r1 = chunk id scraped or -1, r2 = flag "
            + "seen, r3 = size field scraped is the final one).")
    @Outcome(id = "-1, 0, 0", expect = ACCEPTABLE, desc = "chunk 0 already complete: nothing being written is the oldest")
    @Outcome(id = {"0, 0, 0", "0, 0, 1"}, expect = ACCEPTABLE, desc = "scraped before the flag")
    @Outcome(id = "0, 1, 1", expect = ACCEPTABLE, desc = "scraped with the flag and the final size")
    @Outcome(id = "0, 1, 0", expect = FORBIDDEN, desc = "the flag seen before the size field it follows")
    @Outcome(expect = FORBIDDEN, desc = "anything else: chunk 1 scraped ahead of chunk 0")
    @State
    public static class ScrapeDuringContinuation {
        /** Packet 1 is a 4-byte size field and 3 bytes of body; packet 2's size field follows. */
        static final int SECOND_SIZE_FIELD = SharedMemoryAbiDescriptor.PACKET_HEADER_SIZE + 3;
        static final byte[] FIRST = {1};
        final MemorySegment smb = newSmbMemory();
        final SharedMemoryArbiter arbiter = newArbiter(smb, 4, request -> { });
        final SharedMemoryReader reader = new SharedMemoryReader(new SharedMemoryAbi(smb, 4096));
        final TraceWriter<RawPacket> writer = arbiter.createTraceWriter(0, BufferExhaustedPolicy.DROP, new RawPacket());
        final ScrapeProbe probe = new ScrapeProbe(SECOND_SIZE_FIELD);
        final long payload = reader.abi().chunkOffset(0, 0, SharedMemoryAbiDescriptor.LAYOUT_DIV4)
                + SharedMemoryAbiDescriptor.CHUNK_HEADER_SIZE;
        final RawPacket second;
        /** Overflows chunk 0 from where the constructor leaves packet 2 (a few bytes short of its end). */
        final byte[] overflow = new byte[64];

        public ScrapeDuringContinuation() {
            writer.newTracePacket().bytes(FIRST);
            writer.finishTracePacket();
            int room = reader.abi().chunkSize(SharedMemoryAbiDescriptor.LAYOUT_DIV4)
                    - SharedMemoryAbiDescriptor.CHUNK_HEADER_SIZE - SECOND_SIZE_FIELD
                    - SharedMemoryAbiDescriptor.PACKET_HEADER_SIZE;
            second = writer.newTracePacket();
            second.bytes(new byte[room - 16]);
        }

        @Actor
        public void writer() {
            second.bytes(overflow);
            writer.finishTracePacket();
        }

        @Actor
        public void service() {
            reader.scrapeChunksBeingWritten(probe);
        }

        @Arbiter
        public void arbiter(III_Result r) {
            r.r1 = probe.chunkId;
            if (probe.chunkId >= 0) {
                r.r2 = (SharedMemoryAbiDescriptor.flagsOf(probe.packets)
                        & SharedMemoryAbiDescriptor.FLAG_LAST_PACKET_CONTINUES_ON_NEXT_CHUNK) != 0 ? 1 : 0;
                r.r3 = probe.sameAsNow(0, smb, payload);
            }
        }
    }

    @JCStressTest
    @Description("Invariant: packet 1 holds an open nested message; the writer starts packet 2, which finishes "
            + "packet 1 (back-filling the nested size, then packet 1's size) before counting packet 2 with a release "
            + "store. A scrape that counts packet 2 sees both of packet 1's sizes final; one that counts only packet 1 "
            + "may see anything, as the last packet of a scraped chunk is never read (r1 = packets counted, r2 = packet "
            + "1's size final, r3 = the nested size final).")
    @Outcome(id = {"1, 0, 0", "1, 0, 1", "1, 1, 0", "1, 1, 1"}, expect = ACCEPTABLE, desc = "packet 1 still open")
    @Outcome(id = "2, 1, 1", expect = ACCEPTABLE, desc = "packet 1 finished and both sizes in place")
    @Outcome(id = {"2, 0, 0", "2, 0, 1", "2, 1, 0"}, expect = FORBIDDEN, desc = "packet 2 counted before packet 1's sizes")
    @Outcome(expect = FORBIDDEN, desc = "anything else: the chunk being written not scraped")
    @State
    public static class ScrapeDuringNestedSizePatch {
        /** Packet 1: its size field, field 2's tag (1 byte), then the nested size field. */
        static final int NESTED_SIZE_FIELD = SharedMemoryAbiDescriptor.PACKET_HEADER_SIZE + 1;
        final MemorySegment smb = newSmbMemory();
        final SharedMemoryArbiter arbiter = newArbiter(smb, 1, request -> { });
        final SharedMemoryReader reader = new SharedMemoryReader(new SharedMemoryAbi(smb, 4096));
        final TraceWriter<RawPacket> writer = arbiter.createTraceWriter(0, BufferExhaustedPolicy.DROP, new RawPacket());
        final ScrapeProbe probe = new ScrapeProbe(0, NESTED_SIZE_FIELD);
        final long payload = reader.abi().chunkOffset(0, 0, SharedMemoryAbiDescriptor.LAYOUT_DIV1)
                + SharedMemoryAbiDescriptor.CHUNK_HEADER_SIZE;

        public ScrapeDuringNestedSizePatch() {
            writer.newTracePacket().beginNestedMessage(2, RAW).bytes(new byte[] {7, 7, 7, 7, 7, 7, 7, 7});
        }

        @Actor
        public void writer() {
            writer.newTracePacket();
        }

        @Actor
        public void service() {
            reader.scrapeChunksBeingWritten(probe);
        }

        @Arbiter
        public void arbiter(III_Result r) {
            r.r1 = probe.chunkId == 0 ? SharedMemoryAbiDescriptor.packetCountOf(probe.packets) : -1;
            r.r2 = probe.sameAsNow(0, smb, payload);
            r.r3 = probe.sameAsNow(1, smb, payload);
        }
    }

    @JCStressTest
    @Description("Invariant: the service scrapes the writer's chunk into a TraceBufferV2 and reads the buffer, while the "
            + "writer finishes packet 1 (open from the start), writes packet 2 and flushes, committing the chunk; the "
            + "service then moves the committed chunk into the same buffer (a recommit when it was scraped) and reads "
            + "again. Across both reads each packet comes out exactly once and intact, scraped or not (r1, r2 = times "
            + "packet 1, packet 2 were read, r3 = packets read that are neither, r4 = the chunk was scraped).")
    @Outcome(id = {"1, 1, 0, 0", "1, 1, 0, 1"}, expect = ACCEPTABLE, desc = "both packets once; scraped or not")
    @Outcome(expect = FORBIDDEN, desc = "anything else: a packet lost, duplicated by the recommit, or read torn")
    @State
    public static class RecommitAfterScrape {
        static final byte[] FIRST_BODY = {1, 1, 1, 1};
        static final byte[] SECOND_BODY = {2, 2, 2, 2, 2, 2};
        /** Each packet as read back: field 1 (tag 0x0a), its length, its bytes. */
        static final byte[] FIRST = {0x0a, 4, 1, 1, 1, 1};
        static final byte[] SECOND = {0x0a, 6, 2, 2, 2, 2, 2, 2};
        final MemorySegment smb = newSmbMemory();
        int committedPage = -1;
        int committedChunk = -1;
        final SharedMemoryArbiter arbiter = newArbiter(smb, 1, request -> {
            committedPage = request.movePage(0);
            committedChunk = request.moveChunk(0);
        });
        final SharedMemoryReader reader = new SharedMemoryReader(new SharedMemoryAbi(smb, 4096));
        final TraceWriter<RawPacket> writer = arbiter.createTraceWriter(0, BufferExhaustedPolicy.DROP, new RawPacket());
        final TraceBufferV2 buffer = new TraceBufferV2(Arena.ofAuto().allocate(16384, 16), OverwritePolicy.RING_BUFFER);
        final ChunkCommit commit = new ChunkCommit().producer(1, new ClientIdentity(0, 1));
        final SharedMemoryReader.ChunkSink sink = (writerId, chunkId, packets, complete, segment, offset, size) -> {
            commit.writerId(writerId).chunkId(chunkId).numFragments(SharedMemoryAbiDescriptor.packetCountOf(packets))
                    .flags(SharedMemoryAbiDescriptor.flagsOf(packets)).complete(complete);
            buffer.copyChunkUntrusted(commit, segment, offset, size);
        };
        final TracePacketView view = new TracePacketView();
        final byte[] scratch = new byte[64];
        final MemorySegment scratchSegment = MemorySegment.ofArray(scratch);
        int scraped;
        int firstRead;
        int secondRead;
        int otherRead;

        public RecommitAfterScrape() {
            writer.newTracePacket().bytes(FIRST_BODY);
        }

        @Actor
        public void writer() {
            writer.newTracePacket().bytes(SECOND_BODY);
            writer.flush();
        }

        @Actor
        public void service() {
            scraped = reader.scrapeChunksBeingWritten(sink);
            readAll();
        }

        void readAll() {
            buffer.beginRead();
            while (buffer.readNextTracePacket(view)) {
                int size = (int) view.size();
                if (size > scratch.length) {
                    otherRead++;
                    continue;
                }
                view.copyTo(scratchSegment, 0);
                if (Arrays.equals(scratch, 0, size, FIRST, 0, FIRST.length)) {
                    firstRead++;
                } else if (Arrays.equals(scratch, 0, size, SECOND, 0, SECOND.length)) {
                    secondRead++;
                } else {
                    otherRead++;
                }
            }
        }

        @Arbiter
        public void arbiter(IIII_Result r) {
            if (committedPage >= 0) {
                reader.moveChunk(committedPage, committedChunk, sink);
            }
            readAll();
            r.r1 = firstRead;
            r.r2 = secondRead;
            r.r3 = otherRead;
            r.r4 = scraped;
        }
    }

    @JCStressTest
    @Description("Invariant: an idle writer holding a chunk with one packet flushes while the arbiter reclaims idle "
            + "chunks; the writer's ownership word lets exactly one of them return the chunk, so it is committed once, "
            + "complete, with its packet, and neither side fails (r1 = commits of the chunk, r2 = packets in it, r3 = "
            + "its state is Complete, r4 = the reclaim took it).")
    @Outcome(id = {"1, 1, 1, 0", "1, 1, 1, 1"}, expect = ACCEPTABLE, desc = "committed once, by the flush or the reclaim")
    @Outcome(expect = FORBIDDEN, desc = "anything else: committed twice or never, a packet lost, or a side failed (r1 = -1)")
    @State
    public static class ReclaimDuringFlush {
        final MemorySegment smb = newSmbMemory();
        int commits;
        final SharedMemoryArbiter arbiter = newArbiter(smb, 1, request -> commits += request.chunksToMove());
        final SharedMemoryAbi abi = new SharedMemoryAbi(smb, 4096);
        final TraceWriter<RawPacket> writer = arbiter.createTraceWriter(0, BufferExhaustedPolicy.DROP, new RawPacket());
        boolean failed;
        int reclaimed;

        public ReclaimDuringFlush() {
            writer.newTracePacket().bytes(new byte[] {1});
            writer.finishTracePacket();
        }

        @Actor
        public void writer() {
            try {
                writer.flush();
            } catch (IllegalStateException returnedTwice) {
                failed = true;
            }
        }

        @Actor
        public void reclaimer() {
            try {
                reclaimed = arbiter.reclaimIdleChunks();
            } catch (IllegalStateException returnedTwice) {
                failed = true;
            }
        }

        @Arbiter
        public void arbiter(IIII_Result r) {
            long chunk = abi.chunkOffset(0, 0, SharedMemoryAbiDescriptor.LAYOUT_DIV1);
            r.r1 = failed ? -1 : commits;
            r.r2 = SharedMemoryAbiDescriptor.packetCountOf(abi.packetsAcquire(chunk));
            r.r3 = abi.chunkState(0, 0) == SharedMemoryAbiDescriptor.CHUNK_COMPLETE ? 1 : 0;
            r.r4 = reclaimed;
        }
    }
}
