package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.heapprofd.client.HeapprofdClient;
import dev.ffmtrace.heapprofd.client.ProfiledArena;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.memory.testing.Peers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import static dev.ffmtrace.heapprofd.service.HeapprofdServiceTest.address;
import static dev.ffmtrace.heapprofd.service.HeapprofdServiceTest.everyByte;
import static dev.ffmtrace.heapprofd.service.HeapprofdServiceTest.lineFor;
import static dev.ffmtrace.heapprofd.service.HeapprofdServiceTest.pattern;
import static dev.ffmtrace.heapprofd.service.HeapprofdServiceTest.procFdsOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The service with clients in other processes: a Java client in a second JVM
 * ({@link HeapprofdPeer}) booked under its own pid, and clients killed by SIGKILL while
 * they write (a Java one, the C one, and a hand-made one that dies holding its ring's
 * spinlock over a record it never committed): each costs only itself.
 */
class HeapprofdCrossProcessTest {
    /** What a process killed by signal 9 exits with, as Java reports it. */
    private static final int KILLED_BY_SIGKILL = 128 + 9;

    @Test
    void aJavaClientInAnotherJvmIsBookedByCallsiteUnderItsOwnPid() throws Exception {
        try (HeapprofdService service = HeapprofdService.start(address(), everyByte(HeapprofdPeer.HEAP), 1 << 20)) {
            Peers.Peer peer = Peers.startJvm(HeapprofdPeer.class, service.address().toString(), "pattern");
            assertEquals("done\n", peer.awaitSuccess());
            long pid = peer.process().pid();
            Await.until(() -> closed(service, pid));
            assertPatternBooked(service, pid);
            assertEquals(0, service.totals().malformed());
        }
    }

    /** HeapprofdPeer's pattern, exactly: two callsites, a()'s all unreleased, half of b()'s freed. */
    static void assertPatternBooked(HeapprofdService service, long pid) {
        List<String> unreleased = linesOf(service.folded(true), pid);
        List<String> allocated = linesOf(service.folded(false), pid);
        assertEquals(2, unreleased.size(), unreleased.toString());
        long a = (long) HeapprofdPeer.BLOCKS * HeapprofdPeer.A_BYTES;
        long b = (long) HeapprofdPeer.BLOCKS * HeapprofdPeer.B_BYTES;
        assertTrue(lineFor(unreleased, "HeapprofdPeer.a(").endsWith(" " + a), unreleased.toString());
        assertTrue(lineFor(allocated, "HeapprofdPeer.a(").endsWith(" " + a), allocated.toString());
        assertTrue(lineFor(unreleased, "HeapprofdPeer.b(").endsWith(" " + b / 2), unreleased.toString());
        assertTrue(lineFor(allocated, "HeapprofdPeer.b(").endsWith(" " + b), allocated.toString());
    }

    @Test
    void aJavaClientKilledMidWriteCostsOnlyItself() throws Exception {
        try (HeapprofdService service = HeapprofdService.start(address(), everyByte(HeapprofdPeer.HEAP), 1 << 16)) {
            Peers.Peer peer = Peers.startJvm(HeapprofdPeer.class, service.address().toString(), "loop");
            assertKilledClientCostsOnlyItself(service, peer.process(),
                    frame -> frame.startsWith(HeapprofdPeer.class.getName() + ".churn("));
        }
    }

    @Test
    void aCClientKilledMidWriteCostsOnlyItself() throws Exception {
        try (HeapprofdService service = HeapprofdService.start(address(), everyByte("libc.malloc"), 1 << 20)) {
            Process process = pattern(service, "loop").redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            assertKilledClientCostsOnlyItself(service, process, "l"::equals);
        }
    }

    @Test
    void aClientKilledHoldingItsRingsLockOverAnUncommittedRecordCostsOnlyItself(@TempDir Path dir) throws Exception {
        try (HeapprofdService service = HeapprofdService.start(address(), everyByte(HeapprofdPeer.HEAP), 1 << 16)) {
            Path holding = dir.resolve("holding");
            Peers.Peer peer = Peers.startJvm(HeapprofdPeer.class, service.address().toString(), "hold-lock",
                    holding.toString());
            try (AutoCloseable _ = peer.process()::destroyForcibly) {
                Await.until(() -> Files.exists(holding) || !peer.process().isAlive());
                assertTrue(peer.process().isAlive(), () -> "the peer died: " + peer.err().getNow(""));
                long held = (long) HeapprofdPeer.HELD_BLOCKS * HeapprofdPeer.HELD_BYTES;
                List<String> booked = List.of(HeapprofdPeer.HELD_FRAME + " " + held);
                Await.until(() -> callsites(service.folded(true), peer.process().pid()).equals(booked));
                assertKilledClientCostsOnlyItself(service, peer.process(), HeapprofdPeer.HELD_FRAME::equals);
                assertEquals(booked, callsites(service.folded(true), peer.process().pid()));
            }
        }
    }

