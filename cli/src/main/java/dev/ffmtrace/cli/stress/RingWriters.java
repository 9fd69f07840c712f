package dev.ffmtrace.cli.stress;

import static dev.ffmtrace.memory.AtomicSegment.getIntAcquire;
import static dev.ffmtrace.memory.AtomicSegment.getLongAcquire;
import static dev.ffmtrace.memory.AtomicSegment.putIntRelease;
import static dev.ffmtrace.memory.AtomicSegment.putLongRelease;

import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.shmring.SharedRingBuffer;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntConsumer;

/**
 * The ring stress's writer processes ({@code native/src/ring_stress_writer.c}, whose comment
 * gives the record and ledger formats) on one ring: starts them, each with a ledger mapped
 * here, kills one (inside the lock if asked) and commits a tombstone for the record it left
 * reserved, stops them, and once they are gone reads what each attempted and dropped.
 */
final class RingWriters implements AutoCloseable {
    /** The record's fixed fields: writer id, kind, sequence number, drops announced. */
    static final int FIXED_FIELDS = 24;
    static final int KIND_RECORD = 0;
    static final int KIND_TOMBSTONE = 1;
    /** Set with the writer's id in a reserved record's unused header bytes. */
    private static final int TAG_BIT = 0x8000_0000;
    private static final int LEDGER_BYTES = 56;
    private static final Path SHM = Path.of("/dev/shm");

    /**
     * What a kill did.
     *
     * @param heldLock   the victim died holding the ring's spinlock
     * @param recordLost its reserved record was committed as a tombstone: lost with the kill
     */
    record Kill(boolean heldLock, boolean recordLost) {
    }

    /**
     * A writer's final counts: from its report if it ended by itself, its ledger if killed.
     *
     * @param problems what its exit showed wrong: a status other than 0, a report that
     *                 disagrees with its ledger
     */
    record Exit(int id, long attempted, long dropped, long takeovers, long lockFailures,
                List<String> problems) {
    }

    private final SharedRingBuffer ring;
    private final RingStress.Options options;
    private final long untilNanos;
    private final IntConsumer starting;
    private final List<Writer> running = new ArrayList<>();
    private final List<Writer> all = new ArrayList<>();

    /**
     * @param untilNanos the writers' own deadline ({@link System#nanoTime()}), unless stopped first
     * @param starting   told each writer's id before its process starts, so that its first
     *                   record finds it known
     */
    RingWriters(SharedRingBuffer ring, RingStress.Options options, long untilNanos, IntConsumer starting) {
        this.ring = ring;
        this.options = options;
        this.untilNanos = untilNanos;
        this.starting = starting;
    }

    /** Writers started so far, killed ones included. */
    int started() {
        return all.size();
    }

    /** Writers running now. */
    int running() {
        return running.size();
    }

    /** Starts a writer with the next id. */
    void start(long seed) throws IOException {
        int id = all.size();
        Path ledger = Files.createTempFile(Files.isDirectory(SHM) ? SHM : Path.of(System.getProperty("java.io.tmpdir")),
                "ffmtrace-ring-ledger-" + id + "-", "");
        Files.write(ledger, new byte[LEDGER_BYTES]);
        List<String> command = List.of(options.program().toString(),
                "--ring", "/proc/" + ProcessHandle.current().pid() + "/fd/" + ring.fd(),
                "--writer-id", Integer.toString(id), "--ledger", ledger.toString(), "--seed", Long.toUnsignedString(seed),
                "--rate", Integer.toString(options.rate()), "--max-payload", Integer.toString(options.maxPayload()),
                "--hold-lock-us", Integer.toString(options.holdLockMicros()),
                "--seconds", Double.toString(Math.max(0.001, (untilNanos - System.nanoTime()) / 1e9)));
        starting.accept(id);
        Writer w = new Writer(id, command, ledger);
        running.add(w);
        all.add(w);
    }

    /**
     * Kills the running writer at {@code index} with SIGKILL, having it take the lock and stay
     * there first if {@code inLock}; once it is reaped, commits a tombstone for the record it
     * left reserved, if any.
     */
    Kill kill(int index, boolean inLock) throws InterruptedException, IOException {
        Writer victim = running.remove(index);
        if (inLock) {
            victim.stayInLock();
        }
        victim.kill();
        boolean lost = salvage(victim);
        victim.release();
        return new Kill(victim.heldLock, lost);
    }

    /** Asks the running writers to end, as at their deadline. */
    void stop() {
        running.forEach(Writer::stop);
    }

    /** Waits for the running writers to end, each for {@code seconds}; kills those that do not. */
    void awaitExit(long seconds) throws InterruptedException {
        for (Writer w : running) {
            w.awaitExit(seconds);
        }
    }

    /** Every writer's final counts, once all are gone. */
    List<Exit> exits() throws IOException {
        List<Exit> exits = new ArrayList<>(all.size());
        for (Writer w : all) {
            exits.add(w.exit());
        }
        return exits;
    }

    @Override
    public void close() throws IOException {
        for (Writer w : all) {
            w.close();
        }
    }

