package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.heapprofd.client.HeapprofdClient;
import dev.ffmtrace.heapprofd.client.ProfiledArena;
import dev.ffmtrace.heapprofd.wire.ClientConfiguration;
import dev.ffmtrace.memory.NativeException;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.memory.testing.CPrograms;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The service with real clients: the Java client in this process, and the C client preloaded into a program. */
class HeapprofdServiceTest {
    static UnixAddress address() {
        return UnixAddress.abstractName("ffmtrace-heapprofd-service-" + Os.pid() + "-" + System.nanoTime());
    }

    static ClientConfiguration everyByte(String heap) {
        return new ClientConfiguration(1, 0, 0, 0, List.of(new ClientConfiguration.Heap(heap, 1)), true, false, false, false);
    }

    @Test
    void aJavaClientsArenaAllocationsAreBookedByCallsite() throws Exception {
        try (HeapprofdService service = HeapprofdService.start(address(), everyByte("java.ffm"), 1 << 20)) {
            try (HeapprofdClient client = HeapprofdClient.connect(service.address())) {
                int heap = client.registerHeap("java.ffm");
                try (ProfiledArena arena = new ProfiledArena(Arena.ofShared(), client, heap)) {
                    for (int i = 0; i < 10; i++) {
                        small(arena);
                    }
                    for (int i = 0; i < 4; i++) {
                        large(arena);
                    }
                    // The service reads the ring on its own thread: wait for the last record's effect.
                    Await.until(() -> service.folded(true).stream().anyMatch(line -> line.endsWith(" 40000")));
                    List<String> folded = service.folded(true);
                    assertEquals(2, folded.size(), folded.toString());
                    String process = folded.getFirst().substring(0, folded.getFirst().indexOf(';'));
                    assertTrue(process.endsWith("(" + Os.pid() + ")"), process);
                    assertTrue(lineFor(folded, ".small(") .endsWith(" 1000"), folded.toString());
                    assertTrue(lineFor(folded, ".large(").endsWith(" 40000"), folded.toString());
                }
                // Closing the arena frees every allocation: nothing unreleased, everything allocated.
                Await.until(() -> service.folded(true).stream().allMatch(line -> line.endsWith(" 0")));
                assertEquals(2, service.folded(true).size());
                assertTrue(lineFor(service.folded(false), ".large(").endsWith(" 40000"));
            }
            assertEquals(0, service.totals().malformed());
        }
    }

    /** No polling after a client's end: once the wait returns, every record it wrote is booked. */
    @Test
    void awaitingTheClientsEndFindsTheirLastRecordsBooked() throws Exception {
        try (HeapprofdService service = HeapprofdService.start(address(), everyByte("java.ffm"), 1 << 20)) {
            HeapprofdClient client = HeapprofdClient.connect(service.address());
            int heap = client.registerHeap("java.ffm");
            try (ProfiledArena arena = new ProfiledArena(Arena.ofShared(), client, heap)) {
                for (int i = 0; i < 1000; i++) {
                    small(arena);
                }
                assertFalse(service.awaitClientsGone(Duration.ofMillis(50)), "the client is still connected");
                client.close();
                assertTrue(service.awaitClientsGone(Duration.ofSeconds(30)));
                assertTrue(lineFor(service.folded(false), ".small(").endsWith(" 100000"), service.folded(false).toString());
                assertTrue(service.clientsGone());
            }
        }
    }

    private static MemorySegment small(Arena arena) {
        return arena.allocate(100);
    }

    private static MemorySegment large(Arena arena) {
        return arena.allocate(10_000);
    }

    @Test
    void theCClientsPatternIsBookedUnderItsUnwoundStacks() throws Exception {
        try (HeapprofdService service = HeapprofdService.start(address(), everyByte("libc.malloc"), 1 << 20)) {
            Process process = pattern(service).start();
            process.getInputStream().readAllBytes();
            assertTrue(process.waitFor(60, TimeUnit.SECONDS));
            assertEquals(0, process.exitValue());
            assertCPatternBooked(service, "heapprofd_patte (" + process.pid() + ");_start;");
            assertTrue(service.totals().nativeStacks() >= 2_000, service.totals().toString());
        }
    }

