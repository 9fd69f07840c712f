package dev.ffmtrace.heapprofd.client;

import dev.ffmtrace.heapprofd.wire.AllocMetadata;
import dev.ffmtrace.heapprofd.wire.ClientConfiguration;
import dev.ffmtrace.heapprofd.wire.WireRecord;
import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.ListeningSocket;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.memory.testing.CPrograms;
import dev.ffmtrace.memory.testing.Syscalls;
import dev.ffmtrace.shmring.RecordSlot;
import dev.ffmtrace.shmring.SharedRingBuffer;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The C client ({@code native/src/heapprofd_client.c}) preloaded into a C program with a
 * known pattern of allocations, against the service's side of the protocol played here
 * on a real socket: every allocation and free of the pattern arrives, at interval 1, as
 * a record with the right size, address and sequence, and a copy of the stack.
 */
class NativeClientTest {
    private static final int BLOCKS = 1000;

    /**
     * What the program allocated and freed, as the records tell it: per allocation size, the
     * sampled bytes still live, and where the last one's stack copy ended.
     */
    private record Profile(Map<Long, Long> liveBySize, Map<Long, Integer> mallocsBySize,
                           Map<Long, Integer> freesBySize, long minStackBytes, Set<Long> sequenceNumbers,
                           Map<Long, Long> stackEndBySize, String output) {
    }

    private static Profile profile(ClientConfiguration configuration, String... args) throws Exception {
        UnixAddress address = UnixAddress.abstractName("ffmtrace-heapprofd-native-" + Os.pid() + "-" + System.nanoTime());
        try (ListeningSocket server = ListeningSocket.listen(address, 1);
             SharedRingBuffer ring = SharedRingBuffer.create(1 << 20)) {
            List<String> command = new ArrayList<>(List.of(CPrograms.program("heapprofd_pattern").toString()));
            command.addAll(List.of(args));
            ProcessBuilder builder = new ProcessBuilder(command);
            builder.environment().put("LD_PRELOAD", CPrograms.program("libffmtrace_heapprofd.so").toString());
            builder.environment().put("FFMTRACE_HEAPPROFD_SOCKET", "@" + address.name());
            builder.redirectError(ProcessBuilder.Redirect.INHERIT);
            Process process = builder.start();
            // A failed assertion must not leave the program behind, blocked on a ring nobody reads.
            try (StreamSocket client = server.accept(); AutoCloseable _ = process::destroyForcibly) {
                StreamSocket.Received hello = client.receive(new byte[16], 4);
                assertEquals(1, hello.bytes());
                assertEquals(2, hello.fds().length, "/proc/self/maps and mem");
                for (int fd : hello.fds()) {
                    Os.closeFd(fd);
                }
                // As the service: the reader sleeps until a writer finds it paused and wakes it.
                ring.setReaderPaused();
                byte[] bytes = new byte[ClientConfiguration.SIZE];
                configuration.encodeTo(MemorySegment.ofArray(bytes), 0);
                client.send(bytes, ring.fd());

                Map<Long, long[]> sizeOf = new HashMap<>();
                Map<Long, Long> liveBySize = new HashMap<>();
                Map<Long, Integer> mallocsBySize = new HashMap<>();
                Map<Long, Integer> freesBySize = new HashMap<>();
                Map<Long, Long> stackEndBySize = new HashMap<>();
                Set<Long> sequenceNumbers = new HashSet<>();
                long minStack = Long.MAX_VALUE;
                WireRecord reader = new WireRecord();
                RecordSlot slot = ring.newSlot();
                byte[] wakeUps = new byte[4096];
                boolean open = true;
                while (open) {
                    // A wake-up byte when the reader was paused; the end of the stream when the program has exited.
                    open = client.receive(wakeUps, 0).bytes() > 0;
                    boolean paused = false;
                    while (true) {
                        if (ring.beginRead(slot) != SharedRingBuffer.ReadResult.OK) {
                            if (paused) {
                                break;
                            }
                            // Paused, then one more look before sleeping, as the service does.
                            ring.setReaderPaused();
                            paused = true;
                            continue;
                        }
                        paused = false;
                        WireRecord.Type type = reader.read(slot.buffer(), slot.offset(), slot.length());
                        if (type == WireRecord.Type.MALLOC) {
                            AllocMetadata alloc = reader.alloc();
                            assertTrue(sequenceNumbers.add(alloc.sequenceNumber()), "a sequence number twice");
                            sizeOf.put(alloc.allocAddress(), new long[] {alloc.allocSize(), alloc.sampleSize()});
                            liveBySize.merge(alloc.allocSize(), alloc.sampleSize(), Long::sum);
                            mallocsBySize.merge(alloc.allocSize(), 1, Integer::sum);
                            stackEndBySize.put(alloc.allocSize(), alloc.stackPointer() + reader.stackSize());
                            if (alloc.allocSize() == 1000 || alloc.allocSize() == 3000) {
                                minStack = Math.min(minStack, reader.stackSize());
                                MemorySegment stack = reader.copyStack(slot.buffer(), slot.offset());
                                assertEquals(AllocMetadata.ARCH_X86_64, alloc.arch());
                                // The registers are the hook's, as the recording frame returns to it: rsp
                                // past that frame's saved rbp and return address, the copy's first words.
                                assertEquals(alloc.stackPointer() + 16,
                                        alloc.registers().get(Layouts.LONG_UNALIGNED, 7 * 8), "rsp");
                                assertEquals(stack.get(Layouts.LONG_UNALIGNED, 0),
                                        alloc.registers().get(Layouts.LONG_UNALIGNED, 6 * 8), "rbp");
                                assertEquals(stack.get(Layouts.LONG_UNALIGNED, 8),
                                        alloc.registers().get(Layouts.LONG_UNALIGNED, 16 * 8), "rip");
                            }
                        } else if (type == WireRecord.Type.FREE) {
                            assertTrue(sequenceNumbers.add(reader.freeSequenceNumber()), "a sequence number twice");
                            long[] sampled = sizeOf.remove(reader.freeAddress());
                            if (sampled != null) {
                                liveBySize.merge(sampled[0], -sampled[1], Long::sum);
                                freesBySize.merge(sampled[0], 1, Integer::sum);
                            }
                        }
                        ring.endRead(slot);
                    }
                }
                return finish(process, new Profile(liveBySize, mallocsBySize, freesBySize, minStack, sequenceNumbers,
                        stackEndBySize, ""));
            }
        }
    }

