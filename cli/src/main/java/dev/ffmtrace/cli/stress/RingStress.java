package dev.ffmtrace.cli.stress;

import static dev.ffmtrace.memory.AtomicSegment.getLongAcquire;
import static dev.ffmtrace.memory.AtomicSegment.putLongOpaque;

import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.shmring.RecordSlot;
import dev.ffmtrace.shmring.SharedRingBuffer;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

/**
 * The SharedRingBuffer part of {@code ffmtrace stress}: writer processes
 * ({@code native/src/ring_stress_writer.c}, whose comment gives the record and ledger
 * formats) share one sealed ring with each other and with a reader thread here, which checks
 * every record as it reads it: checksum, known writer, each writer's sequence numbers
 * increasing by one plus the drops the record announces. At the end every writer's
 * attempted records (its report, or its ledger after a kill) must equal those read, dropped
 * and lost with a kill.
 *
 * <p>With faults, writers are killed with SIGKILL at random moments, the first kill and
 * about half of the others inside the ring's spinlock (the writer, asked through its ledger,
 * takes the lock and stays in it), and replaced. The others take a dead holder's lock
 * over (the C ring's take_over_dead_holders). A killed writer's record that was reserved but
 * never committed would stop the reader for good, so once the writer is reaped this class
 * commits a tombstone in its place (see {@link RingWriters}): the reader reads it as that
 * writer's sequence number, lost with the kill. At most one record per kill is so lost.
 * After each kill the phase waits for the reader to read on before it goes on: a reader
 * the kill stalled is a problem.
 *
 * <p>The hostile phase runs on a ring of its own, after the clean one: a thread here
 * rewrites the ring's positions, lock word and stats at random while writers write and the
 * reader reads. Nothing read there is held against the ring; the phase counts what the
 * reader made of it (corrupt reads, bad records) and fails only if the reader throws, or
 * misses the first rewrite, which no reader may miss: write_pos put behind read_pos.
 */
public final class RingStress {
    // Perfetto's SharedRingBuffer metadata (shm-ring's SharedRingBufferDescriptor, whose
    // package the module keeps to itself).
    private static final long LOCK_WORD = 0;
    static final long READ_POS = 8;
    static final long WRITE_POS = 16;
    private static final long STATS_FIRST = 64;
    private static final long STATS_LAST = 112;
    static final int HEADER = 8;

    private static final long DRAIN_MILLIS = 10_000;
    private static final int MAX_PROBLEMS = 20;
    /** A writer ends within a lock wait (about a second) of its deadline; longer is a hang. */
    private static final long EXIT_SECONDS = 10;
    /**
     * How long past its duration the clean phase may go on to make its {@code minKills} and
     * read its {@code minRecords} (on a loaded machine a kill, which waits for its victim to
     * be in the lock and for its replacement to start, can take seconds); the writers' own
     * deadline.
     */
    private static final long GRACE_NANOS = TimeUnit.SECONDS.toNanos(120);
    /** How long the reader may take to read a record after a kill before it counts as stalled. */
    private static final long READ_AFTER_KILL_SECONDS = 30;
    /**
     * The hostile phase's rewrites at least, however long they take: it goes on past its
     * duration until it has made them, so a slow machine gets the same test as a fast one.
     */
    public static final int MIN_HOSTILE_REWRITES = 200;
    /** How long the reader may take to meet the hostile phase's first, certain corruption. */
    private static final long FIRST_CORRUPTION_SECONDS = 30;

    /**
     * @param program        the ring_stress_writer binary
     * @param writers        writer processes running at once
     * @param duration       how long the clean phase writes
     * @param rate           records per second per writer, 0 as fast as each can
     * @param seed           seeds the writers and the kills
     * @param ringSize       the ring's size: a power of two, whole pages
     * @param maxPayload     the largest record (at least 36 bytes)
     * @param faults         kill writers with SIGKILL and replace them
     * @param holdLockMicros how long writers sleep inside the lock (every 8th record); 0 never
     * @param hostile        how long the hostile phase runs; zero for none
     * @param minKills       with faults, the kills the clean phase makes at least: it goes on
     *                       past its duration until they are made (by at most two minutes)
     * @param minRecords     the records the clean phase's reader reads at least: the phase goes
     *                       on past its duration until it has (by at most two minutes)
     */
    public record Options(Path program, int writers, Duration duration, int rate, long seed, long ringSize,
                          int maxPayload, boolean faults, int holdLockMicros, Duration hostile, int minKills,
                          long minRecords) {
        public Options {
            if (writers < 1 || maxPayload < RingWriters.FIXED_FIELDS + 12 || rate < 0 || holdLockMicros < 0 || minKills < 0
                    || (minKills > 0 && !faults) || minRecords < 0) {
                throw new IllegalArgumentException("bad ring stress options");
            }
        }
    }