    /**
     * Waits for the C pattern's bytes (1,000,000 from a(); 3,000,000 from b(), half freed),
     * then checks that each is one callsite whose stack starts with {@code root} and holds
     * the program's frames alone (the client's hooks dropped), unwound with no error.
     */
    private static void assertCPatternBooked(HeapprofdService service, String root) throws InterruptedException {
        // The process has exited; the service may still be reading the last of its records.
        Await.until(() -> bytesUnder(service.folded(false), ";main;b") == 3_000_000
                && bytesUnder(service.folded(true), ";main;b") == 1_500_000);
        List<String> unreleased = service.folded(true);
        List<String> allocated = service.folded(false);
        assertEquals(1_000_000, bytesUnder(unreleased, ";main;a"), unreleased.toString());
        assertEquals(1_000_000, bytesUnder(allocated, ";main;a"), allocated.toString());
        assertEquals(1_500_000, bytesUnder(unreleased, ";main;b"), unreleased.toString());
        assertEquals(3_000_000, bytesUnder(allocated, ";main;b"), allocated.toString());
        for (String leaf : List.of(";main;a ", ";main;b ")) {
            List<String> lines = allocated.stream().filter(line -> line.contains(leaf)).toList();
            assertEquals(1, lines.size(), lines.toString());
            assertTrue(lines.getFirst().startsWith(root), lines.getFirst());
            assertFalse(lines.getFirst().contains("malloc"), lines.getFirst());
        }
        assertEquals(0, service.totals().malformed());
        assertEquals(0, service.totals().unwindingErrors(), allocated.toString());
    }

    /**
     * The same pattern from a program built without frame pointers: only .eh_frame unwinds
     * it, through a(), b() and main, then libc's start-up code (which has no frame pointers
     * either) to _start, whose CFI ends the stack.
     */
    @Test
    void aProgramWithoutFramePointersIsUnwoundByItsCfi() throws Exception {
        try (HeapprofdService service = HeapprofdService.start(address(), everyByte("libc.malloc"), 1 << 20)) {
            Process process = preloaded(service, "heapprofd_cfi").start();
            process.getInputStream().readAllBytes();
            assertTrue(process.waitFor(60, TimeUnit.SECONDS));
            assertEquals(0, process.exitValue());
            assertCPatternBooked(service, "heapprofd_cfi (" + process.pid() + ");_start;");
        }
    }

    /**
     * A comparison function that allocates, called by libc's qsort: its stacks go through
     * libc's frames, which have no frame pointers, to main and on to _start.
     */
    @Test
    void aStackThroughLibcsQsortUnwindsToMain() throws Exception {
        try (HeapprofdService service = HeapprofdService.start(address(), everyByte("libc.malloc"), 1 << 20)) {
            Process process = preloaded(service, "heapprofd_cfi", "qsort").start();
            process.getInputStream().readAllBytes();
            assertTrue(process.waitFor(60, TimeUnit.SECONDS));
            assertEquals(0, process.exitValue());
            Await.until(() -> bytesUnder(service.folded(false), ";compare") > 0);
            List<String> allocated = service.folded(false);
            List<String> lines = allocated.stream().filter(line -> line.contains(";compare ")).toList();
            assertFalse(lines.isEmpty(), allocated.toString());
            for (String line : lines) {
                assertTrue(line.startsWith("heapprofd_cfi (" + process.pid() + ");_start;"), line);
                String throughLibc = line.substring(line.indexOf(";main;") + ";main;".length(), line.indexOf(";compare "));
                assertTrue(throughLibc.startsWith("qsort"), line);
                assertTrue(Pattern.matches("[\\w.]+(;(qsort\\w*|libc\\.so\\.6\\+0x\\p{XDigit}+))*", throughLibc), line);
                assertEquals(0, Long.parseLong(line.substring(line.lastIndexOf(' ') + 1)) % 7000, line);
            }
            assertEquals(0, service.totals().unwindingErrors(), allocated.toString());
        }
    }

