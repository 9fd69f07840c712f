package dev.ffmtrace.stress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import dev.ffmtrace.memory.AtomicSegment;
import java.lang.foreign.Arena;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;
import org.openjdk.jcstress.infra.results.I_Result;
import org.openjdk.jcstress.infra.results.JJ_Result;
import org.openjdk.jcstress.infra.results.ZZ_Result;

/**
 * The segment atomics every shared protocol in ffmtrace is built on: message passing
 * through release/acquire, and read-modify-writes under contention, including the 8-bit
 * ones that {@link AtomicSegment} builds on the enclosing 32-bit word.
 */
public final class AtomicSegmentStress {
    private AtomicSegmentStress() {
    }

    /** Native, 8-byte aligned memory; freed when the state is collected. */
    static AtomicSegment newSegment() {
        return new AtomicSegment(Arena.ofAuto().allocate(64, 8));
    }

    @JCStressTest
    @Description("Invariant: a reader that acquires the flag sees the payload written before the flag's release store.")
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "flag not seen yet")
    @Outcome(id = "0, 42", expect = ACCEPTABLE, desc = "payload visible before the flag")
    @Outcome(id = "1, 42", expect = ACCEPTABLE, desc = "flag and payload seen")
    @Outcome(id = "1, 0", expect = FORBIDDEN, desc = "flag seen without the payload it publishes")
    @State
    public static class IntReleaseAcquire {
        final AtomicSegment memory = newSegment();

        @Actor
        public void writer() {
            memory.putInt(0, 42);
            memory.putIntRelease(8, 1);
        }

        @Actor
        public void reader(II_Result r) {
            r.r1 = memory.getIntAcquire(8);
            r.r2 = memory.getInt(0);
        }
    }

    @JCStressTest
    @Description("Invariant: as IntReleaseAcquire, for a 64-bit position published with a release get-and-add.")
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "position not advanced yet")
    @Outcome(id = "0, 7", expect = ACCEPTABLE, desc = "payload visible before the position")
    @Outcome(id = "8, 7", expect = ACCEPTABLE, desc = "position and payload seen")
    @Outcome(id = "8, 0", expect = FORBIDDEN, desc = "position advanced past a payload not yet visible")
    @State
    public static class LongPositionRelease {
        final AtomicSegment memory = newSegment();

        @Actor
        public void writer() {
            memory.putLong(32, 7);
            memory.getAndAddLongRelease(0, 8);
        }

        @Actor
        public void reader(JJ_Result r) {
            r.r1 = memory.getLongAcquire(0);
            r.r2 = memory.getLong(32);
        }
    }

    @JCStressTest
    @Description("Invariant: two compare-and-sets from the same expected value: exactly one wins.")
    @Outcome(id = {"true, false", "false, true"}, expect = ACCEPTABLE, desc = "one winner")
    @Outcome(id = "true, true", expect = FORBIDDEN, desc = "both won: the CAS is not atomic")
    @Outcome(id = "false, false", expect = FORBIDDEN, desc = "nobody won a free slot")
    @State
    public static class IntCompareAndSetContention {
        final AtomicSegment memory = newSegment();

        @Actor
        public void first(ZZ_Result r) {
            r.r1 = memory.compareAndSetInt(0, 0, 1);
        }

        @Actor
        public void second(ZZ_Result r) {
            r.r2 = memory.compareAndSetInt(0, 0, 2);
        }
    }

    @JCStressTest
    @Description("Invariant: two get-and-adds on one long lose no update.")
    @Outcome(id = "2", expect = ACCEPTABLE, desc = "both increments landed")
    @Outcome(id = "1", expect = FORBIDDEN, desc = "an increment was lost")
    @State
    public static class LongGetAndAddContention {
        final AtomicSegment memory = newSegment();

        @Actor
        public void first() {
            memory.getAndAddLong(8, 1);
        }

        @Actor
        public void second() {
            memory.getAndAddLong(8, 1);
        }

        @Arbiter
        public void arbiter(I_Result r) {
            r.r1 = (int) memory.getLongVolatile(8);
        }
    }

    @JCStressTest
    @Description("Invariant: 8-bit compare-and-sets on neighbouring bytes of one word both land: the word-sized CAS underneath loses neither.")
    @Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "both bytes set")
    @Outcome(id = {"0, 1", "1, 0", "0, 0"}, expect = FORBIDDEN, desc = "a neighbour's byte was overwritten")
    @State
    public static class NeighbouringByteCompareAndSet {
        final AtomicSegment memory = newSegment();

        @Actor
        public void lockByte() {
            memory.compareAndSetByte(0, (byte) 0, (byte) 1);
        }

        @Actor
        public void poisonByte() {
            memory.compareAndSetByte(1, (byte) 0, (byte) 1);
        }

        @Arbiter
        public void arbiter(II_Result r) {
            r.r1 = memory.getByteVolatile(0);
            r.r2 = memory.getByteVolatile(1);
        }
    }

    @JCStressTest
    @Description("Invariant: two 8-bit exchanges of a lock byte: exactly one sees it free.")
    @Outcome(id = {"0, 1", "1, 0"}, expect = ACCEPTABLE, desc = "one acquirer")
    @Outcome(id = "0, 0", expect = FORBIDDEN, desc = "both took the lock")
    @Outcome(id = "1, 1", expect = FORBIDDEN, desc = "nobody took a free lock")
    @State
    public static class ByteExchangeContention {
        final AtomicSegment memory = newSegment();

        @Actor
        public void first(II_Result r) {
            r.r1 = memory.getAndSetByte(0, (byte) 1);
        }

        @Actor
        public void second(II_Result r) {
            r.r2 = memory.getAndSetByte(0, (byte) 1);
        }
    }
}