    /**
     * After {@code victim} is reaped: if the record its ledger names was reserved by it (its
     * tag in the header, the write position past it) and is still uncommitted, and the
     * reader has not freed that space, writes a tombstone there and commits it. The space is
     * then ours alone: its writer is dead, nobody else reserves it before the reader passes
     * it, and the reader reads nothing of it before the release store of its length.
     */
    private boolean salvage(Writer victim) {
        long position = getLongAcquire(victim.ledger, 16) - 1;
        if (position < 0) {
            return false;
        }
        int length = (int) getLongAcquire(victim.ledger, 24);
        long stride = (length + RingStress.HEADER + 7) & ~7L;
        MemorySegment meta = ring.metadata();
        MemorySegment buffer = ring.newSlot().buffer();
        long writePos = getLongAcquire(meta, RingStress.WRITE_POS);
        long readPos = getLongAcquire(meta, RingStress.READ_POS);
        long header = position & (ring.size() - 1);
        if (writePos - position < stride || readPos > position || length < FIXED_FIELDS + 4
                || getIntAcquire(buffer, header) != 0 || buffer.get(Layouts.INT, header + 4) != (TAG_BIT | victim.id)) {
            return false;
        }
        long counts = getLongAcquire(victim.ledger, 0);
        byte[] tombstone = new byte[length];
        ByteBuffer out = ByteBuffer.wrap(tombstone).order(ByteOrder.LITTLE_ENDIAN);
        out.putInt(victim.id).putInt(KIND_TOMBSTONE).putLong(counts & 0xFFFF_FFFFL)
                .putLong(getLongAcquire(victim.ledger, 32));
        out.putInt(length - 4, fnv1a(tombstone, length - 4));
        MemorySegment.copy(tombstone, 0, buffer, Layouts.BYTE, header + RingStress.HEADER, length);
        putIntRelease(buffer, header, length);
        return true;
    }

    static int fnv1a(byte[] bytes, int length) {
        int h = 0x811C9DC5;
        for (int i = 0; i < length; i++) {
            h = (h ^ (bytes[i] & 0xFF)) * 0x01000193;
        }
        return h;
    }

    /** A writer process and its ledger, mapped here. */
    private static final class Writer implements AutoCloseable {
        final int id;
        final Process process;
        final Path ledgerPath;
        final Arena arena = Arena.ofShared();
        final MemorySegment ledger;
        final CompletableFuture<String> output;
        boolean killed;
        boolean heldLock;
        /** The ledger's final counts, read once the process is gone; -1 before. */
        long ledgerAttempted = -1;
        long ledgerDropped;

        Writer(int id, List<String> command, Path ledgerPath) throws IOException {
            this.id = id;
            this.ledgerPath = ledgerPath;
            try (FileChannel channel = FileChannel.open(ledgerPath, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                ledger = channel.map(FileChannel.MapMode.READ_WRITE, 0, LEDGER_BYTES, arena);
            }
            process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            process.getOutputStream().close();
            output = CStressProducer.readAll(process.getInputStream());
        }

        /**
         * Asks the writer to take the lock and stay in it; waits until its ledger says so, as
         * long as it takes a writer that starts slowly, or until it ends (by its own deadline
         * at the latest). The writer tells no one but its ledger, hence the look every 20 µs.
         */
        void stayInLock() {
            putLongRelease(ledger, 40, 1);
            while (getLongAcquire(ledger, 8) != 2 && process.isAlive()) {
                LockSupport.parkNanos(20_000);
            }
        }

        /** Asks the writer to end, as at its deadline. */
        void stop() {
            putLongRelease(ledger, 48, 1);
        }

        void kill() throws InterruptedException {
            killed = true;
            process.destroyForcibly();
            process.waitFor();
            heldLock = getLongAcquire(ledger, 8) != 0;
        }

        /** Waits for the writer to end by itself; kills it after {@code seconds}. */
        void awaitExit(long seconds) throws InterruptedException {
            if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
                kill();
            }
        }

        /**
         * Reads the ledger's final counts and unmaps it, once the process is gone: a long
         * run replaces thousands of writers, and each would otherwise keep its mapping.
         */
        void release() throws IOException {
            if (ledgerAttempted < 0) {
                long counts = getLongAcquire(ledger, 0);
                ledgerAttempted = counts & 0xFFFF_FFFFL;
                ledgerDropped = counts >>> 32;
            }
            if (arena.scope().isAlive()) {
                arena.close();
            }
            Files.deleteIfExists(ledgerPath);
        }

        /** The writer's final counts: its report checked against its ledger, or its ledger after a kill. */
        Exit exit() throws IOException {
            release();
            long takeovers = 0;
            long lockFailures = 0;
            List<String> problems = new ArrayList<>();
            if (!killed) {
                String report = output.join();
                // A writer that ends by itself exits 0; any other status is its failure (66: a
                // sanitized build's finding), which its report would not show.
                int status = process.onExit().join().exitValue();
                if (status != 0) {
                    problems.add("writer " + id + " exited with status " + status);
                }
                for (String line : report.split("\n")) {
                    String[] f = line.trim().split(" ");
                    if (f.length == 4 && f[0].equals("R")) {
                        if (Long.parseLong(f[1]) != ledgerAttempted || Long.parseLong(f[3]) != ledgerDropped) {
                            problems.add("writer " + id + " reports " + line + ", its ledger " + ledgerAttempted + "/"
                                    + ledgerDropped);
                        }
                    } else if (f.length == 3 && f[0].equals("S")) {
                        takeovers = Long.parseLong(f[1]);
                        lockFailures = Long.parseLong(f[2]);
                    }
                }
            }
            return new Exit(id, ledgerAttempted, ledgerDropped, takeovers, lockFailures, List.copyOf(problems));
        }

        @Override
        public void close() throws IOException {
            if (process.isAlive()) {
                process.destroyForcibly();
                process.onExit().join();
            }
            release();
        }
    }
}
