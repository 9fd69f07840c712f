package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.heapprofd.client.HeapprofdClient;
import dev.ffmtrace.heapprofd.client.ProfiledArena;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.memory.testing.CPrograms;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import org.junit.jupiter.api.Test;
import perfetto.protos.DataSourceConfigOuterClass;
import perfetto.protos.HeapprofdConfigOuterClass.HeapprofdConfig;
import perfetto.protos.ProfilePacketOuterClass.ProfilePacket;
import perfetto.protos.TraceConfigOuterClass.TraceConfig;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** heapprofd as a session's data source: the C client's pattern program, profiled into the trace as ProfilePackets. */
class HeapprofdDataSourceTest {
    private static UnixAddress address() {
        return UnixAddress.abstractName("ffmtrace-heapprofd-ds-" + Os.pid() + "-" + System.nanoTime());
    }

    static byte[] traceConfig(HeapprofdConfig heapprofd) {
        return TraceConfig.newBuilder()
                .addBuffers(TraceConfig.BufferConfig.newBuilder().setSizeKb(4096))
                .addDataSources(TraceConfig.DataSource.newBuilder().setConfig(
                        DataSourceConfigOuterClass.DataSourceConfig.newBuilder().setName(HeapprofdDataSource.NAME)
                                .setHeapprofdConfig(heapprofd)))
                .build().toByteArray();
    }

    /** What the session gave the pattern program, and the trace it wrote. */
    private record Run(long pid, List<String> foldedUnreleased, byte[] trace) {
    }

    /** Runs the pattern program under a session at interval 1, flushes twice after it exits, then stops. */
    private static Run runPattern(int packetBudget) throws Exception {
        UnixAddress address = address();
        try (TracingService tracing = new TracingService();
             HeapprofdDataSource heapprofd = HeapprofdDataSource.register(address, packetBudget);
             InProcessTracing sdk = InProcessTracing.on(tracing)) {
            HeapprofdConfig config = HeapprofdConfig.newBuilder().setSamplingIntervalBytes(1).addHeaps("libc.malloc")
                    .setShmemSizeBytes(1 << 20).setBlockClient(true).build();
            TracingSession session = tracing.startSession(SessionConfig.parse(MemorySegment.ofArray(traceConfig(config))));
            HeapprofdService service = heapprofd.awaitService(Duration.ofMinutes(1));
            assertNotNull(service, String.valueOf(heapprofd.startFailure()));
            ProcessBuilder builder = new ProcessBuilder(CPrograms.program("heapprofd_pattern").toString());
            builder.environment().put("LD_PRELOAD", CPrograms.program("libffmtrace_heapprofd.so").toString());
            builder.environment().put("FFMTRACE_HEAPPROFD_SOCKET", "@" + address.name());
            Process process = builder.redirectError(ProcessBuilder.Redirect.INHERIT).start();
            try {
                process.getInputStream().readAllBytes();
                assertTrue(process.waitFor(60, TimeUnit.SECONDS));
                assertEquals(0, process.exitValue());
            } finally {
                process.destroyForcibly();
            }
            Await.until(() -> service.clients().stream().allMatch(ClientConnection::isClosed)
                    && !service.clients().isEmpty());
            List<String> folded = service.folded(true);
            session.flush();
            session.flush();
            session.stop();
            ByteArrayOutputStream trace = new ByteArrayOutputStream();
            session.writeTrace(trace);
            session.close();
            return new Run(process.pid(), folded, trace.toByteArray());
        }
    }

    @Test
    void thePatternsBytesAndCountsAreInTheTraceUnderItsCallstacksWithTheProgramsBuildId() throws Exception {
        Run run = runPattern(ProfileDumper.DEFAULT_PACKET_BUDGET);
        ProfileTrace trace = ProfileTrace.parse(run.trace());
        // Two flushes and the stop's.
        assertEquals(3, trace.dumps.size());
        assertEquals(0, trace.indexGaps);
        assertEquals(0, trace.redefinitions, "an id is defined once per sequence");
        ProfileTrace.Dump last = trace.dumps.getLast();
        assertCallsite(last, "a", 1_000_000, 0, 1_000, 0);
        assertCallsite(last, "b", 3_000_000, 1_500_000, 1_000, 500);
        ProfilePacket.ProcessHeapSamples header = last.headers().getFirst();
        assertEquals(run.pid(), header.getPid());
        assertEquals("libc.malloc", header.getHeapName());
        assertEquals(1, header.getSamplingIntervalBytes());
        assertEquals(0, header.getStats().getUnwindingErrors());
        assertTrue(header.getStats().getHeapSamples() >= 2_000, header.toString());
        assertTrue(header.getDisconnected(), "the program had exited");
        assertTrue(!header.getBufferOverran() && !header.getBufferCorrupted(), header.toString());
        long coarse = Os.clockNanos(Os.CLOCK_MONOTONIC_COARSE);
        assertTrue(header.getTimestamp() > 0 && header.getTimestamp() <= coarse, header + " now " + coarse);

        // main's frame is in the program's mapping, named by the program's build id.
        ProfileTrace.Sample a = only(last, "a");
        long mainMapping = a.mappingIds().get(a.frames().indexOf("main"));
        byte[] buildId = trace.buildIds.get(trace.mappings.get(mainMapping).getBuildId());
        String expected = ElfFile.read(CPrograms.program("heapprofd_pattern").toString()).buildId();
        assertNotNull(expected);
        assertArrayEquals(HexFormat.of().parseHex(expected), buildId);

        // The later dumps define nothing new: the books did not change after the program exited.
        assertTrue(trace.callstacksDefined.getFirst() >= 2, trace.callstacksDefined.toString());
        assertEquals(List.of(0, 0), trace.callstacksDefined.subList(1, 3));
        for (ProfileTrace.Dump dump : trace.dumps) {
            assertEquals(ProfileTrace.folded(last, true), ProfileTrace.folded(dump, true));
        }
        // The trace holds what the service's own folded stacks say.
        String process = run.foldedUnreleased().getFirst().substring(0, run.foldedUnreleased().getFirst().indexOf(';') + 1);
        assertEquals(run.foldedUnreleased().stream().map(line -> line.substring(process.length())).toList(),
                ProfileTrace.folded(last, true));
    }