    /**
     * Threads created through the client's pthread_create, which learns each one's stack
     * bounds (outside any hook) and then jumps to its routine: no frame of the client's is
     * on their stacks, which unwind to libc's thread start.
     */
    @Test
    void threadsStartedThroughTheClientUnwindWithoutAFrameOfIts() throws Exception {
        try (HeapprofdService service = HeapprofdService.start(address(), everyByte("libc.malloc"), 1 << 20)) {
            Process process = pattern(service, "threads").start();
            process.getInputStream().readAllBytes();
            assertTrue(process.waitFor(60, TimeUnit.SECONDS));
            assertEquals(0, process.exitValue());
            Await.until(() -> bytesUnder(service.folded(false), ";allocate_from_t;t") == 4 * 1000 * 2000);
            List<String> lines = service.folded(false).stream().filter(line -> line.contains(";allocate_from_t;t ")).toList();
            for (String line : lines) {
                assertTrue(line.startsWith("heapprofd_patte (" + process.pid() + ");libc.so.6+0x"), line);
                assertFalse(line.contains("libffmtrace_heapprofd") || line.contains("with_bounds"), line);
            }
            assertEquals(0, service.totals().unwindingErrors(), lines.toString());
        }
    }

    /**
     * A signal handler that allocates on an alternate signal stack, a mapping of its own
     * with an inaccessible page right above it: the client copies that stack up to its end
     * (sigaltstack's bounds), not the thread's bounds nor a fixed size, which would fault.
     */
    @Test
    void aSignalHandlerOnAnAlternateStackIsCopiedWithinIt() throws Exception {
        try (HeapprofdService service = HeapprofdService.start(address(), everyByte("libc.malloc"), 1 << 20)) {
            Process process = pattern(service, "altstack").start();
            process.getInputStream().readAllBytes();
            assertTrue(process.waitFor(60, TimeUnit.SECONDS));
            assertEquals(0, process.exitValue(), "the program ran to its end");
            Await.until(() -> bytesUnder(service.folded(false), ";allocate_from_h;h") == 7000);
        }
    }

    /**
     * A thread glibc starts itself (a SIGEV_THREAD timer's), not through pthread_create:
     * the client finds its stack's bounds in /proc/self/maps from the hook.
     */
    @Test
    void aThreadStartedInsideLibcIsProfiled() throws Exception {
        try (HeapprofdService service = HeapprofdService.start(address(), everyByte("libc.malloc"), 1 << 20)) {
            Process process = pattern(service, "timer").start();
            process.getInputStream().readAllBytes();
            assertTrue(process.waitFor(60, TimeUnit.SECONDS));
            assertEquals(0, process.exitValue());
            Await.until(() -> bytesUnder(service.folded(false), ";allocate_from_u;u") == 6000);
            String line = service.folded(false).stream().filter(l -> l.endsWith(";allocate_from_u;u 6000")).findFirst()
                    .orElseThrow();
            assertTrue(line.startsWith("heapprofd_patte (" + process.pid() + ");libc.so.6+0x"), line);
        }
    }

    @Test
    void aStackLargerThanItsCopyIsReadFromTheLiveProcess() throws Exception {
        try (HeapprofdService service = HeapprofdService.start(address(), everyByte("libc.malloc"), 1 << 20)) {
            Process process = pattern(service, "deep").start();
            try {
                // c()'s block is 5,000 bytes under deep(), whose 96 KiB frame ends the 64 KiB copy:
                // main's frame is beyond it, in the process, which waits for a line on stdin.
                Await.until(() -> bytesUnder(service.folded(true), ";main;deep;c") == 5_000);
                String line = service.folded(true).stream().filter(l -> l.endsWith(";main;deep;c 5000")).findFirst()
                        .orElseThrow();
                assertTrue(line.startsWith("heapprofd_patte (" + process.pid() + ");"), line);
                assertEquals(List.of("/proc/" + process.pid() + "/maps", "/proc/" + process.pid() + "/mem"),
                        procFdsOf(process.pid()), "the service holds the client's /proc fds while it lives");
                process.getOutputStream().write('\n');
                process.getOutputStream().flush();
                assertTrue(process.waitFor(60, TimeUnit.SECONDS));
                assertEquals(0, process.exitValue());
            } finally {
                process.destroyForcibly();
            }
            // The client has gone: its connection lets go of them.
            Await.until(() -> procFdsOf(process.pid()).isEmpty());
            assertEquals(0, service.totals().unwindingErrors(), service.folded(false).toString());
        }
    }

