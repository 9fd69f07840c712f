package dev.ffmtrace.stress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import dev.ffmtrace.tracing.sdk.internal.LendingPool;
import java.util.concurrent.atomic.AtomicInteger;
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
 * The pool of writers an SDK instance lends to virtual threads ({@link LendingPool}): no
 * object is lent to two borrowers at once, none is lost on its way back, and never more
 * than the capacity are made.
 */
public final class LendingPoolStress {
    private LendingPoolStress() {
    }

    /** A pool whose objects are numbered 1, 2, ... in the order they are made. */
    static LendingPool<Integer> numbered(int capacity) {
        AtomicInteger next = new AtomicInteger();
        return new LendingPool<>(capacity, next::incrementAndGet);
    }

    static Integer borrow(LendingPool<Integer> pool) {
        try {
            return pool.borrow();
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    @JCStressTest
    @Description("Invariant: two borrowers of an empty pool each make their own object: two are made, each lent once.")
    @Outcome(id = {"1, 2, 2", "2, 1, 2"}, expect = ACCEPTABLE, desc = "each borrower made one")
    @Outcome(id = {"1, 1, 1", "2, 2, 2", "1, 1, 2", "2, 2, 1"}, expect = FORBIDDEN, desc = "one object lent twice")
    @Outcome(expect = FORBIDDEN, desc = "a count of made objects other than two")
    @State
    public static class BorrowersMake {
        final LendingPool<Integer> pool = numbered(2);

        @Actor
        public void first(III_Result r) {
            r.r1 = borrow(pool);
        }

        @Actor
        public void second(III_Result r) {
            r.r2 = borrow(pool);
        }

        @Arbiter
        public void made(III_Result r) {
            r.r3 = pool.made();
        }
    }

    @JCStressTest
    @Description("Invariant: two borrowers of a pool with two idle objects take one each, and make none.")
    @Outcome(id = {"1, 2, 2, 0", "2, 1, 2, 0"}, expect = ACCEPTABLE, desc = "each took an idle one")
    @Outcome(id = {"1, 1, 2, 0", "2, 2, 2, 0", "1, 1, 2, 1", "2, 2, 2, 1"}, expect = FORBIDDEN,
            desc = "one idle object taken by both")
    @Outcome(expect = FORBIDDEN, desc = "an object made while two were idle, or one left idle")
    @State
    public static class BorrowersTakeIdle {
        final LendingPool<Integer> pool = numbered(2);

        public BorrowersTakeIdle() {
            Integer a = borrow(pool);
            Integer b = borrow(pool);
            pool.giveBack(a);
            pool.giveBack(b);
        }

        @Actor
        public void first(IIII_Result r) {
            r.r1 = borrow(pool);
        }

        @Actor
        public void second(IIII_Result r) {
            r.r2 = borrow(pool);
        }

        @Arbiter
        public void counts(IIII_Result r) {
            r.r3 = pool.made();
            r.r4 = pool.idleCount();
        }
    }

    @JCStressTest
    @Description("Invariant: two objects given back at once both land idle; neither overwrites the other.")
    @Outcome(id = "2, 2", expect = ACCEPTABLE, desc = "both idle")
    @Outcome(id = "1, 2", expect = FORBIDDEN, desc = "one given-back object lost")
    @Outcome(expect = FORBIDDEN, desc = "anything else")
    @State
    public static class GiveBacksLand {
        final LendingPool<Integer> pool = numbered(2);
        final Integer a = borrow(pool);
        final Integer b = borrow(pool);

        @Actor
        public void first() {
            pool.giveBack(a);
        }

        @Actor
        public void second() {
            pool.giveBack(b);
        }

        @Arbiter
        public void counts(II_Result r) {
            r.r1 = pool.idleCount();
            r.r2 = pool.made();
        }
    }

    @JCStressTest
    @Description("Invariant: with both objects lent, a borrower waits for the one given back and gets exactly it:"
            + " never the one still lent, never a third.")
    @Outcome(id = "1, 2, 0", expect = ACCEPTABLE, desc = "the borrower got the object given back")
    @Outcome(id = "2, 2, 0", expect = FORBIDDEN, desc = "the object still lent was lent again")
    @Outcome(expect = FORBIDDEN, desc = "a third object made, or the given-back one left idle")
    @State
    public static class BorrowWaitsForGiveBack {
        final LendingPool<Integer> pool = numbered(2);
        final Integer a = borrow(pool);
        final Integer b = borrow(pool);

        @Actor
        public void giver() {
            pool.giveBack(a);
        }

        @Actor
        public void borrower(III_Result r) {
            r.r1 = borrow(pool);
        }

        @Arbiter
        public void counts(III_Result r) {
            r.r2 = pool.made();
            r.r3 = pool.idleCount();
        }
    }

    @JCStressTest
    @Description("Invariant: a pool of one serves two borrow-and-give-back calls with its one object, lent to one"
            + " borrower at a time, and ends with it idle.")
    @Outcome(id = "0, 0, 1, 1", expect = ACCEPTABLE, desc = "the one object, lent in turn")
    @Outcome(id = {"1, 0, 1, 1", "0, 1, 1, 1", "1, 1, 1, 1"}, expect = FORBIDDEN,
            desc = "a borrower held the object while the other did")
    @Outcome(expect = FORBIDDEN, desc = "a second object made, or the object lost")
    @State
    public static class OneObjectInTurn {
        final LendingPool<Integer> pool = numbered(1);
        final AtomicInteger holders = new AtomicInteger();

        /** 1 if another borrower held an object while this one did. */
        int borrowAndGiveBack() {
            Integer lent = borrow(pool);
            int overlap = holders.incrementAndGet() > 1 ? 1 : 0;
            holders.decrementAndGet();
            pool.giveBack(lent);
            return overlap;
        }

        @Actor
        public void first(IIII_Result r) {
            r.r1 = borrowAndGiveBack();
        }

        @Actor
        public void second(IIII_Result r) {
            r.r2 = borrowAndGiveBack();
        }

        @Arbiter
        public void counts(IIII_Result r) {
            r.r3 = pool.made();
            r.r4 = pool.idleCount();
        }
    }
}
