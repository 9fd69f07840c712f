package dev.ffmtrace.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.ffmtrace.heapprofd.service.HeapprofdDataSource;
import dev.ffmtrace.heapprofd.service.HeapprofdService;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.memory.testing.NativeAllocatingMethod;
import dev.ffmtrace.memory.testing.OtherUser;
import dev.ffmtrace.tracing.sdk.Tracing;
import dev.ffmtrace.tracing.sdk.TracingOptions;
import dev.ffmtrace.tracing.service.ProducerPort;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import perfetto.protos.DataSourceConfigOuterClass.DataSourceConfig;
import perfetto.protos.HeapprofdConfigOuterClass.HeapprofdConfig;
import perfetto.protos.TraceConfigOuterClass.TraceConfig;

/** {@code heapprofd} on the C pattern program, and {@code dump --folded} of the trace it writes. */
class HeapprofdCommandTest {
    @TempDir
    Path dir;

    private static Path pattern() {
        return CProducerProcess.defaultProgram().resolveSibling("heapprofd_pattern");
    }

    /** Runs the pattern with the C client preloaded, profiled at abstract socket {@code socket}, to its end. */
    private static void runPattern(String socket) throws IOException, InterruptedException {
        ProcessBuilder builder = new ProcessBuilder(pattern().toString());
        builder.environment().put("LD_PRELOAD", pattern().resolveSibling("libffmtrace_heapprofd.so").toString());
        builder.environment().put("FFMTRACE_HEAPPROFD_SOCKET", "@" + socket);
        Process process = builder.redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try {
            process.getInputStream().readAllBytes();
            assertTrue(process.waitFor(60, TimeUnit.SECONDS));
        } finally {
            process.destroyForcibly();
        }
    }

    @Test
    void heapprofdWritesATraceWhoseFoldedStacksHoldThePatternsBytes() {
        Path trace = dir.resolve("pattern.pftrace");
        ConvertAndDumpTest.Run profiled = ConvertAndDumpTest.run("heapprofd", "--sampling-interval", "1", "--out",
                trace.toString(), "--", pattern().toString());
        assertEquals(0, profiled.exit(), profiled.err());
        assertTrue(profiled.err().contains("from 1 process(es), 0 unwinding errors"), profiled.err());
        ConvertAndDumpTest.Run unreleased = ConvertAndDumpTest.run("dump", "--folded", trace.toString());
        assertEquals(0, unreleased.exit(), unreleased.err());
        assertEquals(1_000_000, bytesUnder(unreleased.out(), ";main;a"), unreleased.out());
        assertEquals(1_500_000, bytesUnder(unreleased.out(), ";main;b"), unreleased.out());
        ConvertAndDumpTest.Run allocated = ConvertAndDumpTest.run("dump", "--folded", "allocated", trace.toString());
        assertEquals(0, allocated.exit(), allocated.err());
        assertEquals(1_000_000, bytesUnder(allocated.out(), ";main;a"), allocated.out());
        assertEquals(3_000_000, bytesUnder(allocated.out(), ";main;b"), allocated.out());
    }

