package dev.ffmtrace.stress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import dev.ffmtrace.memory.AtomicSegment;
import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.shmring.RecordSlot;
import dev.ffmtrace.shmring.SharedRingBuffer;
import dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;
import org.openjdk.jcstress.infra.results.II_Result;
import org.openjdk.jcstress.infra.results.I_Result;
import org.openjdk.jcstress.infra.results.ZZ_Result;

/**
 * heapprofd's SharedRingBuffer between threads: publication of a record by its length
 * word, the hand-back of freed space by read_pos, the reader's pause and the writers'
 * wake-up, the spinlock that serialises reservations, and the record of its holder.
 * Each state is a one-page ring in
 * native memory ({@link SharedRingBuffer#allocate}), whose bytes start out as stale
 * non-zero garbage, so a reader that took a stale length word for a record would show it.
 */
public final class SharedRingBufferStress {
    static final long RING = 4096;
    static final byte STALE = 0x01;

    private SharedRingBufferStress() {
    }

    /** A fresh buffer whose ring is full of stale bytes and whose positions are {@code position}. */
    static SharedRingBuffer newBuffer(long position) {
        SharedRingBuffer buffer = SharedRingBuffer.allocate(RING, Arena.ofAuto());
        buffer.newSlot().buffer().fill(STALE);
        buffer.metadata().set(Layouts.LONG, SharedRingBufferDescriptor.READ_POS_OFFSET, position);
        buffer.metadata().set(Layouts.LONG, SharedRingBufferDescriptor.WRITE_POS_OFFSET, position);
        return buffer;
    }

    static void fill(RecordSlot slot, byte value) {
        slot.buffer().asSlice(slot.offset(), slot.length()).fill(value);
    }

    /** Whether all payload bytes of the record in {@code slot} are {@code value}. */
    static boolean intact(RecordSlot slot, byte value) {
        MemorySegment buffer = slot.buffer();
        long end = slot.offset() + slot.length();
        for (long i = slot.offset(); i < end; i++) {
            if (buffer.get(Layouts.BYTE, i) != value) {
                return false;
            }
        }
        return true;
    }

    /**
     * One writer's record: takes the spinlock (blocking), reserves {@code length} bytes, drops
     * the lock, fills the payload with {@code value} and commits it; returns whether it reserved.
     */
    static boolean writeOne(SharedRingBuffer buffer, RecordSlot slot, int length, byte value) {
        if (!buffer.lock(SharedRingBuffer.LockMode.BLOCKING)) {
            return false;
        }
        SharedRingBuffer.WriteResult result = buffer.beginWrite(slot, length);
        buffer.unlock();
        if (result != SharedRingBuffer.WriteResult.OK) {
            return false;
        }
        fill(slot, value);
        buffer.endWrite(slot);
        return true;
    }

    /** 1 if read_pos and write_pos are {@code readPos} and {@code writePos}, else 0. */
    static int positionsAre(SharedRingBuffer buffer, long readPos, long writePos) {
        MemorySegment meta = buffer.metadata();
        return meta.get(Layouts.LONG, SharedRingBufferDescriptor.READ_POS_OFFSET) == readPos
                && meta.get(Layouts.LONG, SharedRingBufferDescriptor.WRITE_POS_OFFSET) == writePos ? 1 : 0;
    }

    /**
     * The reader's side of a publication race: r1 is the length of the record found, -1 for
     * no data, -2 for corrupt; r2 is 1 if every byte of it is {@code value}.
     */
    static void readOne(SharedRingBuffer buffer, RecordSlot slot, byte value, II_Result r) {
        switch (buffer.beginRead(slot)) {
            case OK -> {
                r.r1 = (int) slot.length();
                r.r2 = intact(slot, value) ? 1 : 0;
            }
            case NO_DATA -> r.r1 = -1;
            case CORRUPT -> r.r1 = -2;
        }
    }