    /**
     * The clean phase's books. Every record attempted is {@link #read}, {@link #dropped} by
     * its writer (announced by a later record, or in its report or ledger) or
     * {@link #lostWithKills lost with a killed writer}; {@link #unaccounted} is what is left,
     * {@link #problems} what the reader found wrong.
     *
     * @param killsHoldingLock  kills of a writer that was holding the spinlock
     * @param takeovers         locks taken from a dead holder, as writers that ended cleanly report
     * @param minReadsAfterKill the fewest records read between one kill and the next (or the
     *                          end); -1 without kills, 0 only if the reader stalled after a kill
     */
    public record Result(long writersStarted, long attempted, long read, long dropped, long lostWithKills,
                         long kills, long killsHoldingLock, long takeovers, long lockFailures,
                         long minReadsAfterKill, boolean poisoned, long unaccounted, long problemCount,
                         List<String> problems, Hostile hostile) {
        /** Whether everything attempted is accounted for and nothing was wrong. */
        public boolean ok() {
            return unaccounted == 0 && problemCount == 0 && !poisoned && (hostile == null || hostile.failure == null);
        }
    }

    /**
     * The hostile phase's counts, all excused by the hostile rewrites: none of them is an
     * error of the ring.
     *
     * @param failure what the reader threw, or that it missed the first, certain corruption;
     *                null if neither: the one thing the phase fails on
     */
    public record Hostile(long rewrites, long recordsRead, long corruptReads, long badRecords,
                          long ringReadsCorrupt, String failure) {
    }

    private final Options options;
    private final PrintStream log;

    private RingStress(Options options, PrintStream log) {
        this.options = options;
        this.log = log;
    }

    /** Runs the clean phase, then the hostile one if asked; reports progress on {@code log}. */
    public static Result run(Options options, PrintStream log) throws IOException, InterruptedException {
        return new RingStress(options, log).run();
    }

    private Result run() throws IOException, InterruptedException {
        if (!Files.isExecutable(options.program)) {
            throw new IOException("no ring stress writer at " + options.program + " (make -C native ring_stress_writer)");
        }
        Result clean = cleanPhase();
        Hostile hostile = options.hostile.isZero() ? null : hostilePhase();
        return new Result(clean.writersStarted, clean.attempted, clean.read, clean.dropped, clean.lostWithKills,
                clean.kills, clean.killsHoldingLock, clean.takeovers, clean.lockFailures, clean.minReadsAfterKill,
                clean.poisoned, clean.unaccounted, clean.problemCount, clean.problems, hostile);
    }

    // ---- clean phase ----

