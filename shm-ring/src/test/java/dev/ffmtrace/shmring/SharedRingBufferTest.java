package dev.ffmtrace.shmring;

import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.ERROR_STATE_OFFSET;
import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.PID_NAMESPACES_OFFSET;
import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.READ_POS_OFFSET;
import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.RECORD_ALIGNMENT;
import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.RECORD_HEADER_SIZE;
import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.SPINLOCK_HOLDER_NAMESPACE_OFFSET;
import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.SPINLOCK_HOLDER_PID_OFFSET;
import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.SPINLOCK_LOCKED_OFFSET;
import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.WRITE_POS_OFFSET;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.memory.MemoryFile;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.Seals;
import dev.ffmtrace.memory.testing.OpenDescriptors;
import dev.ffmtrace.shmring.SharedRingBuffer.LockMode;
import dev.ffmtrace.shmring.SharedRingBuffer.ReadResult;
import dev.ffmtrace.shmring.SharedRingBuffer.WriteResult;
import dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class SharedRingBufferTest {
    private static final long PAGE = Os.pageSize();
    private static final long RING = 4096;

    private SharedRingBuffer buffer;
    private RecordSlot slot;

    @BeforeEach
    void createBuffer() {
        buffer = SharedRingBuffer.create(RING);
        slot = buffer.newSlot();
    }

    @AfterEach
    void closeBuffer() {
        buffer.close();
    }

    // ---- create and attach ----

    @ParameterizedTest
    @ValueSource(longs = {4096, 8192, 1 << 20, 8 << 20, 512 << 20})
    void createAcceptsPerfettosValidSizesAndSealsTheMemfd(long ringSize) {
        try (SharedRingBuffer created = SharedRingBuffer.create(ringSize)) {
            assertEquals(ringSize, created.size());
            try (MemoryFile file = MemoryFile.attach(MemoryFile.duplicate(created.fd()))) {
                assertEquals(ringSize + PAGE, file.size());
                assertEquals(MemoryFile.RESIZE_SEALS, file.seals() & MemoryFile.RESIZE_SEALS);
            }
            assertEquals(0, created.metadata().get(Layouts.LONG, WRITE_POS_OFFSET));
        }
    }

    @ParameterizedTest
    @ValueSource(longs = {0, 4095, 12288, 500L << 20})
    void createRejectsWhatPerfettoRejects(long ringSize) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SharedRingBuffer.create(ringSize));
        assertTrue(e.getMessage().startsWith("SharedRingBuffer ring size is invalid (" + ringSize + "): it must be a power"
                + " of two and a multiple of the page size"), e.getMessage());
    }

    @Test
    void createRejectsANegativeSize() {
        assertThrows(IllegalArgumentException.class, () -> SharedRingBuffer.create(-4096));
    }

    @Test
    void attachSeesTheSameMemoryAsTheCreator() {
        try (SharedRingBuffer attached = SharedRingBuffer.attach(buffer.fd(), Seals.REQUIRED)) {
            RecordSlot mine = attached.newSlot();
            assertTrue(attached.lock(LockMode.TRY));
            assertEquals(WriteResult.OK, attached.beginWrite(mine, 3));
            attached.unlock();
            mine.buffer().set(Layouts.BYTE, mine.offset(), (byte) 42);
            attached.endWrite(mine);
            assertEquals(ReadResult.OK, buffer.beginRead(slot));
            assertEquals(3, slot.length());
            assertEquals(42, slot.buffer().get(Layouts.BYTE, slot.offset()));
            buffer.endRead(slot);
            assertEquals(ReadResult.NO_DATA, buffer.beginRead(slot));
            assertEquals(1, attached.stats().numReadsSucceeded());
        }
    }

    @Test
    void aSecondHandleNeverClosesTheCreatorsFd() throws Exception {
        int fd = buffer.fd();
        SharedRingBuffer.attach(fd, Seals.REQUIRED).close();
        SharedRingBuffer.attach(fd, Seals.REQUIRED).close();
        assertOpen(fd);
        try (SharedRingBuffer again = SharedRingBuffer.attach(fd, Seals.REQUIRED)) {
            assertEquals(RING, again.size());
        }
    }

    @Test
    void openAttachesByPath() {
        try (SharedRingBuffer opened = SharedRingBuffer.open(Path.of("/proc/self/fd/" + buffer.fd()), Seals.REQUIRED)) {
            assertEquals(RING, opened.size());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SharedRingBuffer.open(Path.of("/dev/shm/ffmtrace-no-such-ring"), Seals.NOT_REQUIRED));
        assertTrue(e.getMessage().contains("ENOENT"), e.getMessage());
    }

    @ParameterizedTest
    @CsvSource({"4096, 4096", "8191, 8191", "16384, 16384", "4097, 4097"})
    void attachRejectsInvalidSizesWithPerfettosMessageAndLeaksNothing(long fileSize, long reported) throws Exception {
        try (MemoryFile file = unsealed(fileSize)) {
            OpenDescriptors fds = OpenDescriptors.snapshot();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> SharedRingBuffer.attach(file.fd(), Seals.NOT_REQUIRED));
            assertTrue(e.getMessage().startsWith("SharedRingBuffer size is invalid (" + reported + "): the file must be"
                    + " one page"), e.getMessage());
            assertEquals(List.of(), fds.openedSince(), "the duplicate fd is closed");
            assertOpen(file.fd());
        }
    }

    @Test
    void attachRejectsAnEmptyFile() throws Exception {
        try (MemoryFile file = unsealed(0)) {
            int fd = file.fd();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> SharedRingBuffer.attach(fd, Seals.NOT_REQUIRED));
            assertTrue(e.getMessage().startsWith("Could not attach to fd " + fd), e.getMessage());
            assertOpen(fd);
        }
    }

    @Test
    void attachRejectsAClosedFd() {
        MemoryFile file = unsealed(PAGE + RING);
        int fd = file.fd();
        file.close();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SharedRingBuffer.attach(fd, Seals.NOT_REQUIRED));
        assertTrue(e.getMessage().startsWith("Could not attach to fd " + fd + ": ") && e.getMessage().contains("EBADF"),
                e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> SharedRingBuffer.attach(-1, Seals.NOT_REQUIRED));
    }

    @Test
    void attachChecksSealsOnlyWhenAsked() throws Exception {
        try (MemoryFile unsealed = unsealed(PAGE + RING)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> SharedRingBuffer.attach(unsealed.fd(), Seals.REQUIRED));
            assertTrue(e.getMessage().contains("not sealed"), e.getMessage());
            try (SharedRingBuffer attached = SharedRingBuffer.attach(unsealed.fd(), Seals.NOT_REQUIRED)) {
                assertEquals(RING, attached.size());
            }
        }
    }

    /** A file like the ones Perfetto's C++ makes on Linux: an unlinked /dev/shm file, unsealed. */
    private static MemoryFile unsealed(long size) {
        MemoryFile file = MemoryFile.create("shmring-test", Math.max(size, 1), MemoryFile.Backing.DEV_SHM);
        file.resize(size);
        return file;
    }

    private static void assertOpen(int fd) {
        assertTrue(Files.exists(Path.of("/proc/self/fd/" + fd)), "fd " + fd + " is still open");
    }

    // ---- writing and reading ----

    @Test
    void recordsKeepTheirOrderLengthsAndHeaderLayout() {
        write(3, (byte) 1);
        write(8, (byte) 2);
        write(9, (byte) 3);
        MemorySegment ring = slot.buffer();
        assertEquals(3, ring.get(Layouts.INT, 0));
        assertEquals(8, ring.get(Layouts.INT, 16));
        assertEquals(9, ring.get(Layouts.INT, 32));
        assertEquals(16 + 16 + 24, buffer.readAvailable());
        assertEquals(RING - 56, buffer.writeAvailable());
        long[] lengths = {3, 8, 9};
        for (int k = 0; k < lengths.length; k++) {
            assertEquals(ReadResult.OK, buffer.beginRead(slot));
            assertEquals(lengths[k], slot.length());
            for (long i = 0; i < lengths[k]; i++) {
                assertEquals(k + 1, slot.buffer().get(Layouts.BYTE, slot.offset() + i));
            }
            buffer.endRead(slot);
        }
        assertEquals(ReadResult.NO_DATA, buffer.beginRead(slot));
        assertEquals(new SharedRingBuffer.Stats(20, 3, 0, 0, 3, 0, 1, 0, 0, 0), buffer.stats());
    }

    @Test
    void aRecordThatRunsOffTheEndIsContiguousAndLandsAtTheRingStart() {
        write(RING - 64 - 8, (byte) 0);
        assertEquals(ReadResult.OK, buffer.beginRead(slot));
        buffer.endRead(slot);
        write(1000, (byte) 0x5A);
        assertEquals(ReadResult.OK, buffer.beginRead(slot));
        assertEquals(RING - 64 + 8, slot.offset());
        assertEquals(1000, slot.length());
        MemorySegment payload = slot.payload();
        for (long i = 0; i < payload.byteSize(); i++) {
            assertEquals(0x5A, payload.get(Layouts.BYTE, i));
        }
        // The double mapping: the part past the end is the start of the ring.
        assertEquals(0x5A, slot.buffer().get(Layouts.BYTE, 0));
        assertEquals(0x5A, slot.buffer().get(Layouts.BYTE, 1000 - 56 - 1));
        buffer.endRead(slot);
        assertEquals(RING - 64 + 1008, buffer.metadata().get(Layouts.LONG, READ_POS_OFFSET));
    }

    @Test
    void theLargestRecordFillsAnEmptyRingExactly() {
        assertEquals(RING - 8, buffer.maxRecordLength());
        write(RING - 8, (byte) 7);
        assertEquals(0, buffer.writeAvailable());
        assertTrue(buffer.lock(LockMode.TRY));
        assertEquals(WriteResult.NO_SPACE, buffer.beginWrite(slot, 1));
        buffer.unlock();
        assertEquals(ReadResult.OK, buffer.beginRead(slot));
        assertEquals(RING - 8, slot.length());
        buffer.endRead(slot);
        assertEquals(1, buffer.stats().numWritesOverflow());
    }

    @Test
    void tooBigAndNoSpaceAreDistinctAndBothCountAsOverflow() {
        assertTrue(buffer.lock(LockMode.TRY));
        assertEquals(WriteResult.TOO_BIG, buffer.beginWrite(slot, RING - 7));
        assertEquals(WriteResult.TOO_BIG, buffer.beginWrite(slot, SharedRingBufferDescriptor.MAX_RECORD_LENGTH + 1));
        assertEquals(WriteResult.TOO_BIG, buffer.beginWrite(slot, Long.MAX_VALUE));
        assertEquals(WriteResult.OK, buffer.beginWrite(slot, 2000));
        buffer.endWrite(slot);
        assertEquals(WriteResult.NO_SPACE, buffer.beginWrite(slot, 2100));
        buffer.unlock();
        assertEquals(new SharedRingBuffer.Stats(2000, 1, 0, 4, 0, 0, 0, 0, 0, 0), buffer.stats());
        assertFalse(slot.isActive());
    }

    @Test
    void zeroAndNegativeLengthsAreRefusedWithAClearError() {
        assertTrue(buffer.lock(LockMode.TRY));
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class, () -> buffer.beginWrite(slot, 0));
        assertTrue(zero.getMessage().contains("zero-length records cannot be written"), zero.getMessage());
        assertThrows(IllegalArgumentException.class, () -> buffer.beginWrite(slot, -8));
        buffer.unlock();
        assertThrows(IllegalArgumentException.class, () -> buffer.tryWrite(new byte[0]));
        assertEquals(0, buffer.metadata().get(Layouts.LONG, WRITE_POS_OFFSET));
    }

    @Test
    void beginWriteWithoutTheLockThrowsAndReservesNothing() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> buffer.beginWrite(slot, 8));
        assertTrue(e.getMessage().startsWith("beginWrite needs the spinlock: call lock() on this buffer"), e.getMessage());
        assertFalse(slot.isActive());
        assertEquals(0, buffer.metadata().get(Layouts.LONG, WRITE_POS_OFFSET));
        assertTrue(buffer.lock(LockMode.TRY));
        buffer.unlock();
        assertThrows(IllegalStateException.class, () -> buffer.beginWrite(slot, 8), "after unlock");
    }

    @Test
    void beginWriteNeedsTheLockHeldByTheCallingThreadThroughTheSameObject() throws Exception {
        assertTrue(buffer.lock(LockMode.TRY));
        try (SharedRingBuffer attached = SharedRingBuffer.attach(buffer.fd(), Seals.REQUIRED)) {
            RecordSlot other = attached.newSlot();
            assertThrows(IllegalStateException.class, () -> attached.beginWrite(other, 8));
            CompletableFuture<Void> otherThread = CompletableFuture.runAsync(() ->
                    assertThrows(IllegalStateException.class, () -> buffer.beginWrite(buffer.newSlot(), 8)));
            otherThread.get();
        } finally {
            buffer.unlock();
        }
        assertEquals(0, buffer.metadata().get(Layouts.LONG, WRITE_POS_OFFSET));
    }

    // ---- tryWrite ----

    @Test
    void tryWriteRoundTripsEveryByteAndLeavesTheLockFree() {
        byte[] first = {1, 2, 3, 4, 5};
        byte[] second = new byte[300];
        new SplittableRandom(7).nextBytes(second);
        assertEquals(WriteResult.OK, buffer.tryWrite(first));
        assertEquals(0, buffer.metadata().get(Layouts.LONG, 0), "lock word clear after tryWrite");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment source = arena.allocate(400);
            MemorySegment.copy(second, 0, source, Layouts.BYTE, 50, second.length);
            assertEquals(WriteResult.OK, buffer.tryWrite(source, 50, second.length));
        }
        assertEquals(0, buffer.metadata().get(Layouts.LONG, 0));
        assertArrayEquals(first, readOne());
        assertArrayEquals(second, readOne());
        assertEquals(ReadResult.NO_DATA, buffer.beginRead(slot));
        assertEquals(2, buffer.stats().numWritesSucceeded());
        assertEquals(first.length + second.length, buffer.stats().bytesWritten());
    }

    @Test
    void tryWriteWrapsAroundTheRingContiguously() {
        write(RING - 8 - 16, (byte) 9);
        assertEquals(ReadResult.OK, buffer.beginRead(slot));
        buffer.endRead(slot);
        assertEquals(ReadResult.NO_DATA, buffer.beginRead(slot));
        byte[] wrapping = new byte[100];
        new SplittableRandom(11).nextBytes(wrapping);
        assertEquals(WriteResult.OK, buffer.tryWrite(wrapping));
        assertArrayEquals(wrapping, readOne());
    }

    @Test
    void tryWriteOnAFullRingReportsItAndLeavesTheLockFree() {
        write(RING - 8, (byte) 1);
        assertEquals(WriteResult.NO_SPACE, buffer.tryWrite(new byte[1]));
        assertEquals(WriteResult.TOO_BIG, buffer.tryWrite(new byte[(int) RING]));
        assertEquals(0, buffer.metadata().get(Layouts.LONG, 0), "lock word clear after a refused tryWrite");
        assertEquals(2, buffer.stats().numWritesOverflow());
        assertTrue(buffer.lock(LockMode.TRY));
        buffer.unlock();
        positions(4, 16);
        assertEquals(WriteResult.CORRUPT, buffer.tryWrite(new byte[1]));
        assertEquals(0, buffer.metadata().get(Layouts.LONG, 0));
    }

    @Test
    void tryWriteReportsALockItCannotTake() {
        buffer.poisonSpinlock();
        assertEquals(WriteResult.LOCK_FAILED, buffer.tryWrite(new byte[] {1}));
        assertEquals(1, buffer.stats().failedSpinlocks());
        assertEquals(0, buffer.metadata().get(Layouts.LONG, WRITE_POS_OFFSET));
    }

    @Test
    void tryWriteRefusesBadArgumentsBeforeTakingTheLock() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment source = arena.allocate(16);
            assertThrows(IndexOutOfBoundsException.class, () -> buffer.tryWrite(source, 8, 9));
            assertThrows(IndexOutOfBoundsException.class, () -> buffer.tryWrite(source, -1, 4));
            assertThrows(IllegalArgumentException.class, () -> buffer.tryWrite(source, 0, 0));
            CompletableFuture<Void> otherThread = CompletableFuture.runAsync(() ->
                    assertThrows(WrongThreadException.class, () -> buffer.tryWrite(source, 0, 4)));
            assertDoesNotThrow(() -> otherThread.get());
        }
        assertTrue(buffer.lock(LockMode.TRY));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> buffer.tryWrite(new byte[1]));
        assertTrue(e.getMessage().contains("unlock() first"), e.getMessage());
        buffer.unlock();
        assertEquals(0, buffer.metadata().get(Layouts.LONG, 0));
        assertEquals(0, buffer.metadata().get(Layouts.LONG, WRITE_POS_OFFSET));
        assertEquals(0, buffer.stats().failedSpinlocks());
    }

    @Test
    void slotsAreCheckedForMisuse() {
        assertThrows(IllegalStateException.class, () -> buffer.endWrite(slot));
        assertThrows(IllegalStateException.class, () -> buffer.endRead(slot));
        assertThrows(IllegalStateException.class, slot::offset);
        write(4, (byte) 1);
        assertTrue(buffer.lock(LockMode.TRY));
        assertEquals(WriteResult.OK, buffer.beginWrite(slot, 4));
        IllegalStateException busy = assertThrows(IllegalStateException.class, () -> buffer.beginWrite(slot, 4));
        assertTrue(busy.getMessage().contains("the slot still holds a record"), busy.getMessage());
        buffer.unlock();
        assertThrows(IllegalStateException.class, () -> buffer.beginRead(slot));
        assertThrows(IllegalStateException.class, () -> buffer.endRead(slot));
        buffer.endWrite(slot);
        try (SharedRingBuffer other = SharedRingBuffer.create(RING)) {
            assertThrows(IllegalArgumentException.class, () -> other.beginRead(slot));
        }
    }

    // ---- bad input from the other side ----

    @ParameterizedTest(name = "read_pos {0}, write_pos {1}")
    @CsvSource({
        "4, 16",                          // read misaligned
        "0, 12",                          // write misaligned
        "64, 32",                         // write behind read
        "0, 4104",                        // more than the ring apart
        "-8, 8",                          // wrapped past 2^64
        "-9223372036854775808, 0"})
    void corruptPositionsAreReportedAndCountedOnBothSides(long readPos, long writePos) {
        positions(readPos, writePos);
        assertEquals(ReadResult.CORRUPT, buffer.beginRead(slot));
        assertEquals(ReadResult.CORRUPT, buffer.beginRead(slot));
        assertTrue(buffer.lock(LockMode.TRY));
        assertEquals(WriteResult.CORRUPT, buffer.beginWrite(slot, 1));
        buffer.unlock();
        assertEquals(0, buffer.readAvailable());
        assertEquals(0, buffer.writeAvailable());
        assertEquals(new SharedRingBuffer.Stats(0, 0, 1, 0, 0, 2, 0, 0, 0, 0), buffer.stats());
        assertEquals(readPos, buffer.metadata().get(Layouts.LONG, READ_POS_OFFSET));
        assertEquals(writePos, buffer.metadata().get(Layouts.LONG, WRITE_POS_OFFSET));
    }

    @Test
    void positionsFarAlongButConsistentAreFine() {
        positions(-RING, -RING + 16);
        slot.buffer().set(Layouts.INT, 0, 8);
        assertEquals(ReadResult.OK, buffer.beginRead(slot));
        buffer.endRead(slot);
        assertEquals(ReadResult.NO_DATA, buffer.beginRead(slot));
        assertEquals(-RING + 16, buffer.metadata().get(Layouts.LONG, READ_POS_OFFSET));
    }

    @ParameterizedTest
    @ValueSource(longs = {5000, 329, 0xFFFF_FFFFL})
    void aLengthPastTheAvailableDataIsCorruptAndTheReaderStaysPut(long length) {
        positions(0, 336);
        slot.buffer().set(Layouts.INT, 0, (int) length);
        assertEquals(ReadResult.CORRUPT, buffer.beginRead(slot));
        assertEquals(ReadResult.CORRUPT, buffer.beginRead(slot));
        assertEquals(2, buffer.stats().numReadsCorrupt());
        assertEquals(0, buffer.metadata().get(Layouts.LONG, READ_POS_OFFSET));
        assertFalse(slot.isActive());
    }

    @Test
    void aLengthThatExactlyFillsTheAvailableDataIsFine() {
        positions(0, 336);
        slot.buffer().set(Layouts.INT, 0, 328);
        assertEquals(ReadResult.OK, buffer.beginRead(slot));
        assertEquals(328, slot.length());
    }

    @Test
    void aCommittedZeroLengthRecordIsReportedCorruptOnceTheTimeoutPasses() {
        AtomicLong now = new AtomicLong();
        buffer.readerClock(now::get);
        buffer.uncommittedRecordTimeout(Duration.ofMillis(30));
        positions(0, 8);
        assertEquals(ReadResult.NO_DATA, buffer.beginRead(slot));
        now.addAndGet(Duration.ofMillis(30).toNanos());
        assertEquals(ReadResult.NO_DATA, buffer.beginRead(slot), "at the timeout, not past it");
        now.addAndGet(1);
        assertEquals(ReadResult.CORRUPT, buffer.beginRead(slot));
        assertEquals(ReadResult.CORRUPT, buffer.beginRead(slot));
        SharedRingBuffer.Stats stats = buffer.stats();
        assertEquals(2, stats.numReadsNodata());
        assertEquals(2, stats.numReadsCorrupt());
    }

    @Test
    void aSlowWriterIsWaitedForUntilTheTimeoutAndReadWhenItCommits() {
        AtomicLong now = new AtomicLong();
        buffer.readerClock(now::get);
        buffer.uncommittedRecordTimeout(Duration.ofMillis(30));
        assertTrue(buffer.lock(LockMode.TRY));
        RecordSlot writer = buffer.newSlot();
        assertEquals(WriteResult.OK, buffer.beginWrite(writer, 12));
        buffer.unlock();
        assertEquals(ReadResult.NO_DATA, buffer.beginRead(slot));
        now.addAndGet(Duration.ofMillis(20).toNanos());
        assertEquals(ReadResult.NO_DATA, buffer.beginRead(slot), "waited for within the timeout");
        now.addAndGet(Duration.ofMillis(20).toNanos());
        assertEquals(ReadResult.CORRUPT, buffer.beginRead(slot));
        buffer.endWrite(writer);
        assertEquals(ReadResult.OK, buffer.beginRead(slot));
        assertEquals(12, slot.length());
        buffer.endRead(slot);
        assertEquals(ReadResult.NO_DATA, buffer.beginRead(slot));
    }

    @Test
    void outOfOrderCommitsAreReadInReservationOrder() {
        RecordSlot first = buffer.newSlot();
        RecordSlot second = buffer.newSlot();
        assertTrue(buffer.lock(LockMode.TRY));
        assertEquals(WriteResult.OK, buffer.beginWrite(first, 10));
        assertEquals(WriteResult.OK, buffer.beginWrite(second, 20));
        buffer.unlock();
        buffer.endWrite(second);
        assertEquals(ReadResult.NO_DATA, buffer.beginRead(slot));
        buffer.endWrite(first);
        assertEquals(ReadResult.OK, buffer.beginRead(slot));
        assertEquals(10, slot.length());
        buffer.endRead(slot);
        assertEquals(ReadResult.OK, buffer.beginRead(slot));
        assertEquals(20, slot.length());
    }

    @Test
    void garbageFromThePeerNeverLeadsOutsideTheRingOrToAnException() {
        SplittableRandom random = new SplittableRandom(7);
        // The rounds' outcomes depend on their bytes only: no stalled record times out midway.
        buffer.uncommittedRecordTimeout(Duration.ofDays(1));
        long ok = 0;
        for (int round = 0; round < 50_000; round++) {
            long readPos = nearby(random, random.nextLong());
            long writePos = random.nextBoolean() ? readPos + nearby(random, random.nextLong(0, 2 * RING)) : nearby(random, random.nextLong());
            positions(readPos, writePos);
            slot.buffer().set(Layouts.INT, readPos & (RING - 1) & ~7L, (int) nearby(random, random.nextLong(0, 2 * RING)));
            ReadResult read = buffer.beginRead(slot);
            if (read == ReadResult.OK) {
                ok++;
                assertTrue(slot.offset() + slot.length() <= slot.buffer().byteSize());
                // Within positions the reader loaded and checked, which may be an earlier
                // round's: the two tests below pin down when it loads them again.
                assertTrue(SharedRingBufferDescriptor.stride(slot.length()) <= RING);
                assertEquals(0, (slot.offset() - RECORD_HEADER_SIZE) % RECORD_ALIGNMENT);
                buffer.endRead(slot);
            }
            assertTrue(buffer.lock(LockMode.TRY));
            WriteResult write = buffer.beginWrite(slot, random.nextLong(1, RING));
            buffer.unlock();
            if (write == WriteResult.OK) {
                assertTrue(slot.offset() + slot.length() <= slot.buffer().byteSize());
                buffer.endWrite(slot);
            }
        }
        assertTrue(ok > 250, "only " + ok + " rounds read a record");
    }

    @Test
    void freedSpaceGoesBackWhenTheReaderFindsNoRecordOrHasFreedABatch() {
        long batch = buffer.handBackBatch();
        assertEquals(RING / 16, batch);
        long length = batch / 4 - RECORD_HEADER_SIZE;
        for (int i = 0; i < 5; i++) {
            write(length, (byte) i);
        }
        for (int i = 0; i < 3; i++) {
            assertEquals(ReadResult.OK, buffer.beginRead(slot));
            buffer.endRead(slot);
        }
        assertEquals(0, buffer.metadata().get(Layouts.LONG, READ_POS_OFFSET), "three quarters of a batch are kept");
        assertEquals(RING - 5 * batch / 4, buffer.writeAvailable());
        assertEquals(0, buffer.stats().numReadsSucceeded());

        assertEquals(ReadResult.OK, buffer.beginRead(slot));
        buffer.endRead(slot);
        assertEquals(batch, buffer.metadata().get(Layouts.LONG, READ_POS_OFFSET), "a whole batch goes back at once");
        assertEquals(4, buffer.stats().numReadsSucceeded());

        assertEquals(ReadResult.OK, buffer.beginRead(slot));
        assertEquals(4, slot.buffer().get(Layouts.BYTE, slot.offset()));
        buffer.endRead(slot);
        assertEquals(batch, buffer.metadata().get(Layouts.LONG, READ_POS_OFFSET));
        assertEquals(ReadResult.NO_DATA, buffer.beginRead(slot));
        assertEquals(5 * batch / 4, buffer.metadata().get(Layouts.LONG, READ_POS_OFFSET), "finding no record hands back the rest");
        assertEquals(RING, buffer.writeAvailable());
        assertEquals(5, buffer.stats().numReadsSucceeded());
    }

    @Test
    void aReservedRecordAtTheReadPositionAlsoHandsBackWhatWasRead() {
        write(8, (byte) 1);
        RecordSlot reserved = buffer.newSlot();
        assertTrue(buffer.lock(LockMode.TRY));
        assertEquals(WriteResult.OK, buffer.beginWrite(reserved, 8));
        buffer.unlock();
        assertEquals(ReadResult.OK, buffer.beginRead(slot));
        buffer.endRead(slot);
        assertEquals(ReadResult.NO_DATA, buffer.beginRead(slot), "the second record is not committed");
        assertEquals(16, buffer.metadata().get(Layouts.LONG, READ_POS_OFFSET));
        assertEquals(1, buffer.stats().numReadsSucceeded());
    }

    @Test
    void theReaderGoesOnFromItsOwnPositionAndCountsAPeerThatMovedReadPos() {
        write(8, (byte) 1);
        write(8, (byte) 2);
        assertEquals(ReadResult.OK, buffer.beginRead(slot));
        buffer.endRead(slot);
        buffer.metadata().set(Layouts.LONG, READ_POS_OFFSET, 8);

        assertEquals(ReadResult.OK, buffer.beginRead(slot));
        assertEquals(2, slot.buffer().get(Layouts.BYTE, slot.offset()), "read_pos is not loaded again on every read");
        buffer.endRead(slot);
        assertEquals(ReadResult.CORRUPT, buffer.beginRead(slot), "handing back, it finds read_pos 8, not 0");
        assertEquals(32, buffer.metadata().get(Layouts.LONG, READ_POS_OFFSET), "its own position replaces the peer's");
        assertEquals(1, buffer.stats().numReadsCorrupt());
        assertEquals(2, buffer.stats().numReadsSucceeded());

        assertEquals(ReadResult.NO_DATA, buffer.beginRead(slot), "after the mismatch both positions are loaded again");
        assertEquals(1, buffer.stats().numReadsCorrupt());
    }

    @Test
    void aCorruptWritePosIsFoundWhenTheReaderNextNeedsIt() {
        write(8, (byte) 1);
        write(8, (byte) 2);
        assertEquals(ReadResult.OK, buffer.beginRead(slot));
        buffer.endRead(slot);
        buffer.metadata().set(Layouts.LONG, WRITE_POS_OFFSET, 12);

        assertEquals(ReadResult.OK, buffer.beginRead(slot), "the write_pos loaded before still covers record 2");
        assertEquals(2, slot.buffer().get(Layouts.BYTE, slot.offset()));
        buffer.endRead(slot);
        assertEquals(ReadResult.CORRUPT, buffer.beginRead(slot), "12 is behind read_pos 32, and misaligned");
        assertEquals(ReadResult.CORRUPT, buffer.beginRead(slot));
        buffer.metadata().set(Layouts.LONG, WRITE_POS_OFFSET, 32);
        assertEquals(ReadResult.NO_DATA, buffer.beginRead(slot));
        assertEquals(new SharedRingBuffer.Stats(16, 2, 0, 0, 2, 2, 1, 0, 0, 0), buffer.stats());
    }

    /** Mostly small and 8-aligned, sometimes anything: the values a confused or hostile peer might leave. */
    private static long nearby(SplittableRandom random, long value) {
        return switch (random.nextInt(4)) {
            case 0 -> value;
            case 1 -> value & ~7L;
            default -> (value & (4 * RING - 1)) & ~7L;
        };
    }

    private void positions(long readPos, long writePos) {
        buffer.metadata().set(Layouts.LONG, READ_POS_OFFSET, readPos);
        buffer.metadata().set(Layouts.LONG, WRITE_POS_OFFSET, writePos);
    }

    // ---- spinlock ----

    @Test
    void theHolderRecordsItsPidAndNamespaceAndClearsThemOnUnlock() {
        assertEquals(Os.pidNamespaceId(), buffer.metadata().get(Layouts.LONG, PID_NAMESPACES_OFFSET),
                "our PID namespace, entered when the buffer was made");
        assertEquals(0, buffer.metadata().get(Layouts.LONG, PID_NAMESPACES_OFFSET + 8));
        assertTrue(buffer.lock(LockMode.TRY));
        assertEquals(1, buffer.metadata().get(Layouts.BYTE, SPINLOCK_LOCKED_OFFSET));
        assertEquals(1, buffer.metadata().get(Layouts.SHORT, SPINLOCK_HOLDER_NAMESPACE_OFFSET), "slot 1: the first entry");
        assertEquals(ProcessHandle.current().pid(), buffer.metadata().get(Layouts.INT, SPINLOCK_HOLDER_PID_OFFSET));
        buffer.unlock();
        assertEquals(0, buffer.metadata().get(Layouts.LONG, 0));
    }

    @Test
    void tryModeGivesUpAfterAboutASecondOnALockHeldWithoutAPidAsPerfettoDoes() {
        buffer.metadata().set(Layouts.BYTE, SPINLOCK_LOCKED_OFFSET, (byte) 1);
        long start = System.nanoTime();
        assertFalse(buffer.lock(LockMode.TRY));
        long elapsedMillis = (System.nanoTime() - start) / 1_000_000;
        // About a second counted in its sleeps, not by a clock: a busy machine only makes it longer.
        assertTrue(elapsedMillis >= 999, "gave up after " + elapsedMillis + " ms");
        assertEquals(999_000, buffer.clientSpinlockBlockedUs());
        assertEquals(1, buffer.stats().failedSpinlocks());
        assertFalse(buffer.isSpinlockPoisoned());
    }

    @Test
    void blockingModeWaitsForTheHolder() throws Exception {
        CountDownLatch held = new CountDownLatch(1);
        Thread waiter = Thread.currentThread();
        CompletableFuture<Void> holder = CompletableFuture.runAsync(() -> {
            assertTrue(buffer.lock(LockMode.BLOCKING));
            held.countDown();
            // Released once the waiter sleeps between its attempts, the only timed wait of a lock.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (waiter.getState() != Thread.State.TIMED_WAITING) {
                assertTrue(System.nanoTime() < deadline, "the waiter never slept: " + waiter.getState());
                Thread.onSpinWait();
            }
            buffer.unlock();
        });
        held.await();
        assertTrue(buffer.lock(LockMode.BLOCKING));
        buffer.unlock();
        holder.get();
        assertTrue(buffer.clientSpinlockBlockedUs() > 0, "the waiter slept while the lock was held");
        assertEquals(0, buffer.stats().failedSpinlocks());
    }

    @Test
    void aPoisonedLockFailsAtOnceAndCounts() {
        buffer.poisonSpinlock();
        assertTrue(buffer.isSpinlockPoisoned());
        assertFalse(buffer.lock(LockMode.TRY));
        assertFalse(buffer.lock(LockMode.BLOCKING));
        assertEquals(2, buffer.stats().failedSpinlocks());
        assertEquals(0, buffer.clientSpinlockBlockedUs());
        assertEquals(0, buffer.metadata().get(Layouts.BYTE, SPINLOCK_LOCKED_OFFSET));
    }

    // ---- flags ----

    @Test
    void flagsSitWherePerfettoKeepsThem() {
        assertEquals(SharedRingBuffer.ErrorState.NONE, buffer.errorState());
        buffer.setErrorState(SharedRingBuffer.ErrorState.INVALID_STACK_BOUNDS);
        assertEquals(2, buffer.metadata().get(Layouts.LONG, ERROR_STATE_OFFSET));
        assertEquals(SharedRingBuffer.ErrorState.INVALID_STACK_BOUNDS, buffer.errorState());
        buffer.metadata().set(Layouts.LONG, ERROR_STATE_OFFSET, 77);
        assertEquals(SharedRingBuffer.ErrorState.UNRECOGNIZED, buffer.errorState());
        assertThrows(IllegalArgumentException.class, () -> buffer.setErrorState(SharedRingBuffer.ErrorState.UNRECOGNIZED));
        assertFalse(buffer.isShuttingDown());
        buffer.setShuttingDown();
        assertTrue(buffer.isShuttingDown());
        assertFalse(buffer.getAndResetReaderPaused());
        buffer.setReaderPaused();
        assertEquals(1, buffer.metadata().get(Layouts.BYTE, SharedRingBufferDescriptor.READER_PAUSED_OFFSET));
        assertTrue(buffer.getAndResetReaderPaused());
        assertFalse(buffer.getAndResetReaderPaused());
    }

    // ---- in-process buffers ----

    @Test
    void anInProcessBufferCarriesEveryLengthBetweenTwoThreads() throws Exception {
        try (Arena arena = Arena.ofShared()) {
            SharedRingBuffer local = SharedRingBuffer.allocate(RING, arena);
            CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> RingRecords.writeAll(local));
            RingRecords.readAll(local);
            writer.get();
            assertEquals(RING - 8, local.stats().numReadsSucceeded());
            assertThrows(IllegalStateException.class, local::fd);
        }
    }

    /** The payload of the next record, copied, and the record freed. */
    private byte[] readOne() {
        assertEquals(ReadResult.OK, buffer.beginRead(slot));
        byte[] payload = slot.payload().toArray(Layouts.BYTE);
        buffer.endRead(slot);
        return payload;
    }

    private void write(long length, byte value) {
        assertTrue(buffer.lock(LockMode.TRY));
        assertEquals(WriteResult.OK, buffer.beginWrite(slot, length));
        buffer.unlock();
        slot.payload().fill(value);
        buffer.endWrite(slot);
    }
}
