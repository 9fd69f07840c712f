package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.heapprofd.wire.ClientConfiguration;
import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.memory.testing.CPrograms;
import dev.ffmtrace.memory.testing.JniAllocatingMethod;
import dev.ffmtrace.memory.testing.NativeAllocatingMethod;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static dev.ffmtrace.heapprofd.service.HeapprofdServiceTest.address;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * HotSpot JVMs (this JDK's) with the C client preloaded, profiled by the service (issue 33:
 * HotSpot's pthread_getattr_np callocs under the thread's lock, and a client whose hook
 * called it again hung {@code java -version} for ever). Each must run to its end, under a
 * deadline that only detects a hang, and its native allocations be booked under stacks
 * unwound into libjvm.
 */
class JvmUnderPreloadTest {
    /** A hang detector, far above the few seconds these JVMs take on a loaded two-core machine. */
    private static final long HANG_SECONDS = 120;

    @TempDir
    Path dir;

    private record Exited(long pid, int status, String out, String err) {
    }

    /** Runs this JDK's java with the client preloaded, its output into files: a hang fails, it cannot block the test. */
    private Exited java(HeapprofdService service, String... args) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElse(
                Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        command.addAll(List.of(args));
        Path out = Files.createTempFile(dir, "out", ".txt");
        Path err = Files.createTempFile(dir, "err", ".txt");
        ProcessBuilder builder = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile());
        builder.environment().put("LD_PRELOAD", CPrograms.program("libffmtrace_heapprofd.so").toString());
        builder.environment().put("FFMTRACE_HEAPPROFD_SOCKET", service.address().toString());
        Process process = builder.start();
        try {
            if (!process.waitFor(HANG_SECONDS, TimeUnit.SECONDS)) {
                fail("java " + String.join(" ", args) + " under the client did not exit in " + HANG_SECONDS + " s: hung");
            }
        } finally {
            process.destroyForcibly();
        }
        // The JVM has exited: the service reads the rest of its ring.
        Await.until(service::clientsGone);
        return new Exited(process.pid(), process.exitValue(), Files.readString(out), Files.readString(err));
    }

    private static HeapprofdService service(long interval) {
        ClientConfiguration configuration = new ClientConfiguration(interval, 0, 0, 0,
                List.of(new ClientConfiguration.Heap("libc.malloc", interval)), true, false, false, false);
        return HeapprofdService.start(address(), configuration, 8 << 20);
    }

    /** The bytes of every callsite with a frame named {@code frame}. */
    private static long bytesThrough(List<String> folded, String frame) {
        return folded.stream().filter(line -> frames(line).contains(frame)).mapToLong(JvmUnderPreloadTest::bytes).sum();
    }

    /**
     * The bytes of every callsite whose leaf is libjvm's {@code os::malloc(size_t, MemTag)},
     * which {@code Unsafe_AllocateMemory0} calls (with a jump: its frame is not on the stack),
     * as do a few parts of the JVM for small blocks. What is above it is not checked: a walk
     * into code the JIT compiler has just put in a part of the code cache committed since
     * the service last read the process's maps ends there (INVALID_MAP).
     */
    private static long bytesFromOsMalloc(List<String> folded) {
        return folded.stream().filter(line -> frames(line).getLast().equals(OS_MALLOC))
                .mapToLong(JvmUnderPreloadTest::bytes).sum();
    }

    /** {@code os::malloc(size_t, MemTag)}, as libjvm's symbols name it. */
    private static final String OS_MALLOC = "_ZN2os6mallocEm6MemTag";

    private static List<String> frames(String line) {
        return List.of(line.substring(0, line.lastIndexOf(' ')).split(";"));
    }

    private static long bytes(String line) {
        return Long.parseLong(line.substring(line.lastIndexOf(' ') + 1));
    }

    /** The callsites whose leaf is {@code leaf}, for a failure's message (a JVM's whole profile is too long to read). */
    private static String withLeaf(List<String> folded, String leaf) {
        List<String> lines = folded.stream().filter(line -> frames(line).getLast().equals(leaf)).toList();
        return lines.size() + " callsites ending in " + leaf + ":\n" + String.join("\n", lines.subList(0, Math.min(20, lines.size())));
    }

    @ParameterizedTest(name = "interval {0}")
    @ValueSource(longs = {1, 4096})
    void javaVersionRunsToItsEnd(long interval) throws Exception {
        try (HeapprofdService service = service(interval)) {
            Exited java = java(service, "-version");
            assertEquals(0, java.status(), java.err());
            assertTrue(java.err().contains("version \"" + Runtime.version().feature()), java.err());
            // The JVM's start-up allocates from libjvm, whose frames are named by its symbols.
            List<String> allocated = service.folded(false);
            assertTrue(bytesThrough(allocated, "JNI_CreateJavaVM") > 0, withLeaf(allocated, OS_MALLOC));
            assertEquals(0, service.totals().malformed());
        }
    }

    @ParameterizedTest(name = "interval {0}")
    @ValueSource(longs = {1, 4096})
    void twentyThreadsAllocatingNativeMemoryRunToTheirEndAndAreBooked(long interval) throws Exception {
        try (HeapprofdService service = service(interval)) {
            Exited java = java(service, "-cp", classPathOf(NativeAllocatingThreads.class),
                    NativeAllocatingThreads.class.getName());
            assertEquals(0, java.status(), java.err());
            assertEquals("done", java.out().strip(), java.err());
            // Every block is at least the interval: each is sampled with its own size, at both
            // intervals, under a stack from Unsafe into libjvm's os::malloc (FFM's arenas); the
            // JVM's own small blocks from there add a little.
            List<String> allocated = service.folded(false);
            long expected = NativeAllocatingThreads.totalBytes();
            long fromOsMalloc = bytesFromOsMalloc(allocated);
            assertTrue(fromOsMalloc >= expected && fromOsMalloc < expected + expected / 10,
                    fromOsMalloc + " bytes allocated by os::malloc(size_t, MemTag), " + expected + " by the program; "
                            + withLeaf(allocated, OS_MALLOC));
            // The closed arenas freed them.
            List<String> unreleased = service.folded(true);
            assertTrue(bytesFromOsMalloc(unreleased) < expected / 10, withLeaf(unreleased, OS_MALLOC));
            assertEquals(0, service.totals().malformed());
        }
    }

    /**
     * Issue 33's check: a method's native allocations are booked under its name, though it
     * runs JIT-compiled. With frame pointers kept in compiled code, the walk goes from
     * libjvm (its CFI) through the code cache (frame pointers); the JVM's perf map, written
     * at its exit, names the compiled code at the dump. Until the JIT compiles its loop the
     * method runs in the interpreter, whose frames the map names "Interpreter": 90%.
     */
    @Test
    void aJitCompiledMethodsNativeAllocationsAreBookedUnderItsName() throws Exception {
        try (HeapprofdService service = service(1)) {
            List<String> allocated = runCompiled(service, NativeAllocatingMethod.class);
            long expected = NativeAllocatingMethod.ALLOCATIONS * NativeAllocatingMethod.BLOCK;
            long named = allocated.stream().filter(JvmUnderPreloadTest::fromAllocateNativeThroughUnsafe)
                    .mapToLong(JvmUnderPreloadTest::bytes).sum();
            assertTrue(named >= expected / 10 * 9, named + " of the method's " + expected
                    + " bytes booked under its name, Unsafe and os::malloc; " + withLeaf(allocated, OS_MALLOC));
            assertEquals(0, service.totals().malformed());
        }
    }

    /**
     * Issue 33's JNI check: a Java method calls a JNI library's C function, which mallocs.
     * Every block is booked with that C function as its leaf (its symbol, from the library's
     * ELF file), and, once the JIT has compiled the loop, under the Java method that called
     * it (through the JNI call's native wrapper, named by the perf map): 90%, as above.
     */
    @Test
    void aJniFunctionsAllocationsAreBookedUnderItAndTheJavaMethodThatCalledIt() throws Exception {
        try (HeapprofdService service = service(1)) {
            List<String> allocated = runCompiled(service, JniAllocatingMethod.class,
                    CPrograms.program("libheapprofd_jni.so").toString());
            long expected = JniAllocatingMethod.ALLOCATIONS * JniAllocatingMethod.BLOCK;
            long inC = allocated.stream().filter(line -> frames(line).getLast().equals(JNI_ALLOCATE))
                    .mapToLong(JvmUnderPreloadTest::bytes).sum();
            assertEquals(expected, inC, withLeaf(allocated, JNI_ALLOCATE));
            String caller = JniAllocatingMethod.class.getName() + ".allocateThroughJni(";
            long named = allocated.stream().filter(line -> frames(line).getLast().equals(JNI_ALLOCATE)
                    && frames(line).stream().anyMatch(frame -> frame.contains(caller)))
                    .mapToLong(JvmUnderPreloadTest::bytes).sum();
            assertTrue(named >= expected / 10 * 9, named + " of the C function's " + expected
                    + " bytes booked under " + caller + "); " + withLeaf(allocated, JNI_ALLOCATE));
            // Each block was freed at once.
            assertEquals(0, service.folded(true).stream().filter(line -> frames(line).getLast().equals(JNI_ALLOCATE))
                    .mapToLong(JvmUnderPreloadTest::bytes).sum());
            assertEquals(0, service.totals().malformed());
        }
    }

    /** The JNI library's C function that mallocs (native/src/heapprofd_jni.c). */
    private static final String JNI_ALLOCATE = "Java_dev_ffmtrace_memory_testing_JniAllocatingMethod_allocate";

    /**
     * Runs {@code main} with the flags {@code ffmtrace heapprofd} adds to name compiled Java
     * frames, and {@code -Xbatch}: compiled when the counters say so, whatever the load, not
     * when a busy compiler thread gets to it. Returns the profile's allocated bytes per
     * callsite, read while the JVM's perf map is there.
     */
    private List<String> runCompiled(HeapprofdService service, Class<?> main, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("-Xbatch", "-XX:+PreserveFramePointer",
                "-XX:+UnlockDiagnosticVMOptions", "-XX:+DumpPerfMapAtExit", "-cp", classPathOf(main), main.getName()));
        command.addAll(List.of(args));
        Exited java = java(service, command.toArray(String[]::new));
        try {
            assertEquals(0, java.status(), java.err());
            assertEquals("done", java.out().strip(), java.err());
            return service.folded(false);
        } finally {
            Files.deleteIfExists(JitSymbols.DIRECTORY.resolve("perf-" + java.pid() + ".map"));
        }
    }

    /** A callsite from {@code allocateNative}, compiled, through a frame of Unsafe to os::malloc. */
    private static boolean fromAllocateNativeThroughUnsafe(String line) {
        List<String> frames = frames(line);
        int method = -1;
        for (int i = 0; i < frames.size(); i++) {
            if (frames.get(i).contains(NativeAllocatingMethod.class.getName() + ".allocateNative(")) {
                method = i;
            }
        }
        return method >= 0 && frames.getLast().equals(OS_MALLOC)
                && frames.subList(method + 1, frames.size()).stream().anyMatch(frame -> frame.contains("Unsafe"));
    }

    private static String classPathOf(Class<?> type) throws URISyntaxException {
        return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    }
}