    private static Profile finish(Process process, Profile profile) throws Exception {
        assertTrue(process.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, process.exitValue());
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
        return new Profile(profile.liveBySize(), profile.mallocsBySize(), profile.freesBySize(), profile.minStackBytes(),
                profile.sequenceNumbers(), profile.stackEndBySize(), output);
    }

    @Test
    void atIntervalOneTheProfileHoldsExactlyThePatternsBytes() throws Exception {
        ClientConfiguration everyByte = new ClientConfiguration(1, 0, 0, 0,
                List.of(new ClientConfiguration.Heap("libc.malloc", 1)), true, false, false, false);
        Profile profile = profile(everyByte);
        assertEquals(BLOCKS, profile.mallocsBySize().get(1000L), "a(): 1,000 blocks");
        assertEquals(BLOCKS, profile.mallocsBySize().get(3000L), "b(): 1,000 blocks");
        assertEquals(1000L * BLOCKS, profile.liveBySize().get(1000L), "a()'s bytes, none freed");
        assertEquals(3000L * BLOCKS / 2, profile.liveBySize().get(3000L), "b()'s bytes, half freed");
        assertEquals(BLOCKS / 2, profile.freesBySize().get(3000L));
        long last = profile.sequenceNumbers().stream().mapToLong(Long::longValue).max().orElseThrow();
        assertEquals(last, profile.sequenceNumbers().size(), "every record of the heap's sequence arrived, once");
        assertTrue(profile.minStackBytes() > 0, "each Malloc carries the stack it was made on");
        assertTrue(profile.output().contains("0x"), "the program ran to its end: " + profile.output());
    }

    @Test
    void atInterval4096TheEstimatesAreWithinTheirStatisticalTolerance() throws Exception {
        ClientConfiguration sampled = new ClientConfiguration(4096, 0, 0, 0,
                List.of(new ClientConfiguration.Heap("libc.malloc", 4096)), true, false, false, false);
        int runs = 10;
        double sumA = 0;
        double sumB = 0;
        for (int run = 0; run < runs; run++) {
            Profile profile = profile(sampled);
            double a = profile.liveBySize().getOrDefault(1000L, 0L);
            double b = profile.liveBySize().getOrDefault(3000L, 0L);
            // About 244 samples in a()'s 1,000,000 bytes: a relative spread of 6.4% per run.
            assertTrue(Math.abs(a - 1e6) < 0.4 * 1e6, "run " + run + ": a() " + a);
            sumA += a;
            sumB += b;
        }
        // Over 10 runs the spread of the mean is 2% for a(), 3% for b()'s 1,500,000 live bytes: 6 of them allowed.
        assertTrue(Math.abs(sumA / runs - 1e6) < 0.12 * 1e6, "a(): mean " + sumA / runs);
        assertTrue(Math.abs(sumB / runs - 1.5e6) < 0.18 * 1.5e6, "b(): mean " + sumB / runs);
    }