    @JCStressTest
    @Description("Invariant: one writer reserves a 300-byte record that runs off the end of the ring (the length word "
            + "is zeroed, then write_pos advanced by a release store under the lock), fills it and "
            + "commits its length with release; the reader either finds nothing or the whole record. It never "
            + "takes the stale word for a length, never sees a torn length and never sees the length before the "
            + "payload.")
    @Outcome(id = "-1, 0", expect = ACCEPTABLE, desc = "nothing committed yet")
    @Outcome(id = "300, 1", expect = ACCEPTABLE, desc = "the whole record")
    @Outcome(id = "300, 0", expect = FORBIDDEN, desc = "length visible before the payload it publishes")
    @Outcome(id = "-2, 0", expect = FORBIDDEN, desc = "a stale or torn length word read as corrupt")
    @Outcome(expect = FORBIDDEN, desc = "any other length: a stale or torn length word")
    @State
    public static class RecordPublication {
        static final int LENGTH = 300;
        static final byte VALUE = 0x5A;

        final SharedRingBuffer buffer = newBuffer(RING - 64);
        final RecordSlot writerSlot = buffer.newSlot();
        final RecordSlot readerSlot = buffer.newSlot();

        @Actor
        public void writer() {
            writeOne(buffer, writerSlot, LENGTH, VALUE);
        }

        @Actor
        public void reader(II_Result r) {
            readOne(buffer, readerSlot, VALUE, r);
        }
    }

    @JCStressTest
    @Description("Invariant: RecordPublication where the writer wraps at the very edge, on the ring's third lap: the "
            + "positions are 3 rings less 8 bytes, so the record's length word is the ring's last 8 bytes and its "
            + "whole payload lies past the end, at the ring's start. The reader finds nothing or the whole record, "
            + "never the stale word at the edge taken for a length, nor the length before the payload.")
    @Outcome(id = "-1, 0", expect = ACCEPTABLE, desc = "nothing committed yet")
    @Outcome(id = "100, 1", expect = ACCEPTABLE, desc = "the whole record")
    @Outcome(id = "100, 0", expect = FORBIDDEN, desc = "length visible before the payload it publishes")
    @Outcome(expect = FORBIDDEN, desc = "any other length, or corrupt: the stale word at the edge read as a length")
    @State
    public static class EdgeWrapPublication {
        static final int LENGTH = 100;
        static final byte VALUE = 0x3C;

        final SharedRingBuffer buffer = newBuffer(3 * RING - SharedRingBufferDescriptor.RECORD_HEADER_SIZE);
        final RecordSlot writerSlot = buffer.newSlot();
        final RecordSlot readerSlot = buffer.newSlot();

        @Actor
        public void writer() {
            writeOne(buffer, writerSlot, LENGTH, VALUE);
        }

        @Actor
        public void reader(II_Result r) {
            readOne(buffer, readerSlot, VALUE, r);
        }
    }

    @JCStressTest
    @Description("Invariant: RecordPublication through tryWrite, which reserves under the lock, unlocks, copies "
            + "the caller's bytes and commits in one call: the reader finds nothing or the whole wrapping record.")
    @Outcome(id = "-1, 0", expect = ACCEPTABLE, desc = "nothing committed yet")
    @Outcome(id = "300, 1", expect = ACCEPTABLE, desc = "the whole record")
    @Outcome(id = "300, 0", expect = FORBIDDEN, desc = "length visible before the payload it publishes")
    @Outcome(expect = FORBIDDEN, desc = "any other length, or corrupt: a stale or torn length word")
    @State
    public static class TryWritePublication {
        static final byte VALUE = 0x3C;
        static final byte[] RECORD = filled(300, VALUE);

        final SharedRingBuffer buffer = newBuffer(RING - 64);
        final RecordSlot readerSlot = buffer.newSlot();

        static byte[] filled(int length, byte value) {
            byte[] bytes = new byte[length];
            Arrays.fill(bytes, value);
            return bytes;
        }

        @Actor
        public void writer() {
            buffer.tryWrite(RECORD);
        }

        @Actor
        public void reader(II_Result r) {
            readOne(buffer, readerSlot, VALUE, r);
        }
    }