    @Test
    void aDumpSplitOverManyPacketsReassemblesToTheSameProfile() throws Exception {
        Run run = runPattern(64);
        ProfileTrace trace = ProfileTrace.parse(run.trace());
        assertEquals(3, trace.dumps.size());
        assertEquals(0, trace.indexGaps, "index counts packets on from dump to dump");
        assertEquals(0, trace.redefinitions);
        ProfileTrace.Dump first = trace.dumps.getFirst();
        assertTrue(first.packets() > 1, "packets: " + first.packets());
        assertCallsite(first, "a", 1_000_000, 0, 1_000, 0);
        assertCallsite(first, "b", 3_000_000, 1_500_000, 1_000, 500);
        for (ProfilePacket.ProcessHeapSamples header : first.headers()) {
            assertEquals(run.pid(), header.getPid(), "every packet repeats its heap's header");
        }
        String process = run.foldedUnreleased().getFirst().substring(0, run.foldedUnreleased().getFirst().indexOf(';') + 1);
        assertEquals(run.foldedUnreleased().stream().map(line -> line.substring(process.length())).toList(),
                ProfileTrace.folded(trace.dumps.getLast(), true));
    }

    @Test
    void aJavaHeapIsDumpedEveryIntervalAndDefinedAgainAfterTheSessionClearsIncrementalState() throws Exception {
        UnixAddress address = address();
        byte[] bytes;
        try (TracingService tracing = new TracingService();
             HeapprofdDataSource heapprofd = HeapprofdDataSource.register(address);
             InProcessTracing sdk = InProcessTracing.on(tracing)) {
            HeapprofdConfig config = HeapprofdConfig.newBuilder().setSamplingIntervalBytes(1).addHeaps("java.ffm")
                    .setShmemSizeBytes(1 << 16).setContinuousDumpConfig(HeapprofdConfig.ContinuousDumpConfig
                            .newBuilder().setDumpIntervalMs(20)).build();
            TracingSession session = tracing.startSession(SessionConfig.parse(MemorySegment.ofArray(traceConfig(config))));
            HeapprofdService service = heapprofd.awaitService(Duration.ofMinutes(1));
            assertNotNull(service, String.valueOf(heapprofd.startFailure()));
            try (HeapprofdClient client = HeapprofdClient.connect(address);
                 ProfiledArena arena = new ProfiledArena(Arena.ofShared(), client, client.registerHeap("java.ffm"))) {
                arena.allocate(1000);
                Await.until(() -> service.folded(true).size() == 1);
                // Two interval dumps of the allocation.
                long dumps = heapprofd.dumpsWritten();
                Await.until(() -> heapprofd.dumpsWritten() >= dumps + 2);
                session.clearIncrementalState();
                session.flush();
            }
            session.stop();
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            session.writeTrace(out);
            session.close();
            bytes = out.toByteArray();
        }
        ProfileTrace trace = ProfileTrace.parse(bytes);
        assertEquals(0, trace.indexGaps);
        assertEquals(0, trace.redefinitions, "a redefinition comes only after a clear");
        List<ProfileTrace.Dump> withJava = trace.dumps.stream().filter(dump -> !dump.samples().isEmpty()).toList();
        assertTrue(withJava.size() >= 3, "dumps: " + trace.dumps.size());
        for (ProfileTrace.Dump dump : withJava) {
            ProfileTrace.Sample sample = dump.samples().getFirst();
            assertEquals("java.ffm", sample.heap());
            assertEquals(1000, sample.allocated());
            assertTrue(sample.frames().stream().anyMatch(frame -> frame.contains("HeapprofdDataSourceTest")),
                    sample.frames().toString());
        }
        // The callstack is defined in the first dump, then again only after the clear.
        assertEquals(2, trace.callstacksDefined.stream().filter(defined -> defined > 0).count(),
                trace.callstacksDefined.toString());
    }

    private static ProfileTrace.Sample only(ProfileTrace.Dump dump, String leaf) {
        List<ProfileTrace.Sample> under = dump.samples().stream().filter(sample -> sample.frames().size() >= 2
                && sample.frames().getLast().equals(leaf)
                && sample.frames().get(sample.frames().size() - 2).equals("main")).toList();
        assertEquals(1, under.size(), dump.samples().toString());
        return under.getFirst();
    }

    private static void assertCallsite(ProfileTrace.Dump dump, String leaf, long allocated, long freed,
                                       long allocations, long frees) {
        ProfileTrace.Sample sample = only(dump, leaf);
        assertEquals(List.of(allocated, freed, allocations, frees),
                List.of(sample.allocated(), sample.freed(), sample.allocations(), sample.frees()), sample.toString());
    }

}