    @Test
    void threadsAllocatingAtOnceAreEachRecordedOnce() throws Exception {
        ClientConfiguration everyByte = new ClientConfiguration(1, 0, 0, 0,
                List.of(new ClientConfiguration.Heap("libc.malloc", 1)), true, false, false, false);
        Profile profile = profile(everyByte, "threads");
        assertEquals(4 * BLOCKS, profile.mallocsBySize().get(2000L), "t(): 1,000 blocks on each of 4 threads");
        assertEquals(2000L * 4 * BLOCKS, profile.liveBySize().get(2000L));
        long last = profile.sequenceNumbers().stream().mapToLong(Long::longValue).max().orElseThrow();
        assertEquals(last, profile.sequenceNumbers().size(), "one sequence for the threads' records, each once");
    }

    @Test
    void threadsSampledEachByItsOwnSamplerAddUpToTheirBytes() throws Exception {
        ClientConfiguration sampled = new ClientConfiguration(4096, 0, 0, 0,
                List.of(new ClientConfiguration.Heap("libc.malloc", 4096)), true, false, false, false);
        int runs = 5;
        double sum = 0;
        for (int run = 0; run < runs; run++) {
            double bytes = profile(sampled, "threads").liveBySize().getOrDefault(2000L, 0L);
            // About 1,950 samples in the threads' 8,000,000 bytes: a relative spread of 2.3% per run.
            assertTrue(Math.abs(bytes - 8e6) < 0.15 * 8e6, "run " + run + ": t() " + bytes);
            sum += bytes;
        }
        assertTrue(Math.abs(sum / runs - 8e6) < 0.05 * 8e6, "t(): mean " + sum / runs);
    }

    /**
     * A client that blocks for room, with no timeout, waits only while the service is there,
     * as Perfetto's client does: when the service hangs up with the ring full, it stops
     * profiling and the program runs to its end.
     */
    @Test
    void aBlockedClientStopsWaitingWhenTheServiceHangsUp() throws Exception {
        UnixAddress address = UnixAddress.abstractName("ffmtrace-heapprofd-native-" + Os.pid() + "-" + System.nanoTime());
        ClientConfiguration blocking = new ClientConfiguration(1, 0, 0, 0,
                List.of(new ClientConfiguration.Heap("libc.malloc", 1)), true, false, false, false);
        try (ListeningSocket server = ListeningSocket.listen(address, 1)) {
            ProcessBuilder builder = new ProcessBuilder(CPrograms.program("heapprofd_pattern").toString());
            builder.environment().put("LD_PRELOAD", CPrograms.program("libffmtrace_heapprofd.so").toString());
            builder.environment().put("FFMTRACE_HEAPPROFD_SOCKET", "@" + address.name());
            builder.redirectError(ProcessBuilder.Redirect.INHERIT);
            Process process = builder.start();
            try (AutoCloseable _ = process::destroyForcibly) {
                try (StreamSocket client = server.accept(); SharedRingBuffer ring = SharedRingBuffer.create(1 << 16)) {
                    StreamSocket.closeReceived(client.receive(new byte[16], 4).fds());
                    ring.setReaderPaused();
                    byte[] bytes = new byte[ClientConfiguration.SIZE];
                    blocking.encodeTo(MemorySegment.ofArray(bytes), 0);
                    client.send(bytes, ring.fd());
                    // The first record wakes the paused reader; records arrive until the ring, never
                    // read, is full: the client waits for room.
                    assertEquals(1, client.receive(new byte[16], 0).bytes());
                    // Seen asleep between its looks for room, the client waits in the full ring.
                    Syscalls.awaitBlockedIn(process.pid(), process.pid(), Syscalls.Call.CLOCK_NANOSLEEP);
                    assertTrue(process.isAlive(), "the client waits for room in the full ring");
                }
                assertTrue(process.waitFor(60, TimeUnit.SECONDS), "the client gave up waiting");
                assertEquals(0, process.exitValue());
                String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
                assertTrue(output.contains("0x"), "the program ran to its end: " + output);
            }
        }
    }

