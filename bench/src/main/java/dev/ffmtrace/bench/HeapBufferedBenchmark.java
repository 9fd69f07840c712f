package dev.ffmtrace.bench;

import dev.ffmtrace.protozero.test.protos.EveryField;
import dev.ffmtrace.protozero.HeapBuffered;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * {@link ProtozeroBenchmark}'s messages built the way packets outside a trace writer are
 * (trace files, IPC frames, the service's own packets): one {@link HeapBuffered} reset
 * and refilled per operation, its bytes taken as one segment.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class HeapBufferedBenchmark {
    private static final int NESTING_LEVELS = 3;

    // Fields rather than constants so the JIT cannot fold the inputs into the code.
    private int int32 = 0x12345678;
    private int uint32 = 0x90ABCDEF;
    private long int64 = 0x11111111L;
    private long uint64 = 0xFFFFFFFFL;
    private String string = "f".repeat(31);

    private final HeapBuffered<EveryField> message = new HeapBuffered<>(EveryField.FACTORY);

    private void fillSimple(EveryField target) {
        target.setFieldInt32(int32);
        target.setFieldUint32(uint32);
        target.setFieldInt64(int64);
        target.setFieldUint64(uint64);
        target.setFieldString(string);
    }

    private void fillNested(EveryField target, int depth) {
        fillSimple(target);
        if (depth < NESTING_LEVELS) {
            fillNested(target.addFieldNested(), depth + 1);
        }
    }

    @Benchmark
    public long simple() {
        message.reset();
        fillSimple(message.get());
        return message.toSegment().byteSize();
    }

    @Benchmark
    public long nested() {
        message.reset();
        fillNested(message.get(), 0);
        return message.toSegment().byteSize();
    }
}
