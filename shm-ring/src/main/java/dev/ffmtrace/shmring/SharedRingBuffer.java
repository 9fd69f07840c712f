package dev.ffmtrace.shmring;

import static dev.ffmtrace.memory.AtomicSegment.*;
import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.*;

import dev.ffmtrace.memory.AtomicSegment;
import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.memory.MemoryFile;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.RingMapping;
import dev.ffmtrace.memory.Seals;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * heapprofd's SharedRingBuffer: a multi-writer, single-reader FIFO of length-prefixed
 * records in shared memory, byte-compatible with Perfetto's C++ (layout in
 * {@code SharedRingBufferDescriptor} in the unexported {@code abi} package).
 *
 * <p>The service {@link #create creates} the buffer in a sealed memfd and sends {@link #fd()}
 * to the client, which {@link #attach attaches}. Writers take the spinlock, reserve a
 * record ({@link #beginWrite}: the length word is zeroed, then the write position is
 * advanced with release), drop the lock, fill the payload and commit it
 * ({@link #endWrite}: release-store of the length). Writers may commit out of order; the
 * one reader ({@link #beginRead}/{@link #endRead}) stops at the first record whose length
 * is still 0 and hands freed space back by advancing the read position with release.
 *
 * <h2>Positions are stored, not added to</h2>
 * Perfetto advances write_pos with a release fetch-add and read_pos with a relaxed one.
 * Only the writer holding the spinlock writes write_pos, and only the one reader writes
 * read_pos, so here each side stores the position it computed from the one it loaded,
 * with release: the same values in the same order for every peer that keeps the protocol,
 * Perfetto's included, but without a locked instruction (which drains the store buffer
 * and stalls the core until it owns the line) on either side's record path. The writer's
 * store is ordered after the zeroed length word and before the unlock; the reader's after
 * its reads of the payload, so no writer reuses the space before the reader is done. The
 * reader also hands freed space back in batches rather than per record (see
 * {@link #endRead}), so in steady state the positions' cache line stays with the writers.
 *
 * <p>Everything in the metadata page may be written by the other process at any time, so
 * positions are read once, checked (8-aligned, write not behind read, at most the ring
 * size apart) and only the local copies are used; a record's length is bounded by the
 * data available before a byte of it is read. Bad input is a {@link WriteResult#CORRUPT}
 * or {@link ReadResult#CORRUPT} result, counted in the stats, never an exception and never
 * an access outside the mapping.
 *
 * <h2>Dead lock holders</h2>
 * A holder that dies with the spinlock held is found by the next waiter, which then
 * poisons the lock rather than waiting for good: see {@link RingSpinlock}.
 *
 * <h2>Uncommitted records</h2>
 * A committed zero-length record cannot be told from a reserved one, and it blocks
 * Perfetto's reader for good. Writers here refuse zero-length records. The reader
 * remembers when it first found the record at the read position uncommitted; once that
 * position has stayed uncommitted longer than {@link #uncommittedRecordTimeout(Duration)}
 * (5 s unless set), {@link #beginRead} reports {@link ReadResult#CORRUPT} instead of
 * {@link ReadResult#NO_DATA}, so a service can tear the connection down rather than wait
 * forever.
 *
 * <h2>Threads</h2>
 * Any number of threads (in any number of processes) may write, each with its own
 * {@link RecordSlot}, or with {@link #tryWrite(byte[])}, which needs no slot; one thread
 * at a time may read, through one buffer object, which keeps the reader's position between
 * calls (a read through a second object is caught when the first next hands back space,
 * and counted corrupt). {@link #beginWrite} must be called by the thread that took the
 * spinlock through the same buffer object, and throws otherwise; {@link #stats()} expects
 * the caller to hold it, as Perfetto's does.
 *
 * <p>At about 800 lines, half of them comments, this class holds the protocol's two sides
 * and its public types: the writer's and the reader's paths check the same positions'
 * invariants, update the same stats and must see the same fields in locals to stay small
 * enough to inline. The spinlock ({@link RingSpinlock}), the size rules, the reader's
 * cursor and the slots live in classes of their own.
 */
public final class SharedRingBuffer implements AutoCloseable {
    /** How {@link #lock} waits for a held spinlock. */
    public enum LockMode {
        /** Perfetto's Try mode: 1024 tries between 1 ms sleeps, giving up after 1000 rounds (about a second). */
        TRY,
        /** Perfetto's Blocking mode: never gives up (unless the lock is poisoned or its holder is found dead). */
        BLOCKING
    }

    /** The outcome of {@link #beginWrite}. */
    public enum WriteResult {
        /** The slot holds a reserved record: fill its payload, then {@link #endWrite}. */
        OK,
        /** Not enough free space now; counted in num_writes_overflow. */
        NO_SPACE,
        /** Larger than the ring can ever hold (or than the 32-bit length word); counted in num_writes_overflow. */
        TOO_BIG,
        /** The read and write positions are inconsistent; counted in num_writes_corrupt. */
        CORRUPT,
        /**
         * {@link #tryWrite} only: the spinlock was not taken (held for the whole of a
         * {@link LockMode#TRY} wait, poisoned, or its holder died); counted in failed_spinlocks.
         */
        LOCK_FAILED
    }

    /** The outcome of {@link #beginRead}. */
    public enum ReadResult {
        /** The slot holds the next committed record: use its payload, then {@link #endRead}. */
        OK,
        /** Nothing committed at the read position (yet); counted in num_reads_nodata. */
        NO_DATA,
        /**
         * Positions inconsistent, a length running past the written data, or a record left
         * uncommitted too long; counted in num_reads_corrupt. The read position does not move.
         */
        CORRUPT
    }

    /** Perfetto's {@code SharedRingBuffer::ErrorState}, as the client reports it to the service. */
    public enum ErrorState {
        NONE(0), HIT_TIMEOUT(1), INVALID_STACK_BOUNDS(2),
        /** Read back when the shared word holds a value Perfetto does not define; cannot be set. */
        UNRECOGNIZED(-1);

        private final long code;

        ErrorState(long code) {
            this.code = code;
        }

        /** The value stored in the metadata page. */
        public long code() {
            return code;
        }

        static ErrorState ofCode(long code) {
            if (code == 0) {
                return NONE;
            }
            if (code == 1) {
                return HIT_TIMEOUT;
            }
            return code == 2 ? INVALID_STACK_BOUNDS : UNRECOGNIZED;
        }
    }

    /**
     * What Perfetto's {@code GetStats} returns: the shared stats block, with the last three
     * fields filled from the spinlock counters and the error state.
     */
    public record Stats(long bytesWritten, long numWritesSucceeded, long numWritesCorrupt, long numWritesOverflow,
                        long numReadsSucceeded, long numReadsCorrupt, long numReadsNodata,
                        long failedSpinlocks, long clientSpinlockBlockedUs, long errorState) {
    }

    /** Perfetto's ScopedSpinlock: tries per sleep, sleeps before giving up, and the sleep. */
    private static final String MEMFD_NAME = "heapprofd_ringbuf";
    private static final long DEFAULT_UNCOMMITTED_TIMEOUT_NANOS = 5_000_000_000L;
    private static final long MAX_HAND_BACK_BATCH = 64 * 1024;
    /** The results {@link #reserve} returns as the complement of their ordinal. */
    private static final WriteResult[] REFUSALS = WriteResult.values();

    private final RingMapping mapping;
    /**
     * The metadata page and both copies of the ring. The record paths copy them into locals
     * and use {@link AtomicSegment}'s static accessors: C2 reloads fields after every fence,
     * and the loads from buffer to wrapper to segment before each access cost about 10 ns of
     * a 64-byte record's 40 in a single-thread write-then-read loop.
     */
    private final MemorySegment meta;
    private final MemorySegment ring;
    private final long size;
    private final long mask;
    /** The spinlock's first 8 bytes while we hold it: {@link RingSpinlock#lockedBy}. */
    private final long lockedByUs;

    /**
     * The thread that holds the spinlock through this object, for {@link #beginWrite}'s check.
     * Written only while the lock is held, so a thread finds itself here only while it holds
     * the lock; a field of its own, padded, because it changes hands with the lock while
     * writers read this object's fields on every record.
     */
    private final LockHolder lockHolder = new LockHolder();
    /** Set by the reader; where and since when a record stays uncommitted is kept in its cursor. */
    private long uncommittedTimeoutNanos = DEFAULT_UNCOMMITTED_TIMEOUT_NANOS;
    /** The reader's clock for that timeout: System.nanoTime, or a test's. */
    private LongSupplier readerClock = System::nanoTime;
    private final long handBackBatch;
    /** The reader's own state, allocated after the fields above that writers read on every record. */
    private final ReaderCursor cursor = new ReaderCursor();

    private SharedRingBuffer(RingMapping mapping, MemorySegment metadata, MemorySegment ringSegment, long size) {
        this.mapping = mapping;
        this.meta = metadata;
        this.ring = ringSegment;
        this.size = size;
        this.mask = size - 1;
        this.handBackBatch = Math.min(size / 16, MAX_HAND_BACK_BATCH);
        this.lockedByUs = RingSpinlock.lockedBy(RingSpinlock.registerPidNamespace(metadata), Os.pid());
    }

    /**
     * The service side: a new buffer with a ring of {@code ringSize} bytes in a memfd of
     * one page more, sealed against shrinking and growing, all metadata zero.
     *
     * @throws IllegalArgumentException if the size breaks Perfetto's rules (a power of two,
     *         a multiple of the page size, at least one page)
     */
    public static SharedRingBuffer create(long ringSize) {
        return map(MemoryFile.create(MEMFD_NAME, RingSizes.fileSizeFor(ringSize)));
    }

    /**
     * The client side: attaches to a buffer's fd received from the service. Like Perfetto's
     * {@code Attach}, the size comes from {@code fstat} and must be one page plus a valid
     * ring; the metadata is not checked (every later operation checks what it reads).
     *
     * <p>The buffer maps a duplicate of {@code fd}: the caller keeps its fd and closes it
     * when it likes, so a second handle on a ring never closes the first one's fd.
     *
     * @param seals {@link Seals#REQUIRED} for a memfd sealed against shrinking and growing,
     *     as ffmtrace's {@link #create} and Perfetto's in-tree Android builds make;
     *     {@link Seals#NOT_REQUIRED} for a ring made by Perfetto's C++ on Linux (an unlinked
     *     temporary file, which cannot be sealed), from a service you trust not to shrink it
     * @throws IllegalArgumentException "Could not attach to fd" if the fd is not open, not a
     *     shared memory file, empty or unsealed when seals are required, and "SharedRingBuffer
     *     size is invalid (n)" for a size that is not one page plus a power-of-two ring of
     *     whole pages
     */
    public static SharedRingBuffer attach(int fd, Seals seals) {
        if (fd < 0) {
            throw new IllegalArgumentException("Could not attach to fd " + fd + ": not a file descriptor");
        }
        MemoryFile file;
        try {
            file = MemoryFile.attach(MemoryFile.duplicate(fd), seals);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("Could not attach to fd " + fd + ": " + e.getMessage(), e);
        }
        return mapChecked(file);
    }

    /**
     * Attaches to a ring by its path: another process's fd as {@code /proc/PID/fd/N}, or a
     * file under {@code /dev/shm}; checked as {@link #attach(int, Seals)} checks an fd.
     */
    public static SharedRingBuffer open(Path path, Seals seals) {
        MemoryFile file;
        try {
            file = MemoryFile.open(path, seals);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("Could not attach to " + path + ": " + e.getMessage(), e);
        }
        return mapChecked(file);
    }

    private static SharedRingBuffer mapChecked(MemoryFile file) {
        try {
            RingSizes.checkFileSize(file.size());
        } catch (IllegalArgumentException e) {
            file.close();
            throw e;
        }
        return map(file);
    }

    /**
     * A buffer in ordinary native memory from {@code arena}, for threads of one process
     * (tests, jcstress). The two copies of the ring are separate memory here rather than one
     * file mapped twice; the protocol gives the same results either way, because writer and
     * reader address every byte of a record at the same offset, but such a buffer cannot be
     * shared with another process.
     */
    public static SharedRingBuffer allocate(long ringSize, Arena arena) {
        long page = Os.pageSize();
        RingSizes.fileSizeFor(ringSize);
        MemorySegment memory = arena.allocate(page + 2 * ringSize, page);
        return new SharedRingBuffer(null, memory.asSlice(0, page), memory.asSlice(page, 2 * ringSize), ringSize);
    }

    private static SharedRingBuffer map(MemoryFile file) {
        RingMapping mapping = RingMapping.map(file, Os.pageSize(), GUARD_SIZE);
        return new SharedRingBuffer(mapping, mapping.header(), mapping.ring(), mapping.ringSize());
    }

    /** The ring size S in bytes (without the metadata page or the second copy). */
    public long size() {
        return size;
    }

    /** The largest payload a record can carry: S - 8. */
    public long maxRecordLength() {
        return Math.min(size - RECORD_HEADER_SIZE, MAX_RECORD_LENGTH);
    }

    /** The memfd, to send to the peer; it stays owned by this buffer. */
    public int fd() {
        if (mapping == null) {
            throw new IllegalStateException("an in-process buffer has no file descriptor");
        }
        return mapping.file().fd();
    }

    /** The metadata page, for inspection (golden tests, diagnostics). */
    public MemorySegment metadata() {
        return meta;
    }

    /** A slot for records of this buffer; make one per writer thread and one for the reader, and reuse it. */
    public RecordSlot newSlot() {
        return new RecordSlot(this, ring);
    }

    // ---- spinlock ----

    /**
     * Takes the spinlock, as Perfetto's {@code AcquireLock}: a poisoned lock fails at once;
     * otherwise one attempt, then the slow path of {@code mode}. On failure failed_spinlocks
     * is incremented; the time spent asleep (1000 µs a sleep, as Perfetto counts it) is added
     * to client_spinlock_blocked_us. A holder found dead poisons the lock (see
     * {@link RingSpinlock}).
     *
     * @return whether the caller now holds the lock and must {@link #unlock} it
     */
    public boolean lock(LockMode mode) {
        MemorySegment meta = this.meta;
        long lockedBy = lockedByUs;
        if (RingSpinlock.tryLock(meta, lockedBy) || RingSpinlock.lockSlow(meta, lockedBy, mode)) {
            lockHolder.thread = Thread.currentThread();
            return true;
        }
        return false;
    }

    /** Releases the spinlock: clears the holder thread, then {@link RingSpinlock#unlock}. */
    public void unlock() {
        lockHolder.thread = null;
        RingSpinlock.unlock(meta);
    }

    /** Perfetto's {@code PoisonSpinlock}: every later {@link #lock} fails at once, in both processes. */
    public void poisonSpinlock() {
        RingSpinlock.poison(meta);
    }

    public boolean isSpinlockPoisoned() {
        return RingSpinlock.isPoisoned(meta);
    }

    // ---- writer ----

    /**
     * Reserves a record of {@code length} payload bytes; the calling thread holds the spinlock,
     * taken by {@link #lock} on this buffer object. On {@link WriteResult#OK} the slot
     * describes the payload, which the caller fills (after unlocking, typically) and commits
     * with {@link #endWrite}. Counts bytes_written and num_writes_succeeded on success, as
     * Perfetto does at reservation time.
     *
     * @throws IllegalArgumentException if {@code length} is 0 (a committed zero-length record
     *         would look uncommitted forever) or negative, or the slot is another buffer's
     * @throws IllegalStateException if the calling thread does not hold the spinlock through
     *         this buffer object, or the slot still holds a record
     */
    public WriteResult beginWrite(RecordSlot slot, long length) {
        if (slot.owner != this || slot.state != RecordSlot.IDLE || lockHolder.thread != Thread.currentThread()) {
            throw writeMisuse(slot);
        }
        if (length <= 0) {
            throw badLength(length);
        }
        long header = reserve(length);
        if (header < 0) {
            return REFUSALS[(int) ~header];
        }
        slot.headerOffset = header;
        slot.length = length;
        slot.stride = stride(length);
        slot.state = RecordSlot.WRITING;
        return WriteResult.OK;
    }

    /**
     * Reserves a record of {@code length} (at least 1) payload bytes under the spinlock and
     * returns the offset of its header in the ring, or, when refused, the complement of the
     * result's ordinal: a long rather than a result object keeps {@link #tryWrite} free of a
     * slot.
     */
    private long reserve(long length) {
        MemorySegment meta = this.meta;
        long writePos = getLongAcquire(meta, WRITE_POS_OFFSET);
        // Acquire (Perfetto: relaxed) so that the reader's last reads of the space freed by
        // this read_pos come before the payload stores into it; a plain load on x86.
        long readPos = getLongAcquire(meta, READ_POS_OFFSET);
        long stride = stride(length);
        if (isCorrupt(readPos, writePos) || length > MAX_RECORD_LENGTH || stride > size - (writePos - readPos)) {
            return ~writeRefused(readPos, writePos, length, stride).ordinal();
        }
        long header = writePos & mask;
        addToStat(meta, STATS_BYTES_WRITTEN_OFFSET, length);
        addToStat(meta, STATS_NUM_WRITES_SUCCEEDED_OFFSET, 1);
        // Zero before publishing: a reader that sees the new write_pos must not take the
        // stale bytes there for a length. The release store below orders this one.
        putIntOpaque(ring, header + RECORD_LENGTH_OFFSET, 0);
        // The spinlock makes this the only writer of write_pos (see the class comment).
        putLongRelease(meta, WRITE_POS_OFFSET, writePos + stride);
        return header;
    }

    /** Why {@link #reserve} cannot reserve the record, counted; out of line to keep the reserving path small. */
    private WriteResult writeRefused(long readPos, long writePos, long length, long stride) {
        if (isCorrupt(readPos, writePos)) {
            addToStat(meta, STATS_NUM_WRITES_CORRUPT_OFFSET, 1);
            return WriteResult.CORRUPT;
        }
        addToStat(meta, STATS_NUM_WRITES_OVERFLOW_OFFSET, 1);
        return length > MAX_RECORD_LENGTH || stride > size ? WriteResult.TOO_BIG : WriteResult.NO_SPACE;
    }

    /**
     * Writes {@code bytes} as one record in one call, as Perfetto's client sends a wire
     * message: takes the spinlock in {@link LockMode#TRY} mode, reserves, drops the lock,
     * copies and commits. TRY, as Perfetto's {@code SendWireMessage} does, so a stuck or dead
     * holder costs this writer about a second rather than the thread; a caller that must not
     * lose the record retries on {@link WriteResult#LOCK_FAILED} and
     * {@link WriteResult#NO_SPACE} (heapprofd's blocking clients back off and retry). Any
     * writer thread may call it, with no slot, and allocates nothing; the lock is never held
     * when it returns or throws.
     *
     * @return {@link WriteResult#OK} when the record is committed, otherwise why nothing was
     *         written
     * @throws IllegalArgumentException if {@code bytes} is empty (a zero-length record would
     *         look uncommitted forever)
     * @throws IllegalStateException if the calling thread already holds the spinlock through
     *         this buffer object (the lock is not reentrant: the TRY wait would only time out)
     */
    public WriteResult tryWrite(byte[] bytes) {
        int length = bytes.length;
        long header = lockAndReserve(length);
        if (header < 0) {
            return REFUSALS[(int) ~header];
        }
        // The array form of copy: a heap segment over bytes would be an allocation.
        MemorySegment.copy(bytes, 0, ring, Layouts.BYTE, header + RECORD_HEADER_SIZE, length);
        putIntRelease(ring, header + RECORD_LENGTH_OFFSET, length);
        return WriteResult.OK;
    }

    /**
     * {@link #tryWrite(byte[])} for {@code length} bytes of {@code src} from {@code offset}.
     * The source is checked before anything is reserved; closing its arena from another thread
     * during the call leaves a reserved record that is never committed, which the reader
     * reports as {@link ReadResult#CORRUPT} after {@link #uncommittedRecordTimeout(Duration)}.
     *
     * @throws IndexOutOfBoundsException if the bytes are not all inside {@code src}
     * @throws IllegalStateException if {@code src} is not alive, or as {@link #tryWrite(byte[])}
     * @throws WrongThreadException if {@code src} is confined to another thread
     */
    public WriteResult tryWrite(MemorySegment src, long offset, long length) {
        Objects.checkFromIndexSize(offset, length, src.byteSize());
        if (!src.scope().isAlive()) {
            throw new IllegalStateException("the source segment's arena is closed");
        }
        if (!src.isAccessibleBy(Thread.currentThread())) {
            throw new WrongThreadException("the source segment is confined to another thread");
        }
        long header = lockAndReserve(length);
        if (header < 0) {
            return REFUSALS[(int) ~header];
        }
        MemorySegment.copy(src, offset, ring, header + RECORD_HEADER_SIZE, length);
        putIntRelease(ring, header + RECORD_LENGTH_OFFSET, (int) length);
        return WriteResult.OK;
    }

    /** {@link #tryWrite}'s locked part: {@link #reserve}'s result, or LOCK_FAILED's complement. */
    private long lockAndReserve(long length) {
        if (length <= 0) {
            throw badLength(length);
        }
        if (lockHolder.thread == Thread.currentThread()) {
            throw new IllegalStateException("tryWrite takes the spinlock itself: unlock() first");
        }
        if (!lock(LockMode.TRY)) {
            return ~WriteResult.LOCK_FAILED.ordinal();
        }
        try {
            return reserve(length);
        } finally {
            unlock();
        }
    }

    /** Commits the record reserved in {@code slot}: a release store of its length, so the payload is visible first. */
    public void endWrite(RecordSlot slot) {
        if (slot.owner != this || slot.state != RecordSlot.WRITING) {
            throw slotMisuse(slot, "endWrite needs a slot reserved by beginWrite");
        }
        putIntRelease(ring, slot.headerOffset + RECORD_LENGTH_OFFSET, (int) slot.length);
        slot.state = RecordSlot.IDLE;
    }

    // ---- reader ----

    /**
     * The next committed record, if any, into {@code slot}; the single reader only, no lock.
     * The read position moves only in {@link #endRead}, so calling this again without it
     * returns the same record.
     *
     * <p>The reader keeps its read position, and the write position it last loaded, between
     * calls (see {@link ReaderCursor}): while that write position still covers the next record
     * it is not loaded again, and the reader does not touch the positions' cache line, which
     * the writers take for every record. A write position loaded earlier is a smaller one,
     * which the protocol already allows a reader to see; the record's length word is still
     * loaded with acquire, so an uncommitted record still reads as 0. Before it returns
     * without a record, the reader hands back the space of the records it has freed (see
     * {@link #endRead}).
     *
     * @throws IllegalStateException if the slot still holds a record
     */
    public ReadResult beginRead(RecordSlot slot) {
        if (slot.owner != this || slot.state != RecordSlot.IDLE) {
            throw slotMisuse(slot, "beginRead needs an idle slot of this buffer");
        }
        ReaderCursor cursor = this.cursor;
        if (!cursor.synced && !syncCursor(cursor)) {
            return readCorrupt(cursor);
        }
        long readPos = cursor.readPos;
        long available = cursor.writePos - readPos;
        if (available < RECORD_HEADER_SIZE) {
            long writePos = getLongAcquire(meta, WRITE_POS_OFFSET);
            if (isCorrupt(readPos, writePos)) {
                return readCorrupt(cursor);
            }
            cursor.writePos = writePos;
            available = writePos - readPos;
            if (available < RECORD_HEADER_SIZE) {
                return readNoData(cursor);
            }
        }
        long header = readPos & mask;
        long length = getIntAcquire(ring, header + RECORD_LENGTH_OFFSET) & 0xFFFF_FFFFL;
        if (length == 0) {
            return uncommitted(cursor, readPos);
        }
        // Write positions advance by whole records, so one that covers a record's header
        // covers all of it: a longer record is corrupt whenever the position was loaded.
        long stride = stride(length);
        if (stride > available) {
            return readCorrupt(cursor);
        }
        cursor.stalledPosition = -1;
        slot.headerOffset = header;
        slot.length = length;
        slot.stride = stride;
        slot.state = RecordSlot.READING;
        return ReadResult.OK;
    }

    /**
     * Loads both positions into the cursor, as Perfetto's reader does on every call: the first
     * time, and after anything found wrong. Returns false, leaving the cursor unsynced, if
     * they are inconsistent.
     */
    private boolean syncCursor(ReaderCursor cursor) {
        long writePos = getLongAcquire(meta, WRITE_POS_OFFSET);
        long readPos = getLongOpaque(meta, READ_POS_OFFSET);
        if (isCorrupt(readPos, writePos)) {
            return false;
        }
        cursor.readPos = readPos;
        cursor.handedBackPos = readPos;
        cursor.writePos = writePos;
        cursor.synced = true;
        return true;
    }

    /**
     * Frees the record read into {@code slot}. Its space goes back to the writers, with the
     * space of the records freed before it, when the freed bytes not yet handed back reach
     * {@link #handBackBatch()}, and otherwise when {@link #beginRead} finds no record (or a
     * corrupt one). A reader that keeps calling beginRead until it finds none, as heapprofd's
     * service does, so hands back everything it read; while it reads, writers see free space
     * that lags it by less than one batch.
     *
     * <p>Handing back is a release store of the new read_pos (Perfetto: a relaxed fetch-add per
     * record), ordered after every read of the payloads it frees, and the count of reads in
     * num_reads_succeeded. Batching leaves the positions' and the stats' cache lines with the
     * writers, instead of pulling both to the reader's core for every record.
     */
    public void endRead(RecordSlot slot) {
        if (slot.owner != this || slot.state != RecordSlot.READING) {
            throw slotMisuse(slot, "endRead needs a slot filled by beginRead");
        }
        ReaderCursor cursor = this.cursor;
        long readPos = cursor.readPos + slot.stride;
        cursor.readPos = readPos;
        cursor.readsNotHandedBack++;
        slot.state = RecordSlot.IDLE;
        if (readPos - cursor.handedBackPos >= handBackBatch && !handBack(cursor)) {
            readCorrupt(cursor);
        }
    }

    /**
     * Bytes of freed records after which {@link #endRead} hands their space back at once: a
     * sixteenth of the ring, at most 64 KiB, so a batch never holds back a useful part of it.
     */
    public long handBackBatch() {
        return handBackBatch;
    }

    /**
     * Hands the space of the records freed since the last call back to the writers: stores
     * read_pos, with release, and counts the reads. Returns false if read_pos was not where
     * this reader had left it (a second reader, or a peer writing it); the reader's own
     * position replaces it either way, as it is the only writer of read_pos.
     */
    private boolean handBack(ReaderCursor cursor) {
        long readPos = cursor.readPos;
        long handedBack = cursor.handedBackPos;
        if (readPos == handedBack) {
            return true;
        }
        MemorySegment meta = this.meta;
        boolean intact = getLongOpaque(meta, READ_POS_OFFSET) == handedBack;
        putLongRelease(meta, READ_POS_OFFSET, readPos);
        addToStat(meta, STATS_NUM_READS_SUCCEEDED_OFFSET, cursor.readsNotHandedBack);
        cursor.handedBackPos = readPos;
        cursor.readsNotHandedBack = 0;
        return intact;
    }

    /**
     * How long the record at the read position may stay uncommitted before {@link #beginRead}
     * reports it corrupt. Set by the reader thread.
     */
    public void uncommittedRecordTimeout(Duration timeout) {
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("timeout is negative: " + timeout);
        }
        uncommittedTimeoutNanos = timeout.toNanos();
    }

    /** Times {@link #uncommittedRecordTimeout} with {@code nanoClock}: a test's clock, which it moves itself. */
    void readerClock(LongSupplier nanoClock) {
        readerClock = nanoClock;
    }

    private ReadResult uncommitted(ReaderCursor cursor, long readPos) {
        long now = readerClock.getAsLong();
        if (cursor.stalledPosition != readPos) {
            cursor.stalledPosition = readPos;
            cursor.stalledSinceNanos = now;
        } else if (now - cursor.stalledSinceNanos > uncommittedTimeoutNanos) {
            return readCorrupt(cursor);
        }
        return readNoData(cursor);
    }

    /**
     * Counts a corrupt read. The space freed so far is handed back, then the cursor is
     * dropped, so the next read loads and checks both positions again.
     */
    private ReadResult readCorrupt(ReaderCursor cursor) {
        if (cursor.synced) {
            handBack(cursor);
            cursor.synced = false;
        }
        addToStat(meta, STATS_NUM_READS_CORRUPT_OFFSET, 1);
        return ReadResult.CORRUPT;
    }

    /** Counts a read that found no record, after handing back the space freed so far. */
    private ReadResult readNoData(ReaderCursor cursor) {
        if (!handBack(cursor)) {
            return readCorrupt(cursor);
        }
        addToStat(meta, STATS_NUM_READS_NODATA_OFFSET, 1);
        return ReadResult.NO_DATA;
    }

    /** Perfetto's IsCorrupt: positions unsigned, write not behind read, at most S apart, both 8-aligned. */
    private boolean isCorrupt(long readPos, long writePos) {
        return Long.compareUnsigned(writePos, readPos) < 0
                || Long.compareUnsigned(writePos - readPos, size) > 0
                || ((writePos | readPos) & (RECORD_ALIGNMENT - 1)) != 0;
    }

    /**
     * Committed bytes waiting for the reader (including headers and padding), counted from the
     * read_pos last handed back; 0 if the positions are corrupt.
     */
    public long readAvailable() {
        long writePos = getLongAcquire(meta, WRITE_POS_OFFSET);
        long readPos = getLongOpaque(meta, READ_POS_OFFSET);
        return isCorrupt(readPos, writePos) ? 0 : writePos - readPos;
    }

    /** Free bytes for writers; 0 if the positions are corrupt. */
    public long writeAvailable() {
        long writePos = getLongAcquire(meta, WRITE_POS_OFFSET);
        long readPos = getLongOpaque(meta, READ_POS_OFFSET);
        return isCorrupt(readPos, writePos) ? 0 : size - (writePos - readPos);
    }

    /**
     * Plain add to a stats counter: each has one writer side (writers under the lock, or the
     * reader). Takes the segment so the record paths can pass the one in their local.
     */
    private static void addToStat(MemorySegment meta, long offset, long delta) {
        putLong(meta, offset, getLong(meta, offset) + delta);
    }

    // Exceptions are built out of line, to keep the record paths small enough to inline.

    private RuntimeException slotMisuse(RecordSlot slot, String message) {
        if (slot.owner != this) {
            return new IllegalArgumentException("record slot belongs to another buffer");
        }
        return new IllegalStateException(message + (slot.state == RecordSlot.IDLE ? " (the slot holds no record)"
                : " (the slot still holds a record: end it first)"));
    }

    private RuntimeException writeMisuse(RecordSlot slot) {
        if (slot.owner == this && lockHolder.thread != Thread.currentThread()) {
            return new IllegalStateException("beginWrite needs the spinlock: call lock() on this buffer, from this"
                    + " thread, before beginWrite, and unlock() after it");
        }
        return slotMisuse(slot, "beginWrite needs an idle slot of this buffer");
    }

    private static IllegalArgumentException badLength(long length) {
        return new IllegalArgumentException(length == 0
                ? "zero-length records cannot be written: a length of 0 marks a record as not yet committed"
                : "record length is negative: " + length);
    }

    // ---- flags and stats ----

    /** Perfetto's {@code SetErrorState}: a sequentially consistent store. */
    public void setErrorState(ErrorState state) {
        if (state == ErrorState.UNRECOGNIZED) {
            throw new IllegalArgumentException("UNRECOGNIZED is not a state Perfetto defines");
        }
        putLongVolatile(meta, ERROR_STATE_OFFSET, state.code());
    }

    /** A relaxed load of error_state. */
    public ErrorState errorState() {
        return ErrorState.ofCode(getLongOpaque(meta, ERROR_STATE_OFFSET));
    }

    /** Perfetto's {@code SetShuttingDown}: a relaxed store of true. */
    public void setShuttingDown() {
        putByteOpaque(meta, SHUTTING_DOWN_OFFSET, (byte) 1);
    }

    public boolean isShuttingDown() {
        return getByteOpaque(meta, SHUTTING_DOWN_OFFSET) != 0;
    }

    /**
     * Perfetto's {@code SetReaderPaused}, for a reader about to sleep until a writer wakes
     * it: stores true, then a full fence, after which the reader looks for a record once
     * more (and sleeps only if it finds none). With the fence a writer takes in
     * {@link #getAndResetReaderPaused}, either the reader sees the record or the writer
     * sees the flag: no wake-up is lost (Perfetto's relaxed store allows losing one until
     * the next write).
     */
    public void setReaderPaused() {
        putByteOpaque(meta, READER_PAUSED_OFFSET, (byte) 1);
        VarHandle.fullFence();
    }

    /**
     * Perfetto's {@code GetAndResetReaderPaused}, for a writer after a commit: whether the
     * reader paused (and so must be woken), resetting the flag so that one writer wakes it.
     * A full fence first orders the commit before the look; a flag found false costs no
     * exchange.
     */
    public boolean getAndResetReaderPaused() {
        VarHandle.fullFence();
        return getByteOpaque(meta, READER_PAUSED_OFFSET) != 0
                && getAndSetByte(meta, READER_PAUSED_OFFSET, (byte) 0) != 0;
    }

    /** A sequentially consistent load of client_spinlock_blocked_us, as Perfetto's accessor. */
    public long clientSpinlockBlockedUs() {
        return getLongVolatile(meta, CLIENT_SPINLOCK_BLOCKED_US_OFFSET);
    }

    /**
     * Perfetto's {@code GetStats}: the shared stats block with failed_spinlocks,
     * client_spinlock_blocked_us and error_state filled from their atomics (relaxed). Hold the
     * spinlock for a consistent view of the writer fields, as Perfetto requires.
     * num_reads_succeeded counts the reads handed back so far (see {@link #endRead}).
     */
    public Stats stats() {
        return new Stats(getLong(meta, STATS_BYTES_WRITTEN_OFFSET), getLong(meta, STATS_NUM_WRITES_SUCCEEDED_OFFSET),
                getLong(meta, STATS_NUM_WRITES_CORRUPT_OFFSET), getLong(meta, STATS_NUM_WRITES_OVERFLOW_OFFSET),
                getLong(meta, STATS_NUM_READS_SUCCEEDED_OFFSET), getLong(meta, STATS_NUM_READS_CORRUPT_OFFSET),
                getLong(meta, STATS_NUM_READS_NODATA_OFFSET), getLongOpaque(meta, FAILED_SPINLOCKS_OFFSET),
                getLongOpaque(meta, CLIENT_SPINLOCK_BLOCKED_US_OFFSET), getLongOpaque(meta, ERROR_STATE_OFFSET));
    }

    /** Unmaps the buffer and closes the memfd; an in-process buffer's memory belongs to its arena. */
    @Override
    public void close() {
        if (mapping != null) {
            mapping.close();
        }
    }
}
