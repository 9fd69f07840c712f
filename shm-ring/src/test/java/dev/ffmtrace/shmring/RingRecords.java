package dev.ffmtrace.shmring;

import dev.ffmtrace.memory.Layouts;
import java.lang.foreign.MemorySegment;

/**
 * The record sequences the cross-process tests exchange, the Java half of
 * {@code native/src/ring_peer.c}: "all" is records n = 0 .. S-9 of length n+1 with byte
 * i = i*131 + n*17 + length; stress records carry a sequence number, a writer id and an
 * FNV-1a checksum.
 */
final class RingRecords {
    /** How long a test side waits for the other before failing. */
    static final long DEADLINE_NANOS = 60_000_000_000L;
    static final int STRESS_MIN_LENGTH = 12;

    private RingRecords() {
    }

    static byte pattern(long n, long length, long i) {
        return (byte) (i * 131 + n * 17 + length);
    }

    static long allCount(SharedRingBuffer buffer) {
        return buffer.maxRecordLength();
    }

    /** Reserves under the lock (try mode), yielding while full; fails on anything but OK or NO_SPACE. */
    static void reserve(SharedRingBuffer buffer, RecordSlot slot, long length, long deadline) {
        while (true) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out reserving a record of " + length + " bytes");
            }
            if (!buffer.lock(SharedRingBuffer.LockMode.TRY)) {
                throw new AssertionError("spinlock not acquired");
            }
            SharedRingBuffer.WriteResult result = buffer.beginWrite(slot, length);
            buffer.unlock();
            if (result == SharedRingBuffer.WriteResult.OK) {
                return;
            }
            if (result != SharedRingBuffer.WriteResult.NO_SPACE) {
                throw new AssertionError("beginWrite(" + length + ") returned " + result);
            }
            Thread.yield();
        }
    }

    /** Waits for the next record; fails on CORRUPT. */
    static void next(SharedRingBuffer buffer, RecordSlot slot, long deadline) {
        while (true) {
            SharedRingBuffer.ReadResult result = buffer.beginRead(slot);
            if (result == SharedRingBuffer.ReadResult.OK) {
                return;
            }
            if (result != SharedRingBuffer.ReadResult.NO_DATA) {
                throw new AssertionError("beginRead returned " + result + ", stats " + buffer.stats());
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for a record");
            }
            Thread.yield();
        }
    }

    static void writeAll(SharedRingBuffer buffer) {
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        RecordSlot slot = buffer.newSlot();
        for (long n = 0; n < allCount(buffer); n++) {
            long length = n + 1;
            reserve(buffer, slot, length, deadline);
            MemorySegment to = slot.buffer();
            long offset = slot.offset();
            for (long i = 0; i < length; i++) {
                to.set(Layouts.BYTE, offset + i, pattern(n, length, i));
            }
            buffer.endWrite(slot);
        }
    }

    static void readAll(SharedRingBuffer buffer) {
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        RecordSlot slot = buffer.newSlot();
        for (long n = 0; n < allCount(buffer); n++) {
            next(buffer, slot, deadline);
            if (slot.length() != n + 1) {
                throw new AssertionError("record " + n + " has length " + slot.length() + ", expected " + (n + 1));
            }
            byte[] payload = slot.payload().toArray(Layouts.BYTE);
            for (int i = 0; i < payload.length; i++) {
                if (payload[i] != pattern(n, n + 1, i)) {
                    throw new AssertionError("record " + n + " byte " + i + " is " + payload[i]
                            + ", expected " + pattern(n, n + 1, i));
                }
            }
            buffer.endRead(slot);
        }
    }

    static int fnv1a(byte[] bytes, int length) {
        int hash = 0x811C9DC5;
        for (int i = 0; i < length; i++) {
            hash = (hash ^ (bytes[i] & 0xFF)) * 0x01000193;
        }
        return hash;
    }
}