    /**
     * Once the client has booked records, connects a second client (this JVM), kills the
     * first by SIGKILL and checks: its connection is torn down (its /proc fds let go), what it
     * booked stays booked, nothing was read malformed, and the second client, writing before
     * and after the kill, is booked exactly.
     */
    private static void assertKilledClientCostsOnlyItself(HeapprofdService service, Process victim,
                                                          Predicate<String> leaf) throws Exception {
        long pid = victim.pid();
        String heap = service.configuration().heaps().getFirst().name();
        try (AutoCloseable _ = victim::destroyForcibly;
             HeapprofdClient survivor = HeapprofdClient.connect(service.address());
             ProfiledArena arena = new ProfiledArena(Arena.ofShared(), survivor, survivor.registerHeap(heap))) {
            Await.until(() -> bytesAt(service.folded(false), pid, leaf) > 0 || !victim.isAlive());
            for (int i = 0; i < 5; i++) {
                survive(arena);
            }
            long bookedBeforeKill = bytesAt(service.folded(false), pid, leaf);
            assertTrue(bookedBeforeKill > 0, () -> "nothing booked at the leaf: " + service.folded(false));
            victim.destroyForcibly();
            assertTrue(victim.waitFor(10, TimeUnit.SECONDS));
            assertEquals(KILLED_BY_SIGKILL, victim.exitValue());
            Await.until(() -> closed(service, pid));
            long bookedAtTeardown = bytesAt(service.folded(false), pid, leaf);
            assertTrue(bookedAtTeardown >= bookedBeforeKill,
                    bookedAtTeardown + " booked, " + bookedBeforeKill + " before the kill");
            // Its /proc fds are let go.
            Await.until(() -> procFdsOf(pid).isEmpty());

            for (int i = 0; i < 5; i++) {
                survive(arena);
            }
            // Two callsites, one per loop above, each of 5 blocks of 100 bytes.
            Predicate<String> survive = frame -> frame.startsWith(HeapprofdCrossProcessTest.class.getName() + ".survive(");
            Await.until(() -> bytesAt(service.folded(true), Os.pid(), survive) == 1000);
            List<String> survivors = linesOf(service.folded(true), Os.pid());
            assertEquals(List.of(500L, 500L),
                    survivors.stream().map(line -> bytesAt(List.of(line), Os.pid(), survive)).toList(),
                    survivors.toString());
            assertTrue(survivor.isActive());
            assertEquals(bookedAtTeardown, bytesAt(service.folded(false), pid, leaf), "the dead client's books stay");
            assertEquals(0, service.totals().malformed(), service.processStats().toString());
        }
    }

    private static void survive(Arena arena) {
        arena.allocate(100);
    }

    /** Whether the client of process {@code pid} made its handshake, went, and had its records booked. */
    static boolean closed(HeapprofdService service, long pid) {
        List<ClientConnection> connections = service.clients().stream().filter(client -> client.pid == pid).toList();
        return !connections.isEmpty() && connections.stream().allMatch(ClientConnection::isClosed);
    }

    /** The folded lines of process {@code pid}. */
    static List<String> linesOf(List<String> folded, long pid) {
        String process = "(" + pid + ")";
        return folded.stream().filter(line -> line.substring(0, line.contains(";") ? line.indexOf(';')
                : line.lastIndexOf(' ')).endsWith(process)).toList();
    }

    /** The bytes of process {@code pid}'s callsites whose leaf frame is one {@code leaf} accepts. */
    private static long bytesAt(List<String> folded, long pid, Predicate<String> leaf) {
        return linesOf(folded, pid).stream()
                .filter(line -> leaf.test(line.substring(line.lastIndexOf(';') + 1, line.lastIndexOf(' '))))
                .mapToLong(line -> Long.parseLong(line.substring(line.lastIndexOf(' ') + 1))).sum();
    }

    /** The folded lines of process {@code pid} without the process. */
    private static List<String> callsites(List<String> folded, long pid) {
        return linesOf(folded, pid).stream().map(line -> line.substring(line.indexOf(';') + 1)).toList();
    }
}
