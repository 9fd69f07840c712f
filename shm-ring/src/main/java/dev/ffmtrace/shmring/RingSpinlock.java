package dev.ffmtrace.shmring;

import static dev.ffmtrace.memory.AtomicSegment.*;
import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.*;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.shmring.SharedRingBuffer.LockMode;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.locks.LockSupport;

/**
 * The spinlock in the first 8 bytes of a SharedRingBuffer's metadata page, taken and
 * released as Perfetto's C++ does, plus the holder's identity, with which a waiter finds a
 * holder that died. Static over the metadata segment, so that the record paths keep the
 * segment in a local (see {@link SharedRingBuffer}).
 *
 * <pre>
 *  byte  0        1          2                 4                     8
 *        +--------+----------+-----------------+---------------------+
 *        | locked | poisoned | holder's PID    | holder's pid        |
 *        |        |          | namespace slot  | (in that namespace) |
 *        +--------+----------+-----------------+---------------------+
 *          Perfetto's          ffmtrace's, in Perfetto's padding
 * </pre>
 *
 * <p>Perfetto's spinlock stays held for good when its holder dies, and every later try costs
 * its writer about a second. Here the holder writes who it is into bytes 2..7 (Perfetto's
 * padding) in the same compare-and-set that takes the lock: its pid, and the slot of its
 * PID namespace in a table ffmtrace keeps after Perfetto's metadata (see
 * {@code SharedRingBufferDescriptor}); it clears both before releasing. (A peer that
 * exchanges the lock byte and then stores the two, like the C library of the tests, works
 * too, with a short window of no recorded holder.) A waiter checks, at each of its sleeps,
 * whether the recorded holder has exited; if it has and it is still recorded after the
 * check, it died holding the lock, and the waiter <em>poisons</em> the lock and fails, in
 * either {@link LockMode}. Poisoning rather than taking the lock over is deliberate: the dead
 * holder may have stopped half-way through {@code beginWrite}, leaving a reserved record
 * that will never be committed, so the reader could never get past it anyway; a poisoned
 * lock makes every later attempt, by ffmtrace or by Perfetto's C++, fail at once instead of
 * after a second, which is the clean way to end the session.
 *
 * <p><b>Exited</b> means gone or a zombie: a process killed but not yet reaped by its parent
 * still answers {@code kill(pid, 0)}, and a parent that never reaps would otherwise keep a
 * {@link LockMode#BLOCKING} waiter waiting for good. The waiter asks with a pidfd
 * ({@code pidfd_open}, then {@code poll}), which turns readable when its process exits,
 * reaped or not, whoever the parent is, and which needs no {@code /proc}. Where pidfds are
 * missing (Linux before 5.3) or filtered, only a holder that no longer exists is found dead.
 *
 * <p><b>PID namespaces.</b> A pid is a number in its process's PID namespace; the same
 * number names another process, or none, in another namespace, so a waiter that read it
 * there could judge a live holder dead. So every process that maps the buffer enters the
 * id of its PID namespace (the inode of {@code /proc/self/ns/pid}) in the table, once, and
 * a holder records its namespace's slot next to its pid, in the same atomic step: a waiter
 * looks at the pid only when the slot is its own namespace's. A holder of another
 * namespace is never judged, and the lock behaves there as Perfetto's does: a
 * {@link LockMode#TRY} wait gives up after about a second, a BLOCKING one waits. The same
 * goes for a holder whose namespace could not be recorded (no {@code /proc}, a full table),
 * for one that is one of our own threads, a Perfetto peer (which records no holder), or a
 * peer that died between taking the lock and recording itself. A peer can write anything
 * into the metadata page, but at worst that makes a waiter poison the lock, which such a
 * peer can do anyway.
 *
 */
final class RingSpinlock {
    static final int ATTEMPTS_PER_SLEEP = 1024;
    static final int SLEEPS = 1000;
    static final long SLEEP_MICROS = 1000;

    /** In the first 8 bytes read as one little-endian long: the locked and poisoned bytes, then the holder. */
    private static final long LOCK_AND_POISON_MASK = 0xFFFFL;
    private static final int HOLDER_SHIFT = 8 * SPINLOCK_HOLDER_NAMESPACE_OFFSET;

    private RingSpinlock() {
    }

    /**
     * The first 8 bytes while held by {@code pid} of the namespace in {@code namespaceSlot}:
     * the locked byte set, the slot in bytes 2..3, the pid in 4..7.
     */
    static long lockedBy(int namespaceSlot, int pid) {
        return 1L | ((long) namespaceSlot << HOLDER_SHIFT) | ((long) pid << 32);
    }

    /**
     * Our PID namespace's slot in the table after Perfetto's metadata: the first entry that
     * holds its id, or the first free one, claimed with a compare-and-set. Entries are set once
     * and never changed, so every process of one namespace finds the same slot. 0 when the id
     * is unknown or the table is full (or filled with garbage by a peer): our holds are then
     * never judged, and we judge nobody's.
     */
    static int registerPidNamespace(MemorySegment meta) {
        long namespace = Os.pidNamespaceId();
        if (namespace == 0) {
            return 0;
        }
        for (int i = 0; i < PID_NAMESPACE_SLOTS; i++) {
            long seen = compareAndExchangeLong(meta, PID_NAMESPACES_OFFSET + 8L * i, 0, namespace);
            if (seen == 0 || seen == namespace) {
                return i + 1;
            }
        }
        return 0;
    }