    /**
     * With {@code --producer-socket}, heapprofd is a producer of a service (here ffmtrace's,
     * in this JVM, on a producer socket; scripts/interop-heapprofd does it with Perfetto's
     * traced): the session started there starts it, the pattern runs, and the command ends
     * when the session stops it; the session's trace holds the pattern's profile.
     */
    @Test
    void withAProducerSocketTheProfileGoesIntoTheServicesSession() throws Exception {
        UnixAddress socket = UnixAddress.abstractName("ffmtrace-heapprofd-producer-" + Os.pid() + "-" + System.nanoTime());
        byte[] config = TraceConfig.newBuilder()
                .addBuffers(TraceConfig.BufferConfig.newBuilder().setSizeKb(16384))
                .addDataSources(TraceConfig.DataSource.newBuilder().setConfig(DataSourceConfig.newBuilder()
                        .setName(HeapprofdDataSource.NAME).setHeapprofdConfig(HeapprofdConfig.newBuilder()
                                .setSamplingIntervalBytes(1).addHeaps("libc.malloc").setBlockClient(true))))
                .build().toByteArray();
        Path trace = dir.resolve("service.pftrace");
        try (TracingService tracing = new TracingService();
             ProducerPort port = ProducerPort.listen(tracing, socket)) {
            TracingSession session = tracing.startSession(SessionConfig.parse(MemorySegment.ofArray(config)));
            CompletableFuture<ConvertAndDumpTest.Run> profiled = CompletableFuture.supplyAsync(() ->
                    ConvertAndDumpTest.run("heapprofd", "--producer-socket", "@" + socket.name(), "--",
                            pattern().toString()));
            Await.until("the pattern ran and its records were read", () -> port.producerCount() > 0
                    && session.flush(Duration.ofMinutes(1)) && profileHolds(session, ";main;b", 3_000_000));
            session.stop();
            ConvertAndDumpTest.Run run = profiled.get(CliProcess.TIMEOUT_SECONDS, TimeUnit.SECONDS);
            assertEquals(0, run.exit(), run.err());
            assertTrue(run.err().contains("from 1 process(es), 0 unwinding errors"), run.err());
            try (OutputStream out = Files.newOutputStream(trace)) {
                session.writeTrace(out);
            }
            session.close();
        }
        ConvertAndDumpTest.Run allocated = ConvertAndDumpTest.run("dump", "--folded", "allocated", trace.toString());
        assertEquals(0, allocated.exit(), allocated.err());
        assertEquals(1_000_000, bytesUnder(allocated.out(), ";main;a"), allocated.out());
        assertEquals(3_000_000, bytesUnder(allocated.out(), ";main;b"), allocated.out());
    }

    /** Whether a snapshot of {@code session} has {@code bytes} allocated under {@code callsite}. */
    private boolean profileHolds(TracingSession session, String callsite, long bytes) throws IOException {
        Path snapshot = dir.resolve("snapshot.pftrace");
        try (OutputStream out = Files.newOutputStream(snapshot)) {
            session.writeSnapshot(out);
        }
        ConvertAndDumpTest.Run allocated = ConvertAndDumpTest.run("dump", "--folded", "allocated", snapshot.toString());
        return allocated.exit() == 0 && bytesUnder(allocated.out(), callsite) == bytes;
    }

    @Test
    void producerSocketModeRefusesTheOptionsOfASessionOfItsOwn() {
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("heapprofd", "--producer-socket", "@nobody-listens",
                "--out", dir.resolve("x.pftrace").toString(), "--", pattern().toString());
        assertEquals(2, run.exit(), run.err());
        assertTrue(run.err().contains("--out does not apply with --producer-socket"), run.err());
    }

    /**
     * Issue #27, item 8: another user's process that connects to the abstract socket (its
     * name shows in /proc/net/unix) is refused by its peer credentials, unless
     * {@code --allow-other-users}. The program runs as uid {@value OtherUser#UID} through
     * setpriv (which, preloaded too, is root's process and profiled until it execs).
     */
    @Test
    void anotherUsersProcessIsProfiledOnlyWhenAllowed() {
        String reason = OtherUser.unavailableReason();
        assumeTrue(reason == null, reason);
        List<String> asOtherUser = OtherUser.command(List.of(pattern().toString()));
        List<String> refusedArgs = new ArrayList<>(List.of("heapprofd", "--sampling-interval", "1", "--out",
                dir.resolve("refused.pftrace").toString(), "--"));
        refusedArgs.addAll(asOtherUser);
        ConvertAndDumpTest.Run refused = ConvertAndDumpTest.run(refusedArgs.toArray(String[]::new));
        assertEquals(0, refused.exit(), refused.err());
        assertTrue(refused.err().contains(", 1 process(es) of other users refused;"), refused.err());
        ConvertAndDumpTest.Run none = ConvertAndDumpTest.run("dump", "--folded", dir.resolve("refused.pftrace").toString());
        assertEquals(0, bytesUnder(none.out(), ";main;a"), none.out());

        Path trace = dir.resolve("allowed.pftrace");
        List<String> allowedArgs = new ArrayList<>(List.of("heapprofd", "--allow-other-users", "--sampling-interval",
                "1", "--out", trace.toString(), "--"));
        allowedArgs.addAll(asOtherUser);
        ConvertAndDumpTest.Run allowed = ConvertAndDumpTest.run(allowedArgs.toArray(String[]::new));
        assertEquals(0, allowed.exit(), allowed.err());
        assertTrue(allowed.err().contains(", 0 process(es) of other users refused;"), allowed.err());
        ConvertAndDumpTest.Run folded = ConvertAndDumpTest.run("dump", "--folded", trace.toString());
        assertEquals(1_000_000, bytesUnder(folded.out(), ";main;a"), folded.out());
    }