    private Result cleanPhase() throws IOException, InterruptedException {
        SplittableRandom random = new SplittableRandom(options.seed);
        try (SharedRingBuffer ring = SharedRingBuffer.create(options.ringSize)) {
            // A record stays uncommitted only while its writer fills it, or until a killed
            // writer's tombstone is committed: a long stall is a fault to report, not to wait out.
            ring.uncommittedRecordTimeout(Duration.ofSeconds(30));
            Verifier verifier = new Verifier();
            Reader reader = new Reader(ring, verifier);
            Thread readerThread = Thread.ofPlatform().name("ring stress reader").start(reader);
            long end = System.nanoTime() + options.duration.toNanos();
            long kills = 0;
            long killsHoldingLock = 0;
            long lostWithKills = 0;
            long minReadsAfterKill = -1;
            long readsAtLastKill = -1;
            // The writers go on until told to stop (their ledger), at the phase's end.
            try (RingWriters writers = new RingWriters(ring, options, end + GRACE_NANOS, verifier::register)) {
                for (int i = 0; i < options.writers; i++) {
                    writers.start(random.nextLong());
                }
                while (phaseGoesOn(end, kills, verifier.read)) {
                    if (!options.faults) {
                        Thread.sleep(Math.max(1, Math.min(100, (end - System.nanoTime()) / 1_000_000)));
                        continue;
                    }
                    Thread.sleep(50 + random.nextInt(250));
                    if (!phaseGoesOn(end, kills, verifier.read)) {
                        break;
                    }
                    int victim = random.nextInt(writers.running());
                    // The first kill inside the lock whatever the seed, so that one such kill is certain.
                    RingWriters.Kill kill = writers.kill(victim, kills == 0 || random.nextBoolean());
                    kills++;
                    if (kill.heldLock()) {
                        killsHoldingLock++;
                    }
                    if (kill.recordLost()) {
                        lostWithKills++;
                    }
                    long reads = reader.records();
                    if (readsAtLastKill >= 0) {
                        minReadsAfterKill = minReadsAfterKill < 0 ? reads - readsAtLastKill
                                : Math.min(minReadsAfterKill, reads - readsAtLastKill);
                    }
                    readsAtLastKill = reads;
                    writers.start(random.nextLong());
                    if (!awaitReader(reader::records, reads, reader, READ_AFTER_KILL_SECONDS)) {
                        verifier.problem("the reader read nothing in " + READ_AFTER_KILL_SECONDS + " s after kill "
                                + kills);
                    }
                }
                writers.stop();
                writers.awaitExit(EXIT_SECONDS);
                reader.drain(DRAIN_MILLIS);
                readerThread.join();
                if (readsAtLastKill >= 0) {
                    long after = reader.records() - readsAtLastKill;
                    minReadsAfterKill = minReadsAfterKill < 0 ? after : Math.min(minReadsAfterKill, after);
                }
                if (reader.failure != null) {
                    verifier.problem("the reader threw " + reader.failure);
                }
                if (reader.corrupt > 0) {
                    verifier.problem(reader.corrupt + " corrupt reads on the clean ring");
                }
                long attempted = 0, dropped = 0, takeovers = 0, lockFailures = 0, unaccounted = 0;
                for (RingWriters.Exit exit : writers.exits()) {
                    exit.problems().forEach(verifier::problem);
                    Books books = verifier.books(exit.id());
                    // The record being written at a kill was attempted if it reached the reader.
                    long writerAttempted = Math.max(exit.attempted(), books.nextSeq);
                    attempted += writerAttempted;
                    dropped += exit.dropped();
                    takeovers += exit.takeovers();
                    lockFailures += exit.lockFailures();
                    unaccounted += Math.abs(writerAttempted - books.read - exit.dropped() - books.lost);
                }
                boolean poisoned = ring.isSpinlockPoisoned();
                Result result = new Result(writers.started(), attempted, verifier.read, dropped, lostWithKills, kills,
                        killsHoldingLock, takeovers, lockFailures, minReadsAfterKill, poisoned, unaccounted,
                        verifier.problemCount, List.copyOf(verifier.problems), null);
                log.printf("ring stress: %d writers, %d records attempted, %d read, %d dropped, %d lost with %d kills"
                                + " (%d holding the lock, %d locks taken over), %d unaccounted, %d problems%n",
                        result.writersStarted, attempted, verifier.read, dropped, lostWithKills, kills,
                        killsHoldingLock, takeovers, unaccounted, verifier.problemCount);
                return result;
            } finally {
                reader.stop();
                readerThread.join();
            }
        }
    }

    /**
     * Whether the clean phase goes on: its duration, then the kills it must still make and
     * the records it must still read (within the grace).
     */
    private boolean phaseGoesOn(long end, long kills, long read) {
        long now = System.nanoTime();
        return now < end || ((kills < options.minKills || read < options.minRecords) && now < end + GRACE_NANOS);
    }