    /**
     * Perfetto's fast path, one attempt. Perfetto's is one exchange; expecting the free
     * lock's usual word (all zero: no holder, no padding written) takes it with one
     * compare-and-set, where a load first would fetch the cache line shared and then need
     * a second trip to own it.
     */
    static boolean tryLock(MemorySegment meta, long lockedBy) {
        long word = compareAndExchangeLong(meta, SPINLOCK_LOCKED_OFFSET, 0, lockedBy);
        return word == 0 || acquireFrom(meta, word, lockedBy);
    }

    /**
     * If {@code word}, the first 8 bytes as last seen, is neither locked nor poisoned, a
     * compare-and-set that sets the locked byte and writes us as the holder (namespace slot
     * and pid) in the same atomic step; the poisoned byte is 0 in both. Perfetto exchanges the
     * locked byte alone; a CAS of the enclosing word is the same acquisition to a peer that
     * does (the AtomicSegment byte RMWs work the same way), and it leaves no moment in which
     * the lock is held with no holder recorded.
     */
    private static boolean acquireFrom(MemorySegment meta, long word, long lockedBy) {
        return (word & LOCK_AND_POISON_MASK) == 0 && compareAndSetLong(meta, SPINLOCK_LOCKED_OFFSET, word, lockedBy);
    }

    /**
     * Perfetto's slow path: {@value #ATTEMPTS_PER_SLEEP} attempts between sleeps of
     * {@value #SLEEP_MICROS} µs, for good in BLOCKING mode and {@value #SLEEPS} rounds in
     * TRY mode; at each sleep, a poisoned lock ends the wait, and a dead holder poisons it.
     * Counts the sleeps into client_spinlock_blocked_us and a failure into failed_spinlocks.
     */
    static boolean lockSlow(MemorySegment meta, long lockedBy, LockMode mode) {
        long sleeps = 0;
        boolean locked = false;
        if (!isPoisoned(meta)) {
            long limit = (long) ATTEMPTS_PER_SLEEP * SLEEPS;
            for (long attempt = 1; mode == LockMode.BLOCKING || attempt < limit; attempt++) {
                // A relaxed load first, as Perfetto tests before it exchanges.
                if (acquireFrom(meta, getLongOpaque(meta, SPINLOCK_LOCKED_OFFSET), lockedBy)) {
                    locked = true;
                    break;
                }
                if ((attempt & (ATTEMPTS_PER_SLEEP - 1)) == 0) {
                    if (isPoisoned(meta)) {
                        break;
                    }
                    if (holderDied(meta, lockedBy)) {
                        poison(meta);
                        break;
                    }
                    LockSupport.parkNanos(SLEEP_MICROS * 1000);
                    sleeps++;
                } else {
                    Thread.onSpinWait();
                }
            }
        }
        if (sleeps > 0) {
            getAndAddLong(meta, CLIENT_SPINLOCK_BLOCKED_US_OFFSET, sleeps * SLEEP_MICROS);
        }
        if (!locked) {
            getAndAddLong(meta, FAILED_SPINLOCKS_OFFSET, 1);
        }
        return locked;
    }

    /**
     * Whether the lock is held by a process of our PID namespace (the one in {@code lockedBy},
     * our own word) that has exited (gone, or a zombie not yet reaped). The holder's slot and
     * pid are read in one load, so they are one holder's; a pid of another namespace (another
     * slot) would name another process here and is not looked at. A holder clears itself
     * before releasing, so one still recorded, unchanged, after its process was found exited
     * died holding the lock (a pid reused since then only delays the verdict).
     */
    private static boolean holderDied(MemorySegment meta, long lockedBy) {
        int ourSlot = (int) (lockedBy >>> HOLDER_SHIFT) & 0xFFFF;
        int ourPid = (int) (lockedBy >>> 32);
        long word = getLongVolatile(meta, SPINLOCK_LOCKED_OFFSET);
        int holder = (int) (word >>> 32);
        int slot = (int) (word >>> HOLDER_SHIFT) & 0xFFFF;
        if (ourSlot == 0 || slot != ourSlot || holder <= 0 || holder == ourPid) {
            return false;
        }
        if (!Os.processExited(holder)) {
            return false;
        }
        long now = getLongVolatile(meta, SPINLOCK_LOCKED_OFFSET);
        return (now & 0xFF) != 0 && now >>> HOLDER_SHIFT == word >>> HOLDER_SHIFT;
    }

    /** Releases the lock: clears the holder's pid and namespace slot, then a release store of 0. */
    static void unlock(MemorySegment meta) {
        putIntOpaque(meta, SPINLOCK_HOLDER_PID_OFFSET, 0);
        putShortOpaque(meta, SPINLOCK_HOLDER_NAMESPACE_OFFSET, (short) 0);
        putByteRelease(meta, SPINLOCK_LOCKED_OFFSET, (byte) 0);
    }

    /** Perfetto's {@code PoisonSpinlock}: every later attempt fails at once, in every process. */
    static void poison(MemorySegment meta) {
        putByteOpaque(meta, SPINLOCK_POISONED_OFFSET, (byte) 1);
    }

    static boolean isPoisoned(MemorySegment meta) {
        return getByteOpaque(meta, SPINLOCK_POISONED_OFFSET) != 0;
    }
}
