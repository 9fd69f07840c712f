package dev.ffmtrace.tracing.sdk.internal;

import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Supplier;

/**
 * At most {@code capacity} objects, made lazily and lent to one borrower at a time: the
 * writers an instance shares among virtual threads. A borrower parks only when every
 * object is lent; otherwise a borrow and its give-back are a semaphore CAS and a slot CAS
 * each, with no allocation.
 *
 * <pre>
 *   permits (Semaphore, capacity)      idle slots (CAS null &lt;-&gt; object)
 *   borrow:   acquire one  ---------&gt;  take any idle object, else make one (made &lt; capacity)
 *   giveBack: put into a null slot  --&gt;  then release the permit
 * </pre>
 *
 * Why a borrower holding a permit always finds an object: permits bound the borrowers, and
 * an object leaves its borrower's hands only into a slot, before the permit goes back, so
 * at every moment the idle and the not-yet-made objects are at least the borrowers still
 * looking. Those may race for the same slot: the loser looks again.
 *
 * @param <T> what is lent
 */
public final class LendingPool<T> {
    private final Supplier<? extends T> factory;
    private final Semaphore permits;
    private final AtomicReferenceArray<T> idle;
    private final AtomicInteger made = new AtomicInteger();

    /**
     * @param capacity how many objects there may be, at least 1
     * @param factory  makes one; called at most {@code capacity} times, by the borrower
     *                 that finds none idle
     */
    public LendingPool(int capacity, Supplier<? extends T> factory) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity " + capacity + " < 1");
        }
        this.factory = factory;
        this.permits = new Semaphore(capacity);
        this.idle = new AtomicReferenceArray<>(capacity);
    }

    /**
     * An idle object, a new one while fewer than the capacity are made, else the next
     * given back (the caller parks until then).
     *
     * @throws InterruptedException if interrupted while parked; nothing is lent then
     */
    public T borrow() throws InterruptedException {
        permits.acquire();
        try {
            return takeOrMake();
        } catch (RuntimeException | Error e) {
            permits.release();
            throw e;
        }
    }

    /** Returns what {@link #borrow} lent; the caller no longer touches it. */
    public void giveBack(T lent) {
        int n = idle.length();
        // A null slot exists: at most n are made and this one is in no slot.
        for (int i = 0; ; i = i + 1 == n ? 0 : i + 1) {
            if (idle.getAcquire(i) == null && idle.compareAndSet(i, null, lent)) {
                break;
            }
        }
        permits.release();
    }

    /** How many objects were made so far. */
    public int made() {
        return made.get();
    }

    /** How many made objects are idle now (a snapshot). */
    public int idleCount() {
        int count = 0;
        for (int i = 0; i < idle.length(); i++) {
            if (idle.get(i) != null) {
                count++;
            }
        }
        return count;
    }

    private T takeOrMake() {
        int n = idle.length();
        while (true) {
            // From the first slot, as give-backs fill it: the object used last is lent next.
            for (int i = 0; i < n; i++) {
                T object = idle.getAcquire(i);
                if (object != null && idle.compareAndSet(i, object, null)) {
                    return object;
                }
            }
            int count = made.get();
            if (count < n && made.compareAndSet(count, count + 1)) {
                try {
                    return factory.get();
                } catch (RuntimeException | Error e) {
                    made.decrementAndGet();
                    throw e;
                }
            }
            // Another borrower took what this one saw, or a give-back filled a slot already
            // passed: by the permits' count an object is there, look again.
            Thread.onSpinWait();
        }
    }
}