    /**
     * Waits until a count the reader thread keeps passes {@code past}, or the reader fails:
     * after a kill, that it reads on; in the hostile phase, that it meets the certain
     * corruption. The reader tells no one, so the count is looked at every 0.1 ms. False if
     * {@code seconds} pass first: the reader stalled.
     */
    private static boolean awaitReader(LongSupplier count, long past, Reader reader, long seconds) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (count.getAsLong() <= past && reader.failure == null) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            LockSupport.parkNanos(100_000);
        }
        return true;
    }

    /** One writer's books, kept by the reader thread. */
    private static final class Books {
        long nextSeq;
        long read;
        long lost;
    }

    /** Checks records as the reader reads them; its maps are filled before a writer starts. */
    private static final class Verifier {
        final Map<Integer, Books> books = new ConcurrentHashMap<>();
        final List<String> problems = new ArrayList<>();
        long problemCount;
        /** Written by the reader thread only; volatile so the clean phase can wait on it. */
        volatile long read;

        /** Opens the books of writer {@code id}, before its process starts. */
        void register(int id) {
            books.put(id, new Books());
        }

        Books books(int id) {
            return books.get(id);
        }

        synchronized void problem(String what) {
            problemCount++;
            if (problems.size() < MAX_PROBLEMS) {
                problems.add(what);
            }
        }

        void check(byte[] record) {
            int length = record.length;
            ByteBuffer in = ByteBuffer.wrap(record).order(ByteOrder.LITTLE_ENDIAN);
            if (length < RingWriters.FIXED_FIELDS + 4 || in.getInt(length - 4) != RingWriters.fnv1a(record, length - 4)) {
                problem("a record of " + length + " bytes fails its checksum");
                return;
            }
            int id = in.getInt(0);
            int kind = in.getInt(4);
            long seq = in.getLong(8);
            long droppedBefore = in.getLong(16);
            Books b = books.get(id);
            if (b == null || (kind != RingWriters.KIND_RECORD && kind != RingWriters.KIND_TOMBSTONE)) {
                problem("a record of unknown writer " + id + " or kind " + kind);
                return;
            }
            if (seq != b.nextSeq + droppedBefore) {
                problem("writer " + id + ": sequence " + seq + " after " + (b.nextSeq - 1) + " announcing "
                        + droppedBefore + " drops");
                if (seq < b.nextSeq) {
                    return;
                }
            }
            b.nextSeq = seq + 1;
            if (kind == RingWriters.KIND_TOMBSTONE) {
                b.lost++;
            } else {
                b.read++;
                read++;
            }
        }
    }

    /** The reader thread: reads and checks records until stopped, then until the ring is empty. */
    private static final class Reader implements Runnable {
        final SharedRingBuffer ring;
        final Verifier verifier;
        volatile boolean stopping;
        volatile long drainUntil = Long.MAX_VALUE;
        volatile long records;
        volatile Throwable failure;
        /** Written by the reader thread only; volatile so the hostile phase can wait on it. */
        volatile long corrupt;

        Reader(SharedRingBuffer ring, Verifier verifier) {
            this.ring = ring;
            this.verifier = verifier;
        }

        long records() {
            return records;
        }

        void drain(long millis) {
            drainUntil = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
            stopping = true;
        }

        void stop() {
            drainUntil = 0;
            stopping = true;
        }

        @Override
        public void run() {
            RecordSlot slot = ring.newSlot();
            try {
                while (true) {
                    SharedRingBuffer.ReadResult result = ring.beginRead(slot);
                    if (result == SharedRingBuffer.ReadResult.OK) {
                        byte[] record = new byte[(int) slot.length()];
                        MemorySegment.copy(slot.buffer(), Layouts.BYTE, slot.offset(), record, 0, record.length);
                        ring.endRead(slot);
                        verifier.check(record);
                        records++;
                        continue;
                    }
                    if (result == SharedRingBuffer.ReadResult.CORRUPT) {
                        corrupt++;
                    }
                    if (stopping && (ring.readAvailable() == 0 || System.nanoTime() > drainUntil)) {
                        if (ring.readAvailable() != 0) {
                            verifier.problem(ring.readAvailable() + " bytes left unread in the ring");
                        }
                        return;
                    }
                    LockSupport.parkNanos(50_000);
                }
            } catch (Throwable t) {
                failure = t;
            }
        }
    }

    // ---- hostile phase ----

    private Hostile hostilePhase() throws IOException, InterruptedException {
        SplittableRandom random = new SplittableRandom(options.seed ^ 0x5DEECE66DL);
        long rewrites = 0;
        try (SharedRingBuffer ring = SharedRingBuffer.create(options.ringSize)) {
            Verifier verifier = new Verifier();
            Reader reader = new Reader(ring, verifier);
            Thread readerThread = Thread.ofPlatform().name("ring stress hostile reader").start(reader);
            long end = System.nanoTime() + options.hostile.toNanos();
            try (RingWriters writers = new RingWriters(ring, options, end, verifier::register)) {
                for (int i = 0; i < options.writers; i++) {
                    writers.start(random.nextLong());
                }
                MemorySegment meta = ring.metadata();
                String missed = corruptUntilTheReaderSeesIt(meta, reader);
                rewrites++;
                while (System.nanoTime() < end || rewrites < MIN_HOSTILE_REWRITES) {
                    rewrite(meta, ring.size(), random);
                    rewrites++;
                    LockSupport.parkNanos(200_000 + random.nextInt(800_000));
                }
                writers.awaitExit(EXIT_SECONDS);
                reader.stop();
                readerThread.join();
                long readsCorrupt = ring.stats().numReadsCorrupt();
                Throwable thrown = reader.failure;
                String failure = thrown != null ? thrown.toString() : missed;
                Hostile hostile = new Hostile(rewrites, reader.records(), reader.corrupt, verifier.problemCount,
                        readsCorrupt, failure);
                log.printf("ring stress, hostile phase: %d rewrites of the metadata; the reader read %d records, %d of"
                                + " them bad, and %d corrupt reads (%d in the ring's stats)%s; all excused%n",
                        rewrites, hostile.recordsRead, hostile.badRecords, hostile.corruptReads, readsCorrupt,
                        failure == null ? "" : ", and failed: " + failure);
                return hostile;
            } finally {
                reader.stop();
                readerThread.join();
            }
        }
    }

    /**
     * The first rewrite, one the reader cannot miss: write_pos put just behind read_pos, held
     * until the reader has counted a corrupt read, then both positions put back in order. The
     * random rewrites after it may or may not be met, as their timing falls. Returns null, or
     * what went wrong: a reader that never noticed.
     */
    private static String corruptUntilTheReaderSeesIt(MemorySegment meta, Reader reader) {
        long writePos = getLongAcquire(meta, WRITE_POS) & ~7L;
        // Behind read_pos even if the reader has freed records it has not handed back yet,
        // and before it in unsigned order even at 0 (then it is over a ring's size ahead).
        putLongOpaque(meta, WRITE_POS, (getLongAcquire(meta, READ_POS) & ~7L) - 8);
        String missed = awaitReader(() -> reader.corrupt, 0, reader, FIRST_CORRUPTION_SECONDS) ? null
                : "the reader met no corrupt read in " + FIRST_CORRUPTION_SECONDS + " s with write_pos behind read_pos";
        putLongOpaque(meta, READ_POS, writePos);
        putLongOpaque(meta, WRITE_POS, writePos);
        return missed;
    }

    /** One random rewrite of the metadata: a position, the lock word, or a stat. */
    private static void rewrite(MemorySegment meta, long size, SplittableRandom random) {
        long readPos = getLongAcquire(meta, READ_POS);
        long writePos = getLongAcquire(meta, WRITE_POS);
        switch (random.nextInt(6)) {
            case 0 -> putLongOpaque(meta, READ_POS, readPos + random.nextLong(-size, size));
            case 1 -> putLongOpaque(meta, WRITE_POS, writePos + random.nextLong(-size, size));
            case 2 -> putLongOpaque(meta, random.nextBoolean() ? READ_POS : WRITE_POS, random.nextLong());
            case 3 -> putLongOpaque(meta, LOCK_WORD, random.nextBoolean() ? 0 : random.nextLong() & ~0xFF00L);
            case 4 -> putLongOpaque(meta, STATS_FIRST + 8L * random.nextInt((int) ((STATS_LAST - STATS_FIRST) / 8) + 1),
                    random.nextLong());
            default -> {
                // Put both positions back in order now and then, so that writers and reader
                // get going again and meet the next rewrite mid-record.
                putLongOpaque(meta, READ_POS, writePos & ~7L);
                putLongOpaque(meta, WRITE_POS, writePos & ~7L);
            }
        }
    }
}
