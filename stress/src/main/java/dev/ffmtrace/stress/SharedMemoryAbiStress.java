package dev.ffmtrace.stress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.protozero.Message;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.SharedMemoryArbiter;
import dev.ffmtrace.tracing.smb.TraceWriter;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbi;
import dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;
import org.openjdk.jcstress.infra.results.III_Result;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * The shared memory buffer's lock-free protocols: chunk acquisition, packet-count
 * publication against a scraper, completion against the service's read, and the
 * TraceWriter's ownership word: the idle-chunk reclaim handshake and a close from
 * another thread.
 */
public final class SharedMemoryAbiStress {
    private SharedMemoryAbiStress() {
    }

    static SharedMemoryAbi newSmb(int layout) {
        SharedMemoryAbi abi = new SharedMemoryAbi(Arena.ofAuto().allocate(4096, 4096), 4096);
        abi.tryPartitionPage(0, layout);
        return abi;
    }

    @JCStressTest
    @Description("Invariant: two writers racing for one free chunk: exactly one gets it, and the header is the winner's.")
    @Outcome(id = {"1, 0", "0, 1"}, expect = ACCEPTABLE, desc = "one winner; r1/r2 say who")
    @Outcome(id = "1, 1", expect = FORBIDDEN, desc = "both acquired the same chunk")
    @Outcome(id = "0, 0", expect = FORBIDDEN, desc = "a free chunk went to nobody")
    @Outcome(expect = FORBIDDEN, desc = "anything else: the header does not belong to the winner (r1 = 7)")
    @State
    public static class AcquireRace {
        final SharedMemoryAbi abi = newSmb(SharedMemoryAbiDescriptor.LAYOUT_DIV2);
        boolean firstWon;
        boolean secondWon;

        @Actor
        public void first() {
            firstWon = abi.tryAcquireChunkForWriting(0, 1, 100, 1) != SharedMemoryAbi.NO_CHUNK;
        }

        @Actor
        public void second() {
            secondWon = abi.tryAcquireChunkForWriting(0, 1, 200, 2) != SharedMemoryAbi.NO_CHUNK;
        }

        @Arbiter
        public void arbiter(II_Result r) {
            long offset = abi.chunkOffset(0, 1, SharedMemoryAbiDescriptor.LAYOUT_DIV2);
            int writer = abi.writerId(offset);
            boolean headerMatches = (firstWon && writer == 1 && abi.chunkId(offset) == 100)
                    || (secondWon && writer == 2 && abi.chunkId(offset) == 200);
            r.r1 = firstWon ? 1 : 0;
            r.r2 = secondWon ? 1 : 0;
            if (firstWon != secondWon && !headerMatches) {
                r.r1 = 7;
            }
        }
    }

    @JCStressTest
    @Description("Invariant: a scraper that sees the count of packet 2 (bumped when packet 2 starts) sees packet 1's size and bytes.")
    @Outcome(id = {"0, 0, 0", "0, 0, 1", "0, 1, 0", "0, 1, 1", "1, 0, 0", "1, 0, 1", "1, 1, 0", "1, 1, 1"},
            expect = ACCEPTABLE, desc = "packet 1 still open: anything may be seen")
    @Outcome(id = "2, 1, 1", expect = ACCEPTABLE, desc = "packet 1 complete")
    @Outcome(id = {"2, 0, 0", "2, 0, 1", "2, 1, 0"}, expect = FORBIDDEN, desc = "counted past a packet whose size or bytes are not visible")
    @State
    public static class PacketCountPublication {
        final SharedMemoryAbi abi = newSmb(SharedMemoryAbiDescriptor.LAYOUT_DIV1);
        final long chunk = abi.tryAcquireChunkForWriting(0, 0, 0, 1);
        final MemorySegment payload = abi.segment().asSlice(chunk + SharedMemoryAbiDescriptor.CHUNK_HEADER_SIZE);

        @Actor
        public void writer() {
            abi.incrementPacketCount(chunk);
            payload.set(Layouts.INT_UNALIGNED, 4, 0x04030201);
            payload.set(Layouts.INT_UNALIGNED, 0, 0x00808084);
            abi.incrementPacketCount(chunk);
        }

        @Actor
        public void scraper(III_Result r) {
            r.r1 = SharedMemoryAbiDescriptor.packetCountOf(abi.packetsAcquire(chunk));
            r.r2 = payload.get(Layouts.INT_UNALIGNED, 0) == 0x00808084 ? 1 : 0;
            r.r3 = payload.get(Layouts.INT_UNALIGNED, 4) == 0x04030201 ? 1 : 0;
        }
    }

