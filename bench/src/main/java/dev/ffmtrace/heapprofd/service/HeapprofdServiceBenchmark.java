package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.heapprofd.wire.AllocMetadata;
import dev.ffmtrace.heapprofd.wire.WireFormatException;
import dev.ffmtrace.heapprofd.wire.WireRecord;
import dev.ffmtrace.heapprofd.wire.WireRecords;
import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.shmring.SharedRingBuffer;
import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The service's side of one record, ns per record: a {@link ClientConnection}'s
 * {@link ClientConnection#read} (the method its thread calls on each record of the ring)
 * copies the record's type and body, unwinds a Malloc's native stack in place by the CFI of
 * its frames, symbolizes its frames and books it, or books a Free. The records are the C client's, byte for byte
 * ({@link WireRecords}), and the process is this JVM: its {@code /proc/self/maps} and
 * {@code mem}, and a stack of {@code depth} frames built in its memory whose pcs are the
 * first bytes of libc's functions, where their CFI puts the CFA 8 bytes above rsp and the
 * return address at rsp, so the walk reads the process's real mappings, ELF symbols and
 * .eh_frame (once; then the unwinder's caches of rules and frames by pc). The record
 * carries {@value #FRAME_BYTES} bytes of stack per frame and 1 KiB more, as a client's copy
 * of a stack of such frames would. {@code mallocThenFree} is a sampled allocation's life, a
 * Malloc then the Free of its address (two records per invocation); {@code unsampledFree}
 * is the most common record, a Free of an address the books do not hold.
 * {@code mallocThenFreeUnwindFree} is the floor of {@code mallocThenFree}: the same two
 * records read, parsed and booked the same way, the Malloc at the stack its unwinding
 * found once, so the difference between the two rows is the unwinding of each record
 * (its CFI rows found by pc, each frame's return address read, the frame buffer filled).
 * The class is in the service's package to reach the connection's package-private reader
 * and the books.
 */
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class HeapprofdServiceBenchmark {
    private static final int HEAP_ID = 0;
    private static final long ADDRESS = 0x7f00_0000_1000L;
    /** The stack a typical frame takes, its locals and saved registers: what the record's copy carries per frame. */
    private static final long FRAME_BYTES = 0x60;
    private static final long SLACK_BYTES = 1024;
    // unwindstack's x86-64 register order: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip.
    private static final long RBP_OFFSET = 6 * 8;
    private static final long RSP_OFFSET = 7 * 8;
    private static final long RIP_OFFSET = 16 * 8;
    /** Functions of libc whose code the return addresses point into, one per frame, outermost last. */
    private static final List<String> FUNCTIONS = List.of("malloc", "calloc", "realloc", "free", "memcpy", "memset",
            "strlen", "strcmp", "strchr", "strtol", "snprintf", "qsort", "bsearch", "fopen", "fclose", "fread",
            "fwrite", "open", "close", "read", "write", "mmap", "munmap", "getpid", "getuid", "nanosleep",
            "clock_gettime", "pthread_create", "pthread_join", "strncmp", "strrchr", "strstr", "memmove", "memcmp",
            "memchr", "strcpy", "strncpy", "strcat", "strdup", "atoi", "atol", "strtoul", "strtod", "sprintf",
            "printf", "fprintf", "puts", "fputs", "fgets", "fflush", "fseek", "ftell", "rewind", "getenv", "setenv",
            "unsetenv", "rand", "srand", "abs", "exit");

    /** A connection reading this JVM's maps and memory, and a Malloc and a Free record of one address. */
    @State(Scope.Thread)
    public static class Connection {
        @Param({"10", "30"})
        public int depth;

        final Arena arena = Arena.ofConfined();
        ClientConnection connection;
        MemorySegment malloc;
        MemorySegment free;
        MemorySegment unsampledFree;
        /** The floor's own record reader and books, and the stack the connection's unwinding found. */
        final WireRecord floorRecord = new WireRecord();
        final HeapBooks floorBooks = new HeapBooks();
        List<Frame> unwound;

        @Setup(Level.Trial)
        public void setUp() {
            if (depth > FUNCTIONS.size()) {
                throw new IllegalArgumentException("at most " + FUNCTIONS.size() + " frames: " + depth);
            }
            MemorySegment stack = arena.allocate(depth * FRAME_BYTES + SLACK_BYTES, 16);
            long sp = stack.address();
            // Frame i's return address is the word at sp + 8i: one byte into its caller's function,
            // so that the row looked up, a byte before it, is the entry's.
            for (int i = 0; i < depth; i++) {
                boolean outermost = i == depth - 1;
                stack.set(Layouts.LONG_UNALIGNED, 8L * i, outermost ? 0 : function(FUNCTIONS.get(i + 1)) + 1);
            }
            AllocMetadata alloc = new AllocMetadata().arch(AllocMetadata.ARCH_X86_64).stackPointer(sp)
                    .heapId(HEAP_ID).allocAddress(ADDRESS).allocSize(64).sampleSize(64);
            alloc.registers().set(Layouts.LONG_UNALIGNED, RBP_OFFSET, 0);
            alloc.registers().set(Layouts.LONG_UNALIGNED, RSP_OFFSET, sp);
            alloc.registers().set(Layouts.LONG_UNALIGNED, RIP_OFFSET, function(FUNCTIONS.getFirst()));
            malloc = arena.allocate(WireRecords.mallocRecordSize(stack.byteSize()), 8);
            WireRecords.writeMalloc(malloc, 0, alloc, stack, 0, stack.byteSize());
            free = arena.allocate(WireRecords.FREE_RECORD_SIZE, 8);
            WireRecords.writeFree(free, 0, 1, ADDRESS, HEAP_ID);
            unsampledFree = arena.allocate(WireRecords.FREE_RECORD_SIZE, 8);
            WireRecords.writeFree(unsampledFree, 0, 2, ADDRESS + 64, HEAP_ID);

            // The ring is the connection's to release; the records never go through it.
            connection = new ClientConnection("bench", Os.pid(), Os.uid(), null, SharedRingBuffer.create(Os.pageSize()),
                    Os.openReadOnly(Path.of("/proc/self/maps")), Os.openReadOnly(Path.of("/proc/self/mem")), new ElfFiles());
            connection.read(malloc, 0, malloc.byteSize());
            List<Frame> frames = connection.heaps.get(HEAP_ID).samples(UnaryOperator.identity()).getFirst().frames();
            // A walk that stopped short or failed would measure another path.
            if (frames.size() != depth || connection.unwindingErrors() != 0 || connection.malformed() != 0) {
                throw new IllegalStateException("the stack did not unwind whole: " + frames);
            }
            unwound = frames;
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            connection.release();
            arena.close();
        }

        private static long function(String name) {
            return Linker.nativeLinker().defaultLookup().find(name).orElseThrow().address();
        }
    }

    @Benchmark
    @OperationsPerInvocation(2)
    public void mallocThenFree(Connection state) {
        state.connection.read(state.malloc, 0, state.malloc.byteSize());
        state.connection.read(state.free, 0, state.free.byteSize());
    }

    @Benchmark
    @OperationsPerInvocation(2)
    public void mallocThenFreeUnwindFree(Connection state) throws WireFormatException {
        WireRecord record = state.floorRecord;
        record.read(state.malloc, 0, state.malloc.byteSize());
        AllocMetadata alloc = record.alloc();
        state.floorBooks.malloc(alloc.allocAddress(), alloc.sampleSize(), state.unwound);
        record.read(state.free, 0, state.free.byteSize());
        state.floorBooks.free(record.freeAddress());
    }

    @Benchmark
    public void unsampledFree(Connection state) {
        state.connection.read(state.unsampledFree, 0, state.unsampledFree.byteSize());
    }
}