    /**
     * Issue 33's command, as a user runs it: a JVM under heapprofd runs to its end (it hung for
     * ever while the client's hook called pthread_getattr_np, which HotSpot calls holding the
     * lock that calls takes), and the trace holds its allocations under libjvm's frames.
     */
    @Test
    void aJvmRunsToItsEndUnderHeapprofd() throws Exception {
        Path trace = dir.resolve("jvm.pftrace");
        String java = ProcessHandle.current().info().command().orElseThrow();
        CliProcess heapprofd = CliProcess.start("heapprofd", "--out", trace.toString(), "--", java, "-version");
        // A hang detector; a hung JVM is not left behind.
        if (!heapprofd.process().waitFor(CliProcess.TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            heapprofd.process().descendants().forEach(ProcessHandle::destroyForcibly);
        }
        ConvertAndDumpTest.Run profiled = heapprofd.await();
        assertEquals(0, profiled.exit(), profiled.err());
        assertTrue(profiled.err().contains("version \"" + Runtime.version().feature()), profiled.err());
        assertTrue(profiled.err().contains(" from 1 process(es)"), profiled.err());
        ConvertAndDumpTest.Run allocated = ConvertAndDumpTest.run("dump", "--folded", "allocated", trace.toString());
        assertEquals(0, allocated.exit(), allocated.err());
        assertTrue(allocated.out().lines().anyMatch(line -> line.contains(";JNI_CreateJavaVM;")),
                allocated.out().substring(0, Math.min(4000, allocated.out().length())));
    }

    /**
     * Issue 33: {@code heapprofd -- java} gives the JVM the options its compiled frames need,
     * and the trace names them from its perf map (then removed): at sampling interval 1, 90%
     * of the bytes a JIT-compiled method allocates are booked under its name (the rest,
     * before the JIT compiled it, under the interpreter's), above Unsafe and os::malloc.
     * {@code -Xbatch}: the method waits for its compilation, so how much of it runs
     * interpreted does not depend on how busy the machine's compiler threads are (89% on a
     * loaded machine without it).
     */
    @Test
    void aJvmsCompiledMethodIsNamedInTheTrace() throws Exception {
        Path trace = dir.resolve("jit.pftrace");
        List<Path> mapsBefore = perfMaps();
        String java = ProcessHandle.current().info().command().orElseThrow();
        String classPath = Path.of(NativeAllocatingMethod.class.getProtectionDomain().getCodeSource().getLocation()
                .toURI()).toString();
        CliProcess heapprofd = CliProcess.start("heapprofd", "--sampling-interval", "1", "--out", trace.toString(),
                "--", java, "-Xbatch", "-cp", classPath, NativeAllocatingMethod.class.getName());
        ConvertAndDumpTest.Run profiled = heapprofd.await();
        assertEquals(0, profiled.exit(), profiled.err());
        assertTrue(profiled.out().contains("done"), profiled.err());
        assertTrue(profiled.err().contains("java runs with -XX:+PreserveFramePointer -XX:+DumpPerfMapAtExit"),
                profiled.err());
        ConvertAndDumpTest.Run allocated = ConvertAndDumpTest.run("dump", "--folded", "allocated", trace.toString());
        assertEquals(0, allocated.exit(), allocated.err());
        String method = NativeAllocatingMethod.class.getName() + ".allocateNative();";
        long named = allocated.out().lines()
                .filter(line -> line.contains(method) && line.contains(";_ZN2os6mallocEm6MemTag "))
                .mapToLong(line -> Long.parseLong(line.substring(line.lastIndexOf(' ') + 1))).sum();
        long expected = NativeAllocatingMethod.ALLOCATIONS * NativeAllocatingMethod.BLOCK;
        assertTrue(named >= expected / 10 * 9, named + " of " + expected + " bytes under " + method);
        assertEquals(mapsBefore, perfMaps(), "the JVM's perf map is removed once the trace has its names");
    }

    /** The perf maps in /tmp: JVMs write theirs there. */
    private static List<Path> perfMaps() throws IOException {
        try (Stream<Path> files = Files.list(Path.of("/tmp"))) {
            return files.filter(path -> path.getFileName().toString().matches("perf-[0-9]+\\.map")).sorted().toList();
        }
    }

    @Test
    void dumpFoldedPrintsWhatTheServiceFolded() throws Exception {
        UnixAddress address = UnixAddress.abstractName("ffmtrace-cli-heapprofd-" + Os.pid() + "-" + System.nanoTime());
        Path trace = dir.resolve("session.pftrace");
        List<String> unreleased;
        List<String> allocated;
        try (TracingService tracing = new TracingService();
             HeapprofdDataSource heapprofd = HeapprofdDataSource.register(address)) {
            assertTrue(Tracing.initialize(TracingOptions.named("heapprofd-test").withInProcessBackend(tracing)));
            try {
                byte[] config = TraceConfig.newBuilder()
                        .addBuffers(TraceConfig.BufferConfig.newBuilder().setSizeKb(4096))
                        .addDataSources(TraceConfig.DataSource.newBuilder().setConfig(DataSourceConfig.newBuilder()
                                .setName(HeapprofdDataSource.NAME).setHeapprofdConfig(HeapprofdConfig.newBuilder()
                                        .setSamplingIntervalBytes(1).setBlockClient(true))))
                        .build().toByteArray();
                assertTrue(Tracing.awaitRegistrations(Duration.ofMinutes(1)));
                TracingSession session = tracing.startSession(SessionConfig.parse(MemorySegment.ofArray(config)));
                HeapprofdService service = heapprofd.awaitService(Duration.ofMinutes(1));
                assertNotNull(service);
                runPattern(address.name());
                Await.until("the client's records all read", () -> service.clientCount() != 0 && service.clientsGone());
                unreleased = service.folded(true);
                allocated = service.folded(false);
                session.stop();
                try (OutputStream out = Files.newOutputStream(trace)) {
                    session.writeTrace(out);
                }
                session.close();
            } finally {
                Tracing.shutdown();
            }
        }
        assertTrue(bytesUnder(String.join("\n", unreleased), ";main;b") == 1_500_000, unreleased.toString());
        ConvertAndDumpTest.Run dumped = ConvertAndDumpTest.run("dump", "--folded", "unreleased", trace.toString());
        assertEquals(0, dumped.exit(), dumped.err());
        assertEquals(unreleased, dumped.out().lines().toList());
        dumped = ConvertAndDumpTest.run("dump", "--folded", "allocated", trace.toString());
        assertEquals(allocated, dumped.out().lines().toList());
    }

    /**
     * A session longer than any test, stopped by a signal once the pattern has exited and
     * record's connection to it has read all it wrote: the stop's dump then holds all of it.
     */
    @Test
    void recordWithAHeapprofdDataSourceProfilesTheClientsThatConnect() throws Exception {
        Path config = dir.resolve("heapprofd.pbtxt");
        Files.writeString(config, Files.readString(Path.of("../configs/heapprofd.pbtxt"))
                .replace("sampling_interval_bytes: 4096", "sampling_interval_bytes: 1")
                .replace("duration_ms: 10000", "duration_ms: 3600000"));
        Path trace = dir.resolve("record.pftrace");
        String socket = "ffmtrace-record-heapprofd-" + Os.pid() + "-" + System.nanoTime();
        CliProcess record = CliProcess.start("record", "--config", config.toString(), "--out", trace.toString(),
                "--heapprofd-socket", socket);
        try {
            record.awaitLine(line -> line.startsWith("recording "));
            runPattern(socket);
            awaitConnectionsEnded(socket);
            record.kill("INT");
            ConvertAndDumpTest.Run recorded = record.await();
            assertEquals(128 + 2, recorded.exit(), "the JVM's status for SIGINT: " + recorded.err());
            assertEquals("", recorded.err());
            assertTrue(recorded.out().contains("heapprofd: clients connect at @" + socket), recorded.out());
        } finally {
            record.process().destroyForcibly();
        }
        ConvertAndDumpTest.Run dumped = ConvertAndDumpTest.run("dump", "--folded", "allocated", trace.toString());
        assertEquals(0, dumped.exit(), dumped.err());
        assertEquals(1_000_000, bytesUnder(dumped.out(), ";main;a"), dumped.out());
        assertEquals(3_000_000, bytesUnder(dumped.out(), ";main;b"), dumped.out());
    }

    @Test
    void aFoldedModeThatIsNeitherIsAUsageError() {
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("dump", "--folded", "sideways", "x.pftrace");
        assertEquals(2, run.exit());
        assertTrue(run.err().contains("--folded takes unreleased or allocated, not sideways"), run.err());
    }

    @Test
    void aTruncatedOrMalformedTraceIsReportedAndWhatCouldBeReadIsPrinted() throws Exception {
        Path truncated = dir.resolve("truncated.pftrace");
        // A packet field whose length runs past the end of the file.
        Files.write(truncated, new byte[] {0x0a, 0x05, 0x01});
        ConvertAndDumpTest.Run run = ConvertAndDumpTest.run("dump", "--folded", truncated.toString());
        assertEquals(2, run.exit());
        assertEquals("", run.out());
        assertTrue(run.err().contains("not a valid trace file at byte 0"), run.err());
        Path malformed = dir.resolve("malformed.pftrace");
        // A packet whose only field has wire type 7, which protobuf does not define.
        Files.write(malformed, new byte[] {0x0a, 0x02, 0x0f, 0x00});
        run = ConvertAndDumpTest.run("dump", "--folded", "allocated", malformed.toString());
        assertEquals(2, run.exit());
        assertTrue(run.err().contains("the packet at byte 0 is malformed"), run.err());
    }

    /**
     * Waits until no connection accepted at abstract socket {@code name} is open: heapprofd
     * closes one once its client has gone and it has read and booked all the client wrote.
     * The accepted end has the listener's name in /proc/net/unix; state 03 is connected.
     */
    private static void awaitConnectionsEnded(String name) throws Exception {
        Await.until("heapprofd's connection to the client ended", () -> connectedAt(name) == 0,
                () -> connectedAt(name) + " connections open");
    }

    /** Connected sockets named {@code @name} in /proc/net/unix. */
    private static long connectedAt(String name) {
        try {
            return Files.readAllLines(Path.of("/proc/net/unix")).stream().map(line -> line.trim().split("\\s+"))
                    .filter(fields -> fields.length == 8 && fields[5].equals("03") && fields[7].equals("@" + name))
                    .count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The bytes of every folded line whose stack ends in {@code leaf}. */
    private static long bytesUnder(String folded, String leaf) {
        return folded.lines().filter(line -> line.contains(" ") && line.substring(0, line.lastIndexOf(' ')).endsWith(leaf))
                .mapToLong(line -> Long.parseLong(line.substring(line.lastIndexOf(' ') + 1))).sum();
    }
}