    @JCStressTest
    @Description("Invariant: a service that acquires a chunk for reading sees every byte written before it was released as complete.")
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "not complete yet")
    @Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "acquired with the payload")
    @Outcome(id = "1, 0", expect = FORBIDDEN, desc = "acquired a complete chunk without its payload")
    @State
    public static class CompleteThenRead {
        final SharedMemoryAbi abi = newSmb(SharedMemoryAbiDescriptor.LAYOUT_DIV1);
        final long chunk = abi.tryAcquireChunkForWriting(0, 0, 0, 1);

        @Actor
        public void producer() {
            abi.segment().set(Layouts.LONG_UNALIGNED, chunk + 8, 0x1122334455667788L);
            abi.releaseChunkAsComplete(0, 0);
        }

        @Actor
        public void service(II_Result r) {
            long offset = abi.tryAcquireChunkForReading(0, 0);
            r.r1 = offset == SharedMemoryAbi.NO_CHUNK ? 0 : 1;
            r.r2 = offset != SharedMemoryAbi.NO_CHUNK
                    && abi.segment().get(Layouts.LONG_UNALIGNED, chunk + 8) == 0x1122334455667788L ? 1 : 0;
        }
    }

    /** The smallest root message: raw bytes in field 1. */
    static final class RawPacket extends Message {
        void bytes(byte[] value) {
            appendBytes(1, value);
        }
    }

    @JCStressTest
    @Description("Invariant: reclaiming an idle writer's chunk races with the writer's next packet: the chunk is returned at most "
            + "once, never written after it was returned, and both packets survive (r1 = packets in the page, r2 = chunks "
            + "reclaimed, r3 = packets written into a chunk after it was committed).")
    @Outcome(id = {"2, 0, 0", "2, 1, 0"}, expect = ACCEPTABLE, desc = "both packets kept; reclaimed or not")
    @Outcome(expect = FORBIDDEN, desc = "anything else: a packet lost or duplicated, or a committed chunk written")
    @State
    public static class IdleChunkReclaim {
        final SharedMemoryAbi abi = newSmb(SharedMemoryAbiDescriptor.LAYOUT_DIV2);
        int countAtCommit = -1;
        final SharedMemoryArbiter arbiter = new SharedMemoryArbiter(abi.segment(), abi.pageSize(), 2,
                request -> countAtCommit = chunkZeroCount(), Duration.ofSeconds(1));
        final TraceWriter<RawPacket> writer = arbiter.createTraceWriter(0,
                BufferExhaustedPolicy.DROP, new RawPacket());
        int reclaimed;

        IdleChunkReclaim() {
            writer.newTracePacket().bytes(new byte[] {1});
            writer.finishTracePacket();
        }

        int chunkZeroCount() {
            return SharedMemoryAbiDescriptor.packetCountOf(
                    abi.packetsAcquire(abi.chunkOffset(0, 0, SharedMemoryAbiDescriptor.LAYOUT_DIV2)));
        }

        @Actor
        public void writer() {
            writer.newTracePacket().bytes(new byte[] {2});
            writer.finishTracePacket();
        }

        @Actor
        public void reclaimer() {
            reclaimed = arbiter.reclaimIdleChunks();
        }

        @Arbiter
        public void arbiter(III_Result r) {
            int chunkOne = SharedMemoryAbiDescriptor.packetCountOf(
                    abi.packetsAcquire(abi.chunkOffset(0, 1, SharedMemoryAbiDescriptor.LAYOUT_DIV2)));
            r.r1 = chunkZeroCount() + chunkOne;
            r.r2 = reclaimed;
            r.r3 = countAtCommit < 0 ? 0 : chunkZeroCount() - countAtCommit;
        }
    }

    @JCStressTest
    @Description("Invariant: IdleChunkReclaim through the periodic sweep: the writer finished packet 1 before the previous "
            + "sweep and starts packet 2 while the next sweep, finding it quiet since then, reclaims its chunk. Exactly one "
            + "of them owns the chunk: it is returned at most once, never written after it was returned, and both packets "
            + "survive (r1 = packets in the page, r2 = chunks reclaimed, r3 = packets written into a chunk after it was "
            + "committed).")
    @Outcome(id = {"2, 0, 0", "2, 1, 0"}, expect = ACCEPTABLE, desc = "both packets kept; reclaimed or not")
    @Outcome(expect = FORBIDDEN, desc = "anything else: a packet lost or duplicated, or a committed chunk written")
    @State
    public static class SweepDuringPacket {
        static final byte[] SECOND = {2};
        final SharedMemoryAbi abi = newSmb(SharedMemoryAbiDescriptor.LAYOUT_DIV2);
        int countAtCommit = -1;
        final SharedMemoryArbiter arbiter = new SharedMemoryArbiter(abi.segment(), abi.pageSize(), 2,
                request -> countAtCommit = chunkCount(0), Duration.ofSeconds(1));
        final TraceWriter<RawPacket> writer = arbiter.createTraceWriter(0,
                BufferExhaustedPolicy.DROP, new RawPacket());
        int reclaimed;

        SweepDuringPacket() {
            writer.newTracePacket().bytes(new byte[] {1});
            writer.finishTracePacket();
            // The previous sweep: it sees packet 1 finished since the one before, so it keeps the chunk.
            arbiter.sweepIdleWriters();
        }

        int chunkCount(int chunk) {
            return SharedMemoryAbiDescriptor.packetCountOf(
                    abi.packetsAcquire(abi.chunkOffset(0, chunk, SharedMemoryAbiDescriptor.LAYOUT_DIV2)));
        }

        @Actor
        public void writer() {
            writer.newTracePacket().bytes(SECOND);
            writer.finishTracePacket();
        }

        @Actor
        public void sweeper() {
            reclaimed = arbiter.sweepIdleWriters();
        }

        @Arbiter
        public void arbiter(III_Result r) {
            r.r1 = chunkCount(0) + chunkCount(1);
            r.r2 = reclaimed;
            r.r3 = countAtCommit < 0 ? 0 : chunkCount(0) - countAtCommit;
        }
    }

    @JCStressTest
    @Description("Invariant: a TraceWriter closed by another thread while its owner starts a packet: the close waits for the "
            + "packet in progress, so the chunk it commits holds only finished packets and nothing is written after the "
            + "commit; a packet refused by the closed writer is not in the chunk (r1 = the owner's packet was written, "
            + "r2 = packets in the chunk at commit, r3 = packets in it now, r4 = an unfinished size field at commit).")
    @Outcome(id = "1, 2, 2, 0", expect = ACCEPTABLE, desc = "the packet came first and was finished before the commit")
    @Outcome(id = "0, 1, 1, 0", expect = ACCEPTABLE, desc = "the close came first; the packet was refused")
    @Outcome(expect = FORBIDDEN, desc = "anything else: a packet committed unfinished, written after the commit, or lost")
    @State
    public static class CloseWhileWriting {
        static final int SECOND_HEADER_OFFSET = SharedMemoryAbiDescriptor.CHUNK_HEADER_SIZE
                + SharedMemoryAbiDescriptor.PACKET_HEADER_SIZE + 3;
        final SharedMemoryAbi abi = newSmb(SharedMemoryAbiDescriptor.LAYOUT_DIV2);
        final long chunk = abi.chunkOffset(0, 0, SharedMemoryAbiDescriptor.LAYOUT_DIV2);
        int countAtCommit = -1;
        int unfinishedAtCommit;
        final SharedMemoryArbiter arbiter = new SharedMemoryArbiter(abi.segment(), abi.pageSize(), 2,
                request -> {
                    countAtCommit = chunkCount();
                    unfinishedAtCommit = countAtCommit == 2
                            && abi.segment().get(Layouts.INT_UNALIGNED, chunk + SECOND_HEADER_OFFSET) == 0 ? 1 : 0;
                }, Duration.ofSeconds(1));
        final TraceWriter<RawPacket> writer = arbiter.createTraceWriter(0,
                BufferExhaustedPolicy.DROP, new RawPacket());
        int written;

        CloseWhileWriting() {
            writer.newTracePacket().bytes(new byte[] {1});
            writer.finishTracePacket();
        }

        int chunkCount() {
            return SharedMemoryAbiDescriptor.packetCountOf(abi.packetsAcquire(chunk));
        }

        @Actor
        public void owner() {
            try {
                writer.newTracePacket().bytes(new byte[] {2, 2, 2});
                writer.finishTracePacket();
                written = 1;
            } catch (IllegalStateException closed) {
                written = 0;
            }
        }

        @Actor
        public void closer() {
            writer.close();
        }

        @Arbiter
        public void arbiter(IIII_Result r) {
            r.r1 = written;
            r.r2 = countAtCommit;
            r.r3 = chunkCount();
            r.r4 = unfinishedAtCommit;
        }
    }
}
