package dev.ffmtrace.shmring;

import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.PID_NAMESPACES_OFFSET;
import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.SPINLOCK_HOLDER_NAMESPACE_OFFSET;
import static dev.ffmtrace.shmring.abi.SharedRingBufferDescriptor.SPINLOCK_HOLDER_PID_OFFSET;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.ListeningSocket;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.memory.testing.CPrograms;
import dev.ffmtrace.shmring.SharedRingBuffer.LockMode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Dead-holder detection across processes (see "Dead lock holders" in SharedRingBuffer): a
 * holder killed but never reaped (a zombie, which {@code kill(pid, 0)} still finds) is found
 * dead by the Java and the C waiter, in BLOCKING mode too; a live holder in another PID
 * namespace, whose pid means nothing here, is not.
 */
class SharedRingBufferDeadHolderTest {
    private static final long RING = 4096;
    /** Far more than the ~1 ms a waiter needs to find a dead holder, far less than forever. */
    private static final long VERDICT_SECONDS = 10;
    private static Path cPeer;

    @BeforeAll
    static void buildPeer() {
        cPeer = CPrograms.program("ring_peer");
    }

    @Test
    void aBlockingJavaWaiterFindsAZombieHolderDead() throws Exception {
        try (Session session = new Session()) {
            Helper holder = session.start("zombie-holder");
            int zombie = zombie(holder);
            CompletableFuture<Boolean> waiter = CompletableFuture.supplyAsync(() -> session.buffer.lock(LockMode.BLOCKING));
            try {
                assertFalse(waiter.get(VERDICT_SECONDS, TimeUnit.SECONDS), "a poisoned lock is not taken");
            } catch (TimeoutException e) {
                fail("a BLOCKING waiter still waits for zombie " + zombie + " after " + VERDICT_SECONDS + " s");
            }
            assertTrue(session.buffer.isSpinlockPoisoned());
            assertEquals("Z", state(zombie), "found dead while still unreaped");
            holder.tell();
            assertEquals("reaped", holder.line());
        }
    }

    @Test
    void aBlockingCWaiterFindsAZombieHolderDead() throws Exception {
        try (Session session = new Session()) {
            Helper holder = session.start("zombie-holder");
            int zombie = zombie(holder);
            Helper waiter = session.start("lock", "blocking");
            String verdict = waiter.line();
            assertTrue(verdict.startsWith("poisoned "), verdict);
            assertTrue(session.buffer.isSpinlockPoisoned());
            assertEquals("Z", state(zombie), "found dead while still unreaped");
            holder.tell();
            assertEquals("reaped", holder.line());
        }
    }

    @Test
    void aCWaiterThatTakesOverDeadHoldersGetsTheLockBackInsteadOfPoisoningIt() throws Exception {
        try (Session session = new Session()) {
            Helper holder = session.start("zombie-holder");
            zombie(holder);
            String verdict = session.start("lock", "try", "take-over").line();
            assertTrue(verdict.startsWith("took-over "), verdict);
            assertFalse(session.buffer.isSpinlockPoisoned());
            assertTrue(session.buffer.lock(LockMode.TRY), "released by the waiter that took it over");
            session.buffer.unlock();
            holder.tell();
            assertEquals("reaped", holder.line());
        }
    }

    @Test
    void aLiveHolderInAnotherPidNamespaceIsNotJudgedDeadByTheJavaOrTheCWaiter() throws Exception {
        int innerPid = pidUnusedHere();
        try (Session session = new Session()) {
            Helper holder = session.startInPidNamespace(innerPid, "hold-until-told");
            assertEquals("holding " + innerPid, holder.line(), "the holder's pid in its own namespace");
            assertHeldFromAnotherNamespace(session.buffer, innerPid);

            assertFalse(session.buffer.lock(LockMode.TRY), "held throughout the try");
            assertFalse(session.buffer.isSpinlockPoisoned(), "a live holder judged dead");
            String verdict = session.start("lock", "try").line();
            assertTrue(verdict.startsWith("failed "), verdict);
            assertFalse(session.buffer.isSpinlockPoisoned(), "a live holder judged dead by the C waiter");

            AtomicBoolean told = new AtomicBoolean();
            // Whether the holder had been told to release when the waiter got the lock.
            CompletableFuture<Boolean> waiter = CompletableFuture.supplyAsync(
                    () -> session.buffer.lock(LockMode.BLOCKING) && told.get());
            told.set(true);
            holder.tell();
            assertTrue(waiter.get(VERDICT_SECONDS, TimeUnit.SECONDS),
                    "a BLOCKING waiter waits for a live holder, and takes the lock once it is released");
            session.buffer.unlock();
            assertEquals("released", holder.line());
            assertEquals(2, session.buffer.stats().failedSpinlocks(), "the two tries");
        }
    }

