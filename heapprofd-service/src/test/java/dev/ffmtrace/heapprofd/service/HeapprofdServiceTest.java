package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.heapprofd.client.HeapprofdClient;
import dev.ffmtrace.heapprofd.client.ProfiledArena;
import dev.ffmtrace.heapprofd.wire.ClientConfiguration;
import dev.ffmtrace.memory.NativeException;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.UnixSocket;
import dev.ffmtrace.memory.testing.CPrograms;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The service with real clients: the Java client in this process, and the C client preloaded into a program. */
class HeapprofdServiceTest {
    private static UnixAddress address() {
        return UnixAddress.abstractName("ffmtrace-heapprofd-service-" + Os.pid() + "-" + System.nanoTime());
    }

    private static ClientConfiguration everyByte(String heap) {
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
                    awaitUntil(() -> service.folded(true).stream().anyMatch(line -> line.endsWith(" 40000")));
                    List<String> folded = service.folded(true);
                    assertEquals(2, folded.size(), folded.toString());
                    String process = folded.getFirst().substring(0, folded.getFirst().indexOf(';'));
                    assertTrue(process.endsWith("(" + Os.pid() + ")"), process);
                    assertTrue(lineFor(folded, ".small(") .endsWith(" 1000"), folded.toString());
                    assertTrue(lineFor(folded, ".large(").endsWith(" 40000"), folded.toString());
                }
                // Closing the arena frees every allocation: nothing unreleased, everything allocated.
                awaitUntil(() -> service.folded(true).stream().allMatch(line -> line.endsWith(" 0")));
                assertEquals(2, service.folded(true).size());
                assertTrue(lineFor(service.folded(false), ".large(").endsWith(" 40000"));
            }
            assertEquals(0, service.totals().malformed());
        }
    }

    private static MemorySegment small(Arena arena) {
        return arena.allocate(100);
    }

    private static MemorySegment large(Arena arena) {
        return arena.allocate(10_000);
    }

    @Test
    void theCClientsPatternArrivesWhole() throws Exception {
        try (HeapprofdService service = HeapprofdService.start(address(), everyByte("libc.malloc"), 1 << 20)) {
            ProcessBuilder builder = new ProcessBuilder(CPrograms.program("heapprofd_pattern").toString());
            builder.environment().put("LD_PRELOAD", CPrograms.program("libffmtrace_heapprofd.so").toString());
            builder.environment().put("FFMTRACE_HEAPPROFD_SOCKET", "@" + service.address().name());
            Process process = builder.redirectErrorStream(true).start();
            process.getInputStream().readAllBytes();
            assertTrue(process.waitFor(60, TimeUnit.SECONDS));
            assertEquals(0, process.exitValue());
            // Native frames are one "[unknown]" callsite until frame-pointer unwinding: its
            // unreleased bytes are a()'s 1,000,000 and half of b()'s 3,000,000, plus libc's own.
            // The process has exited; the service may still be reading the last of its records.
            awaitUntil(() -> unreleased(service) >= 2_500_000 && unreleased(service) < 2_600_000);
            long unreleased = unreleased(service);
            assertTrue(unreleased >= 2_500_000 && unreleased < 2_600_000, "unreleased " + unreleased);
            assertEquals(0, service.totals().malformed());
        }
    }

    @Test
    void aClientThatSendsGarbageOrNothingCostsOnlyItself() throws Exception {
        HeapprofdService service = HeapprofdService.start(address(), everyByte("java.ffm"), 1 << 16);
        try (UnixSocket silent = UnixSocket.connect(service.address());
             UnixSocket rude = UnixSocket.connect(service.address())) {
            try (service) {
                // No fds with the handshake's byte: the service hangs up on this one only.
                rude.send(new byte[] {1, 2, 3});
                assertTrue(hungUp(rude), "the service closed the rude client");
                try (HeapprofdClient client = HeapprofdClient.connect(service.address())) {
                    int heap = client.registerHeap("java.ffm");
                    assertTrue(client.reportAllocation(heap, 0x1000, 64));
                    awaitUntil(() -> service.totals().records() >= 2);
                }
            }
            // The one that never sent its handshake is let go when the service closes.
            assertTrue(hungUp(silent));
        }
    }

    /** Whether the other end closed: end of stream, or a reset when it left bytes unread. */
    private static boolean hungUp(UnixSocket socket) {
        try {
            return socket.receive(new byte[16], 0).bytes() == 0;
        } catch (NativeException e) {
            return e.getMessage().contains("ECONNRESET");
        }
    }

    private static long unreleased(HeapprofdService service) {
        return service.folded(true).stream().mapToLong(line -> Long.parseLong(line.substring(line.lastIndexOf(' ') + 1)))
                .sum();
    }

    private static String lineFor(List<String> folded, String frame) {
        return folded.stream().filter(line -> line.substring(line.lastIndexOf(';')).contains(frame)).findFirst()
                .orElseThrow(() -> new AssertionError("no callsite ending in " + frame + ": " + folded));
    }

    private static void awaitUntil(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "timed out");
            Thread.sleep(10);
        }
    }
}