    @JCStressTest
    @Description("Invariant: no wake-up is lost. The reader, having found the ring empty, pauses (stores "
            + "reader_paused, then a fence) and looks for a record once more, to sleep if it finds none; the writer "
            + "commits a record, then looks at the flag (a fence, then the flag, reset if set) to wake a paused "
            + "reader. One of the two must see the other's write.")
    @Outcome(id = "false, false", expect = FORBIDDEN,
            desc = "lost wake-up: the writer saw no pause and the reader no record; it sleeps with the record unread")
    @Outcome(id = "true, false", expect = ACCEPTABLE, desc = "the reader paused before the commit: the writer wakes it")
    @Outcome(id = "false, true", expect = ACCEPTABLE, desc = "the reader found the record: it was still reading")
    @Outcome(id = "true, true", expect = ACCEPTABLE, desc = "both: the reader reads it, and a wake-up finds nothing")
    @State
    public static class ReaderPauseWakeUp {
        static final byte[] RECORD = TryWritePublication.filled(32, (byte) 0x5A);

        final SharedRingBuffer buffer = newBuffer(0);
        final RecordSlot readerSlot = buffer.newSlot();

        public ReaderPauseWakeUp() {
            // The reader has found the ring empty once: its next look is the one after the pause.
            buffer.beginRead(readerSlot);
        }

        @Actor
        public void writer(ZZ_Result r) {
            buffer.tryWrite(RECORD);
            r.r1 = buffer.getAndResetReaderPaused();
        }

        @Actor
        public void reader(ZZ_Result r) {
            buffer.setReaderPaused();
            r.r2 = buffer.beginRead(readerSlot) == SharedRingBuffer.ReadResult.OK;
        }
    }

    @JCStressTest
    @Description("Invariant: the reader has already loaded a write_pos that covers a second, reserved but "
            + "uncommitted record (it read the first one), so it does not load write_pos again; the writer fills "
            + "the second record and commits it. The length word's acquire alone must keep the reader from seeing "
            + "the length before the payload, or a stale or zeroed length as a record.")
    @Outcome(id = "-1, 0", expect = ACCEPTABLE, desc = "not committed yet")
    @Outcome(id = "200, 1", expect = ACCEPTABLE, desc = "the whole record")
    @Outcome(id = "200, 0", expect = FORBIDDEN, desc = "length visible before the payload it publishes")
    @Outcome(expect = FORBIDDEN, desc = "any other length, or corrupt: a stale or torn length word")
    @State
    public static class CachedWritePosition {
        static final int LENGTH = 200;
        static final byte VALUE = 0x6B;

        final SharedRingBuffer buffer = newBuffer(RING - 64);
        final RecordSlot writerSlot = buffer.newSlot();
        final RecordSlot readerSlot = buffer.newSlot();

        public CachedWritePosition() {
            RecordSlot first = buffer.newSlot();
            buffer.lock(SharedRingBuffer.LockMode.BLOCKING);
            buffer.beginWrite(first, 8);
            buffer.beginWrite(writerSlot, LENGTH);
            buffer.unlock();
            buffer.endWrite(first);
            if (buffer.beginRead(readerSlot) != SharedRingBuffer.ReadResult.OK) {
                throw new IllegalStateException("the first record should be readable");
            }
            buffer.endRead(readerSlot);
        }

        @Actor
        public void writer() {
            fill(writerSlot, VALUE);
            buffer.endWrite(writerSlot);
        }

        @Actor
        public void reader(II_Result r) {
            readOne(buffer, readerSlot, VALUE, r);
        }
    }

    @JCStressTest
    @Description("Invariant: the reader reads a record that fills most of the ring and frees it (a release store of "
            + "read_pos), while a writer waits for the space to reserve a record that wraps over the first one's "
            + "bytes. The reader never sees the new record's bytes in the one it is reading, and the positions end "
            + "where the two strides put them.")
    @Outcome(id = "1, 0, 1", expect = ACCEPTABLE, desc = "the writer found no space yet")
    @Outcome(id = "1, 1, 1", expect = ACCEPTABLE, desc = "the writer reused the space once the reader had freed it")
    @Outcome(id = "0, .*, .*", expect = FORBIDDEN, desc = "the space was handed back before the reader had read it")
    @Outcome(expect = FORBIDDEN, desc = "positions wrong afterwards")
    @State
    public static class FreedSpaceReuse {
        static final int OLD_LENGTH = 4000;
        static final int NEW_LENGTH = 200;
        static final byte OLD = 0x11;
        static final byte NEW = 0x22;

        final SharedRingBuffer buffer = newBuffer(0);
        final RecordSlot writerSlot = buffer.newSlot();
        final RecordSlot readerSlot = buffer.newSlot();
        int reserved;