    @Test
    void aHolderThatDiedInAnotherPidNamespaceLeavesOnlyTheTimeout() throws Exception {
        int innerPid = pidUnusedHere();
        try (Session session = new Session()) {
            Helper holder = session.startInPidNamespace(innerPid, "hold-and-die");
            assertEquals("holding", holder.line());
            assertTrue(holder.process.waitFor(VERDICT_SECONDS, TimeUnit.SECONDS), "the holder's namespace ends with it");
            assertEquals(0, holder.process.exitValue());
            assertHeldFromAnotherNamespace(session.buffer, innerPid);

            long start = System.nanoTime();
            assertFalse(session.buffer.lock(LockMode.TRY));
            long elapsedMillis = (System.nanoTime() - start) / 1_000_000;
            assertTrue(elapsedMillis >= 999, "gave up after " + elapsedMillis + " ms, not at the timeout");
            assertFalse(session.buffer.isSpinlockPoisoned(), "another namespace's pid was read as ours");
        }
    }

    /** The lock held by pid {@code innerPid} of a namespace entered in the table after ours. */
    private static void assertHeldFromAnotherNamespace(SharedRingBuffer buffer, int innerPid) {
        assertEquals(innerPid, buffer.metadata().get(Layouts.INT, SPINLOCK_HOLDER_PID_OFFSET));
        assertEquals(2, buffer.metadata().get(Layouts.SHORT, SPINLOCK_HOLDER_NAMESPACE_OFFSET));
        long[] namespaces = {buffer.metadata().get(Layouts.LONG, PID_NAMESPACES_OFFSET),
                buffer.metadata().get(Layouts.LONG, PID_NAMESPACES_OFFSET + 8)};
        assertEquals(Os.pidNamespaceId(), namespaces[0]);
        assertNotEquals(0, namespaces[1]);
        assertNotEquals(namespaces[0], namespaces[1]);
    }

    /** Waits for the helper's zombie and checks it is one that {@code kill(pid, 0)} still finds. */
    private static int zombie(Helper holder) throws IOException {
        String line = holder.line();
        assertTrue(line.startsWith("zombie "), line);
        int zombie = Integer.parseInt(line.substring("zombie ".length()));
        assertEquals("Z", state(zombie));
        assertTrue(Os.processExists(zombie), "kill(pid, 0) succeeds on a zombie");
        return zombie;
    }

    /** The state letter of /proc/PID/stat (after the command name, which may hold spaces and parentheses). */
    private static String state(int pid) throws IOException {
        // Lines, not readString: a JDK read of a /proc file by its size can stop short.
        String stat = Files.readAllLines(Path.of("/proc/" + pid + "/stat")).getFirst();
        int end = stat.lastIndexOf(')');
        return stat.substring(end + 2, end + 3);
    }

    /**
     * A pid no process has here, below every pid_max, to give the holder in its own namespace:
     * read here it names no process, so a waiter that read it would find the holder "dead".
     * Skips the test where unprivileged user and PID namespaces are not permitted.
     */
    private static int pidUnusedHere() throws Exception {
        String probe = run("unshare", "-Urp", "--kill-child", "--mount-proc", "sh", "-c",
                "echo 99 > /proc/sys/kernel/ns_last_pid");
        assumeTrue(probe == null, "a user and PID namespace of our own (unshare -Urp --kill-child --mount-proc, then"
                + " writing ns_last_pid in it) is not permitted here: " + probe);
        int pidMax = Integer.parseInt(Files.readAllLines(Path.of("/proc/sys/kernel/pid_max")).getFirst().trim());
        for (int pid = pidMax - 1; pid > pidMax / 2; pid--) {
            if (!Os.processExists(pid)) {
                return pid;
            }
        }
        throw new AssertionError("every pid above " + pidMax / 2 + " is in use");
    }