    /** Where this JVM's fds into process {@code pid}'s /proc directory point, sorted. */
    static List<String> procFdsOf(long pid) {
        try (var fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.map(fd -> {
                try {
                    return Files.readSymbolicLink(fd).toString();
                } catch (IOException e) {
                    return "";
                }
            }).filter(target -> target.startsWith("/proc/" + pid + "/")).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static ProcessBuilder pattern(HeapprofdService service, String... args) {
        return preloaded(service, "heapprofd_pattern", args);
    }

    /** The test program {@code program} with the C client preloaded, its socket the service's. */
    static ProcessBuilder preloaded(HeapprofdService service, String program, String... args) {
        List<String> command = new ArrayList<>();
        command.add(CPrograms.program(program).toString());
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command);
        builder.environment().put("LD_PRELOAD", CPrograms.program("libffmtrace_heapprofd.so").toString());
        builder.environment().put("FFMTRACE_HEAPPROFD_SOCKET", service.address().toString());
        return builder.redirectError(ProcessBuilder.Redirect.INHERIT);
    }

    /** The bytes of every callsite whose stack ends in {@code leaf}. */
    static long bytesUnder(List<String> folded, String leaf) {
        return folded.stream().filter(line -> line.substring(0, line.lastIndexOf(' ')).endsWith(leaf))
                .mapToLong(line -> Long.parseLong(line.substring(line.lastIndexOf(' ') + 1))).sum();
    }

    @Test
    void aClientThatSendsGarbageOrNothingCostsOnlyItself() throws Exception {
        HeapprofdService service = HeapprofdService.start(address(), everyByte("java.ffm"), 1 << 16);
        try (StreamSocket silent = StreamSocket.connect(service.address());
             StreamSocket rude = StreamSocket.connect(service.address())) {
            try (service) {
                // No fds with the handshake's byte: the service hangs up on this one only.
                rude.send(new byte[] {1, 2, 3});
                assertTrue(hungUp(rude), "the service closed the rude client");
                try (HeapprofdClient client = HeapprofdClient.connect(service.address())) {
                    int heap = client.registerHeap("java.ffm");
                    assertTrue(client.reportAllocation(heap, 0x1000, 64));
                    Await.until(() -> service.totals().records() >= 2);
                }
            }
            // The one that never sent its handshake is let go when the service closes.
            assertTrue(hungUp(silent));
        }
    }

    @Test
    // A service that never let it go would leave the last receive blocked: a failure, not a hang.
    @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aClientThatNeverReadsItsConfigurationCostsOnlyItself() throws Exception {
        HeapprofdService service = HeapprofdService.start(address(), everyByte("java.ffm"), 1 << 16);
        try (StreamSocket mute = StreamSocket.connect(service.address())) {
            try (service) {
                int maps = Os.openReadOnly(Path.of("/proc/self/maps"));
                int mem = Os.openReadOnly(Path.of("/proc/self/mem"));
                try {
                    mute.send(new byte[] {0}, maps, mem);
                } finally {
                    Os.closeFd(maps);
                    Os.closeFd(mem);
                }
                Await.until(() -> service.clients().size() == 1);
                // Its configuration and ring lie unread in its socket while the next client is served.
                try (HeapprofdClient client = HeapprofdClient.connect(service.address())) {
                    int heap = client.registerHeap("java.ffm");
                    assertTrue(client.reportAllocation(heap, 0x1000, 64));
                    Await.until(() -> service.totals().records() >= 2);
                }
            }
            // The service let it go when it closed: what it was sent, then the end of the stream.
            long received = 0;
            byte[] bytes = new byte[ClientConfiguration.SIZE];
            for (;;) {
                StreamSocket.Received read = mute.receive(bytes, 1);
                for (int fd : read.fds()) {
                    Os.closeFd(fd);
                }
                if (read.bytes() <= 0) {
                    break;
                }
                received += read.bytes();
            }
            assertEquals(ClientConfiguration.SIZE, received);
        }
    }

    /** Whether the other end closed: end of stream, or a reset when it left bytes unread. */
    static boolean hungUp(StreamSocket socket) {
        try {
            return socket.receive(new byte[16], 0).bytes() == 0;
        } catch (NativeException e) {
            return e.getMessage().contains("ECONNRESET");
        }
    }

    static String lineFor(List<String> folded, String frame) {
        return folded.stream().filter(line -> line.substring(line.lastIndexOf(';')).contains(frame)).findFirst()
                .orElseThrow(() -> new AssertionError("no callsite ending in " + frame + ": " + folded));
    }

}