        public FreedSpaceReuse() {
            writeOne(buffer, writerSlot, OLD_LENGTH, OLD);
        }

        @Actor
        public void writer() {
            if (writeOne(buffer, writerSlot, NEW_LENGTH, NEW)) {
                reserved = 1;
            }
        }

        @Actor
        public void reader(III_Result r) {
            if (buffer.beginRead(readerSlot) == SharedRingBuffer.ReadResult.OK) {
                r.r1 = readerSlot.length() == OLD_LENGTH && intact(readerSlot, OLD) ? 1 : 0;
                buffer.endRead(readerSlot);
            }
        }

        @Arbiter
        public void arbiter(III_Result r) {
            long oldStride = SharedRingBufferDescriptor.stride(OLD_LENGTH);
            long newStride = SharedRingBufferDescriptor.stride(NEW_LENGTH);
            r.r2 = reserved;
            r.r3 = positionsAre(buffer, oldStride, oldStride + reserved * newStride);
        }
    }

    @JCStressTest
    @Description("Invariant: the reader reads a 200-byte record, less than a hand-back batch, so endRead keeps its "
            + "space; its next beginRead finds the following record reserved but uncommitted and hands the space "
            + "back (a release store of read_pos) before reporting no data. A writer waits for exactly that space "
            + "to reserve a record over the first one's bytes. The reader never sees the new bytes in the record it "
            + "read, and read_pos ends past the first record either way.")
    @Outcome(id = "1, 0, 1", expect = ACCEPTABLE, desc = "the writer found no space yet")
    @Outcome(id = "1, 1, 1", expect = ACCEPTABLE, desc = "the writer reused the space once the reader had handed it back")
    @Outcome(id = "0, .*, .*", expect = FORBIDDEN, desc = "the space was handed back before the reader had read it")
    @Outcome(expect = FORBIDDEN, desc = "a wrong read result, or positions wrong afterwards")
    @State
    public static class HandBackWhenIdle {
        static final int OLD_LENGTH = 200;
        static final int RESERVED_LENGTH = (int) (RING - SharedRingBufferDescriptor.stride(OLD_LENGTH))
                - SharedRingBufferDescriptor.RECORD_HEADER_SIZE;
        static final byte OLD = 0x33;
        static final byte NEW = 0x44;

        final SharedRingBuffer buffer = newBuffer(0);
        final RecordSlot writerSlot = buffer.newSlot();
        final RecordSlot readerSlot = buffer.newSlot();
        int reserved;

        public HandBackWhenIdle() {
            if (SharedRingBufferDescriptor.stride(OLD_LENGTH) >= buffer.handBackBatch()) {
                throw new IllegalStateException("the first record must be smaller than a hand-back batch");
            }
            RecordSlot uncommitted = buffer.newSlot();
            buffer.lock(SharedRingBuffer.LockMode.BLOCKING);
            buffer.beginWrite(writerSlot, OLD_LENGTH);
            buffer.beginWrite(uncommitted, RESERVED_LENGTH);
            buffer.unlock();
            fill(writerSlot, OLD);
            buffer.endWrite(writerSlot);
        }

        @Actor
        public void writer() {
            if (writeOne(buffer, writerSlot, OLD_LENGTH, NEW)) {
                reserved = 1;
            }
        }

        @Actor
        public void reader(III_Result r) {
            if (buffer.beginRead(readerSlot) == SharedRingBuffer.ReadResult.OK) {
                r.r1 = readerSlot.length() == OLD_LENGTH && intact(readerSlot, OLD) ? 1 : 0;
                buffer.endRead(readerSlot);
                if (buffer.beginRead(readerSlot) != SharedRingBuffer.ReadResult.NO_DATA) {
                    r.r1 = -1;
                }
            }
        }

        @Arbiter
        public void arbiter(III_Result r) {
            long stride = SharedRingBufferDescriptor.stride(OLD_LENGTH);
            r.r2 = reserved;
            r.r3 = positionsAre(buffer, stride, RING + reserved * stride);
        }
    }