    /** Null if the command succeeds, otherwise why not. */
    private static String run(String... command) throws InterruptedException {
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(VERDICT_SECONDS, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                return "timed out";
            }
            return process.exitValue() == 0 ? null : "exit " + process.exitValue() + ": " + output.strip();
        } catch (IOException e) {
            return e.getMessage();
        }
    }

    /** A buffer we create, and the ring_peer processes attached to it, each over a connection of its own. */
    private static final class Session implements AutoCloseable {
        final UnixAddress address = SharedRingBufferCrossProcessTest.freshAddress();
        final ListeningSocket server = ListeningSocket.listen(address, 4);
        final SharedRingBuffer buffer = SharedRingBuffer.create(RING);
        final List<Helper> helpers = new ArrayList<>();

        /** ring_peer attached to our buffer, running {@code action}. */
        Helper start(String... action) {
            List<String> command = new ArrayList<>(List.of(cPeer.toString(), "@" + address.name(), "attach"));
            command.addAll(List.of(action));
            return attach(command);
        }

        /**
         * ring_peer in a new PID namespace (and the user namespace that allows it), with pid
         * {@code pid} there: its shell, pid 1, sets the namespace's last pid, then forks it.
         */
        Helper startInPidNamespace(int pid, String... action) {
            List<String> command = new ArrayList<>(List.of("unshare", "-Urp", "--kill-child", "--mount-proc", "sh", "-c",
                    "echo " + (pid - 1) + " > /proc/sys/kernel/ns_last_pid && \"$0\" \"$@\"; exit $?",
                    cPeer.toString(), "@" + address.name(), "attach"));
            command.addAll(List.of(action));
            return attach(command);
        }

        /** Starts the helper and sends it the buffer; fails, rather than waits for good, if it never connects. */
        private Helper attach(List<String> command) {
            Helper helper = Helper.start(command);
            helpers.add(helper);
            CompletableFuture<StreamSocket> accepted = CompletableFuture.supplyAsync(server::accept, Executors.newVirtualThreadPerTaskExecutor());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(VERDICT_SECONDS);
            while (helper.connection == null) {
                try {
                    helper.connection = accepted.get(helper.process.isAlive() ? 20 : 1000, TimeUnit.MILLISECONDS);
                } catch (TimeoutException e) {
                    if (!helper.process.isAlive() || System.nanoTime() > deadline) {
                        throw new AssertionError(command + " did not connect: " + helper.stderr());
                    }
                } catch (ExecutionException | InterruptedException e) {
                    throw new AssertionError("accept failed", e);
                }
            }
            helper.connection.send(new byte[] {'F'}, buffer.fd());
            return helper;
        }

        @Override
        public void close() {
            for (Helper helper : helpers) {
                helper.close();
            }
            buffer.close();
            server.close();
        }
    }

    /** A C process whose output is read line by line while it runs. */
    private static final class Helper implements AutoCloseable {
        final List<String> command;
        final Process process;
        final BufferedReader out;
        final CompletableFuture<String> err;
        StreamSocket connection;

        private Helper(List<String> command, Process process) {
            this.command = command;
            this.process = process;
            this.out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            this.err = CompletableFuture.supplyAsync(() -> {
                try {
                    return new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }, Executors.newVirtualThreadPerTaskExecutor());
        }

        static Helper start(List<String> command) {
            try {
                return new Helper(command, new ProcessBuilder(command).start());
            } catch (IOException e) {
                throw new AssertionError("cannot start " + command, e);
            }
        }

        /** The next line of output, within the verdict time. */
        String line() {
            CompletableFuture<String> line = CompletableFuture.supplyAsync(() -> {
                try {
                    return out.readLine();
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }, Executors.newVirtualThreadPerTaskExecutor());
            try {
                String text = line.get(VERDICT_SECONDS, TimeUnit.SECONDS);
                if (text == null) {
                    process.waitFor(VERDICT_SECONDS, TimeUnit.SECONDS);
                    throw new AssertionError(command + " ended without a line"
                            + (process.isAlive() ? "" : " (exit " + process.exitValue() + ")") + ": " + stderr());
                }
                return text;
            } catch (TimeoutException e) {
                throw new AssertionError("no line from " + command + " within " + VERDICT_SECONDS + " s: " + stderr());
            } catch (ExecutionException e) {
                throw new AssertionError("cannot read the output of " + command, e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted", e);
            }
        }

        /** The byte a holding helper waits for. */
        void tell() {
            connection.send(new byte[] {'G'});
        }

        private String stderr() {
            return err.getNow("(stderr still open)");
        }

        @Override
        public void close() {
            if (connection != null) {
                connection.close();
            }
            process.destroyForcibly();
            try {
                process.waitFor(VERDICT_SECONDS, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