    /**
     * A thread glibc starts itself (a SIGEV_THREAD timer's, not through pthread_create, so
     * the client never saw it start): its hook finds the thread's stack in /proc/self/maps
     * and copies it to its end, the end pthread_getattr_np gives the program.
     */
    @Test
    void aThreadStartedInsideLibcHasItsStackCopiedToItsEnd() throws Exception {
        ClientConfiguration everyByte = new ClientConfiguration(1, 0, 0, 0,
                List.of(new ClientConfiguration.Heap("libc.malloc", 1)), true, false, false, false);
        Profile profile = profile(everyByte, "timer");
        String[] printed = profile.output().strip().split(" ");
        assertEquals(2, printed.length, profile.output());
        long end = Long.parseUnsignedLong(printed[1].substring(2), 16);
        assertEquals(Long.toHexString(end), Long.toHexString(profile.stackEndBySize().get(6000L)), "u()'s copy ends at its stack's end");
    }

    /**
     * A signal handler that allocates on a thread blocked inside a hook, waiting with the
     * client's lock held for room in a ring nobody reads: the client's re-entry guard lets
     * the handler's allocation and free through unsampled, so the handler runs to its end
     * (without the guard its hook would spin for ever on the lock its own thread holds).
     */
    @Test
    void aSignalHandlerThatAllocatesWhileItsThreadIsInAHookRunsToItsEnd() throws Exception {
        UnixAddress address = UnixAddress.abstractName("ffmtrace-heapprofd-native-" + Os.pid() + "-" + System.nanoTime());
        ClientConfiguration blocking = new ClientConfiguration(1, 0, 0, 0,
                List.of(new ClientConfiguration.Heap("libc.malloc", 1)), true, false, false, false);
        try (ListeningSocket server = ListeningSocket.listen(address, 1)) {
            ProcessBuilder builder = new ProcessBuilder(CPrograms.program("heapprofd_pattern").toString(), "signal");
            builder.environment().put("LD_PRELOAD", CPrograms.program("libffmtrace_heapprofd.so").toString());
            builder.environment().put("FFMTRACE_HEAPPROFD_SOCKET", "@" + address.name());
            builder.redirectError(ProcessBuilder.Redirect.INHERIT);
            Process process = builder.start();
            try (AutoCloseable _ = process::destroyForcibly) {
                BufferedReader output = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.US_ASCII));
                try (StreamSocket client = server.accept(); SharedRingBuffer ring = SharedRingBuffer.create(1 << 16)) {
                    StreamSocket.closeReceived(client.receive(new byte[16], 4).fds());
                    byte[] bytes = new byte[ClientConfiguration.SIZE];
                    blocking.encodeTo(MemorySegment.ofArray(bytes), 0);
                    client.send(bytes, ring.fd());
                    // The ring, never read, fills: the program's one thread then waits for room inside
                    // a hook, in the client's nanosleep (the program has no other).
                    Syscalls.awaitBlockedIn(process.pid(), process.pid(), Syscalls.Call.CLOCK_NANOSLEEP);
                    assertEquals(0, new ProcessBuilder("kill", "-USR1", Long.toString(process.pid())).start().waitFor());
                    CompletableFuture<String> line = CompletableFuture.supplyAsync(() -> {
                        try {
                            return output.readLine();
                        } catch (IOException e) {
                            throw new UncheckedIOException(e);
                        }
                    });
                    // A hang detector: the handler runs in microseconds.
                    assertEquals("handled", line.get(60, TimeUnit.SECONDS), "the handler ran to its end");
                }
                // The service hung up: the client stops waiting and the program runs on.
                assertTrue(process.waitFor(60, TimeUnit.SECONDS));
                assertEquals(0, process.exitValue());
                assertTrue(output.readLine().contains("0x"), "the program ran to its end");
            }
        }
    }

    @Test
    void aForkedChildIsNotProfiledAndRunsOn() throws Exception {
        ClientConfiguration everyByte = new ClientConfiguration(1, 0, 0, 0,
                List.of(new ClientConfiguration.Heap("libc.malloc", 1)), true, false, false, false);
        Profile profile = profile(everyByte, "fork");
        assertEquals(BLOCKS, profile.mallocsBySize().get(1000L), "the parent's a()");
        assertNull(profile.mallocsBySize().get(3000L), "the child's b() is not the parent's profile");
        assertTrue(profile.output().contains("child 0"), "the child allocated and exited: " + profile.output());
    }
}