    @JCStressTest
    @Description("Invariant: two writers contend for the spinlock, each reserving, filling and committing one record "
            + "(24 bytes of 1s, 40 bytes of 2s). Afterwards both records are in the ring, once each, in either order, "
            + "intact and not overlapping; write_pos is the sum of their strides and the lock is free again.")
    @Outcome(id = "2, 1, 2", expect = ACCEPTABLE, desc = "writer 1 reserved first")
    @Outcome(id = "2, 2, 1", expect = ACCEPTABLE, desc = "writer 2 reserved first")
    @Outcome(id = "-1, .*, .*", expect = FORBIDDEN, desc = "a record overwritten by the other or of the wrong length")
    @Outcome(id = "-2, .*, .*", expect = FORBIDDEN, desc = "positions, stats or lock state wrong afterwards")
    @Outcome(expect = FORBIDDEN, desc = "a record lost or duplicated")
    @State
    public static class ContendedWriters {
        static final int LENGTH_1 = 24;
        static final int LENGTH_2 = 40;

        final SharedRingBuffer buffer = newBuffer(0);
        final RecordSlot slot1 = buffer.newSlot();
        final RecordSlot slot2 = buffer.newSlot();

        @Actor
        public void writer1() {
            writeOne(buffer, slot1, LENGTH_1, (byte) 1);
        }

        @Actor
        public void writer2() {
            writeOne(buffer, slot2, LENGTH_2, (byte) 2);
        }


        @Arbiter
        public void arbiter(III_Result r) {
            RecordSlot slot = buffer.newSlot();
            int count = 0;
            int[] order = new int[2];
            while (buffer.beginRead(slot) == SharedRingBuffer.ReadResult.OK) {
                int id = slot.length() == LENGTH_1 ? 1 : slot.length() == LENGTH_2 ? 2 : 0;
                if (id == 0 || !intact(slot, (byte) id) || count == 2) {
                    r.r1 = -1;
                    return;
                }
                order[count++] = id;
                buffer.endRead(slot);
            }
            MemorySegment meta = buffer.metadata();
            long strides = SharedRingBufferDescriptor.stride(LENGTH_1) + SharedRingBufferDescriptor.stride(LENGTH_2);
            if (meta.get(Layouts.LONG, SharedRingBufferDescriptor.WRITE_POS_OFFSET) != strides
                    || meta.get(Layouts.LONG, 0) != 0
                    || buffer.stats().numWritesSucceeded() != 2) {
                r.r1 = -2;
                return;
            }
            r.r1 = count;
            r.r2 = order[0];
            r.r3 = order[1];
        }
    }

    @JCStressTest
    @Description("Invariant: the spinlock's holder record (namespace slot in bytes 2..3, pid in 4..7), on which "
            + "dead-holder detection reads the pid only with its slot: a waiter loading the lock word while a writer "
            + "takes and releases the lock never sees the pid without the slot it was recorded with.")
    @Outcome(id = "0", expect = ACCEPTABLE, desc = "free")
    @Outcome(id = "1", expect = ACCEPTABLE, desc = "held, the holder recorded whole")
    @Outcome(id = "2", expect = ACCEPTABLE, desc = "being released: the pid cleared, the slot not yet")
    @Outcome(id = "3", expect = ACCEPTABLE, desc = "being released: both cleared, the locked byte not yet")
    @Outcome(id = "-1", expect = FORBIDDEN, desc = "a pid without its slot, or anything else")
    @State
    public static class HolderRecord {
        final SharedRingBuffer buffer = newBuffer(0);
        /** Slot 1, the first entry of the buffer's table, unless the namespace could not be read. */
        final long slot = Os.pidNamespaceId() == 0 ? 0 : 1L << 16;
        final long holder = (long) Os.pid() << 32 | slot;

        @Actor
        public void writer() {
            if (buffer.lock(SharedRingBuffer.LockMode.TRY)) {
                buffer.unlock();
            }
        }

        @Actor
        public void waiter(I_Result r) {
            MemorySegment meta = buffer.metadata();
            long word = AtomicSegment.getLongVolatile(meta, SharedRingBufferDescriptor.SPINLOCK_LOCKED_OFFSET);
            if (word == 0) {
                r.r1 = 0;
            } else if (word == (holder | 1)) {
                r.r1 = 1;
            } else if (word == (slot | 1)) {
                r.r1 = 2;
            } else {
                r.r1 = word == 1 ? 3 : -1;
            }
        }
    }
}
