package dev.ffmtrace.bench;

import com.google.protobuf.CodedOutputStream;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.ScatteredStreamWriter;
import dev.ffmtrace.protozero.test.protos.EveryField;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import protozero.test.protos.TestMessages;

/**
 * The Java mirror of Perfetto's {@code BM_Protozero_*}: the same EveryField message and
 * inputs, each iteration writing into the next 512-byte window of a 64 MiB off-heap
 * working set (wrapping) and then clobbering it as the C++ {@code Clobber} does (word 0
 * overwritten, then each of the 64 words XOR-ed with the one before it), so the CPU must
 * complete the writes. The clobber is part of every variant's time.
 *
 * <ul>
 *   <li>{@code *Protozero}: a root {@link EveryField} written straight into the window.
 *   <li>{@code *HeapBuffered}: the same message built the way packets outside a trace
 *       writer are (trace files, IPC frames, the service's own packets): one
 *       {@link HeapBuffered} reset and refilled per operation, its bytes taken as one
 *       segment; no window, no clobber (not in Perfetto's set).
 *   <li>{@code *ProtobufJava}: build a protobuf-java message, serialize it with a
 *       {@link CodedOutputStream} into the window.
 *   <li>{@code *SpeedOfLight}: the C++ {@code SOLMsg}: raw aligned stores of the four
 *       integers and a copy of the NUL-terminated string into a 72-byte struct (64 bytes
 *       of storage and the write pointer), a nested message being the next struct.
 * </ul>
 * Simple sets the four integers and the string; Nested does the same and then adds a
 * nested child filled the same way, recursively, 3 levels below the root.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class ProtozeroBenchmark {
    private static final int WINDOW_SIZE = 512;
    private static final long WORKING_SET = 64L << 20;
    private static final int WINDOWS = (int) (WORKING_SET / WINDOW_SIZE);
    private static final int NESTING_LEVELS = 3;
    private static final ValueLayout.OfLong ALIGNED_LONG = ValueLayout.JAVA_LONG;
    private static final ValueLayout.OfInt ALIGNED_INT = ValueLayout.JAVA_INT;
    /** The C++ SOLMsg: 64 bytes of storage, then its 8-byte write pointer. */
    private static final long SOL_STORAGE = 64;
    private static final long SOL_STRUCT_SIZE = SOL_STORAGE + Long.BYTES;

    // Fields rather than constants so the JIT cannot fold the inputs into the code.
    private int int32 = 0x12345678;
    private int uint32 = 0x90ABCDEF;
    private long int64 = 0x11111111L;
    private long uint64 = 0xFFFFFFFFL;
    private String string = "f".repeat(31);
    private MemorySegment stringWithNul;
    // The C++ clobber stores the address of its benchmark state in word 0.
    private long token;

    private Arena arena;
    private MemorySegment[] windows;
    private ByteBuffer[] windowBuffers;
    private int next;

    private ScatteredStreamWriter writer;
    private EveryField root;
    private final HeapBuffered<EveryField> heapBuffered = new HeapBuffered<>(EveryField.FACTORY);

    @Setup
    public void setUp() {
        token = System.identityHashCode(this);
        arena = Arena.ofShared();
        MemorySegment workingSet = arena.allocate(WORKING_SET, 64);
        // Slices made up front: per-iteration slicing would allocate a segment object.
        windows = new MemorySegment[WINDOWS];
        windowBuffers = new ByteBuffer[WINDOWS];
        for (int i = 0; i < WINDOWS; i++) {
            windows[i] = workingSet.asSlice((long) i * WINDOW_SIZE, WINDOW_SIZE);
            windowBuffers[i] = windows[i].asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
        }
        byte[] bytes = (string + "\0").getBytes(StandardCharsets.US_ASCII);
        stringWithNul = arena.allocate(bytes.length, 8);
        MemorySegment.copy(bytes, 0, stringWithNul, ValueLayout.JAVA_BYTE, 0, bytes.length);
        writer = new ScatteredStreamWriter(usedBytes -> {
            throw new IllegalStateException("a 512-byte window is enough for the benchmark message");
        });
        root = new EveryField();
    }

    @TearDown
    public void tearDown() {
        arena.close();
    }

    private MemorySegment nextWindow() {
        MemorySegment window = windows[next];
        next = next + 1 == WINDOWS ? 0 : next + 1;
        return window;
    }

    private int nextIndex() {
        int index = next;
        next = next + 1 == WINDOWS ? 0 : next + 1;
        return index;
    }

    private long clobber(MemorySegment window) {
        long previous = token;
        window.set(ALIGNED_LONG, 0, previous);
        for (int i = 1; i < WINDOW_SIZE / Long.BYTES; i++) {
            long word = window.get(ALIGNED_LONG, (long) i * Long.BYTES) ^ previous;
            window.set(ALIGNED_LONG, (long) i * Long.BYTES, word);
            previous = word;
        }
        return previous;
    }

    // ---------------------------------------------------------------- ProtoZero

    private void fillSimple(EveryField message) {
        message.setFieldInt32(int32);
        message.setFieldUint32(uint32);
        message.setFieldInt64(int64);
        message.setFieldUint64(uint64);
        message.setFieldString(string);
    }

    private void fillNested(EveryField message, int depth) {
        fillSimple(message);
        if (depth < NESTING_LEVELS) {
            fillNested(message.addFieldNested(), depth + 1);
        }
    }

    @Benchmark
    public long simpleProtozero() {
        MemorySegment window = nextWindow();
        writer.reset(window);
        root.reset(writer);
        fillSimple(root);
        root.finalizeMessage();
        return clobber(window);
    }

    @Benchmark
    public long nestedProtozero() {
        MemorySegment window = nextWindow();
        writer.reset(window);
        root.reset(writer);
        fillNested(root, 0);
        root.finalizeMessage();
        return clobber(window);
    }

    @Benchmark
    public long simpleHeapBuffered() {
        heapBuffered.reset();
        fillSimple(heapBuffered.get());
        return heapBuffered.toSegment().byteSize();
    }

    @Benchmark
    public long nestedHeapBuffered() {
        heapBuffered.reset();
        fillNested(heapBuffered.get(), 0);
        return heapBuffered.toSegment().byteSize();
    }

    // ---------------------------------------------------------------- protobuf-java

    private TestMessages.EveryField.Builder simpleBuilder() {
        return TestMessages.EveryField.newBuilder()
                .setFieldInt32(int32)
                .setFieldUint32(uint32)
                .setFieldInt64(int64)
                .setFieldUint64(uint64)
                .setFieldString(string);
    }

    private TestMessages.EveryField nestedMessage(int depth) {
        TestMessages.EveryField.Builder builder = simpleBuilder();
        if (depth < NESTING_LEVELS) {
            builder.addFieldNested(nestedMessage(depth + 1));
        }
        return builder.build();
    }

    private long serialize(TestMessages.EveryField message) throws IOException {
        int index = nextIndex();
        CodedOutputStream out = CodedOutputStream.newInstance(windowBuffers[index].clear());
        message.writeTo(out);
        out.flush();
        return clobber(windows[index]);
    }

    @Benchmark
    public long simpleProtobufJava() throws IOException {
        return serialize(simpleBuilder().build());
    }

    @Benchmark
    public long nestedProtobufJava() throws IOException {
        return serialize(nestedMessage(0));
    }

    // ---------------------------------------------------------------- speed of light

    private void fillSpeedOfLight(MemorySegment window, long struct) {
        window.set(ALIGNED_INT, struct, int32);
        window.set(ALIGNED_INT, struct + 4, uint32);
        window.set(ALIGNED_LONG, struct + 8, int64);
        window.set(ALIGNED_LONG, struct + 16, uint64);
        MemorySegment.copy(stringWithNul, 0, window, struct + 24, stringWithNul.byteSize());
        // strcpy returns its destination, which the C++ stores as the write pointer.
        window.set(ALIGNED_LONG, struct + SOL_STORAGE, struct + 24);
    }

    @Benchmark
    public long simpleSpeedOfLight() {
        MemorySegment window = nextWindow();
        fillSpeedOfLight(window, 0);
        return clobber(window);
    }

    @Benchmark
    public long nestedSpeedOfLight() {
        MemorySegment window = nextWindow();
        for (int depth = 0; depth <= NESTING_LEVELS; depth++) {
            fillSpeedOfLight(window, depth * SOL_STRUCT_SIZE);
        }
        return clobber(window);
    }
}
