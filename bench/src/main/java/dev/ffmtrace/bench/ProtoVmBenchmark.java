package dev.ffmtrace.bench;

import dev.ffmtrace.protovm.ProtoVm;
import dev.ffmtrace.protovm.Status;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
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
import org.openjdk.jmh.annotations.Warmup;

/**
 * One patch through the spec's incremental-trace program (Perfetto's
 * SamplePrograms::IncrementalTraceInstructions: delete, merge and set elements by id) on a
 * state of {@value #ELEMENTS} elements, the element rotating so every patch looks one up
 * among all of them. Each patch leaves the state's shape as it was, so a VM that recycles
 * its nodes allocates nothing per patch.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class ProtoVmBenchmark {
    private static final int ELEMENTS = 1000;

    private ProtoVm vm;
    private MemorySegment[] sets;
    private MemorySegment[] merges;
    private MemorySegment[] deleteThenSets;
    private int next;

    @Setup
    public void setUp() {
        ByteArrayOutputStream state = new ByteArrayOutputStream();
        sets = new MemorySegment[ELEMENTS];
        merges = new MemorySegment[ELEMENTS];
        deleteThenSets = new MemorySegment[ELEMENTS];
        for (int id = 0; id < ELEMENTS; id++) {
            state.writeBytes(bytesField(1, element(id, id)));
            sets[id] = MemorySegment.ofArray(bytesField(3, element(id, id + 1)));
            merges[id] = MemorySegment.ofArray(bytesField(2, element(id, id + 2)));
            ByteArrayOutputStream patch = new ByteArrayOutputStream();
            patch.writeBytes(varintField(1, id));
            patch.writeBytes(bytesField(3, element(id, id + 3)));
            deleteThenSets[id] = MemorySegment.ofArray(patch.toByteArray());
        }
        vm = new ProtoVm(MemorySegment.ofArray(incrementalTraceProgram()), 64 << 20,
                MemorySegment.ofArray(state.toByteArray()));
        // Decode the state once, as a running VM has.
        for (MemorySegment set : sets) {
            vm.applyPatch(set);
        }
    }

    private MemorySegment nextOf(MemorySegment[] patches) {
        int index = next;
        next = index + 1 == ELEMENTS ? 0 : index + 1;
        return patches[index];
    }

    @Benchmark
    public Status setElement() {
        return vm.applyPatch(nextOf(sets));
    }

    @Benchmark
    public Status mergeElement() {
        return vm.applyPatch(nextOf(merges));
    }

    @Benchmark
    public Status deleteThenSetElement() {
        return vm.applyPatch(nextOf(deleteThenSets));
    }

    static byte[] incrementalTraceProgram() {
        ByteArrayOutputStream program = new ByteArrayOutputStream();
        program.writeBytes(varintField(1, 1));
        program.writeBytes(bytesField(2, keyed(1, 5, false)));
        program.writeBytes(bytesField(2, keyed(2, 3, true)));
        program.writeBytes(bytesField(2, keyed(3, 4, true)));
        return program.toByteArray();
    }

    /** For each element of patch field {@code srcField}: load its id, select that element of the state, run {@code op}. */
    private static byte[] keyed(int srcField, int op, boolean create) {
        byte[] regLoad = bytesField(2, varintField(2, 0));
        byte[] load = srcField == 1 ? regLoad
                : concat(bytesField(1, bytesField(2, varintField(1, 1))), bytesField(7, regLoad));
        byte[] dstSelect = concat(varintField(1, 2), bytesField(2, varintField(1, 1)),
                bytesField(2, concat(varintField(3, 1), varintField(6, 0))), varintField(3, create ? 1 : 0));
        byte[] dst = concat(bytesField(1, dstSelect), bytesField(7, bytesField(op, new byte[0])));
        byte[] srcSelect = bytesField(2, concat(varintField(1, srcField), varintField(5, 1)));
        return concat(bytesField(1, srcSelect), bytesField(7, load), bytesField(7, dst));
    }

    private static byte[] element(int id, int value) {
        return concat(varintField(1, id), varintField(2, value));
    }

    private static byte[] varintField(int fieldId, long value) {
        return concat(varint((long) fieldId << 3), varint(value));
    }

    private static byte[] bytesField(int fieldId, byte[] value) {
        return concat(varint((long) fieldId << 3 | 2), varint(value.length), value);
    }

    private static byte[] varint(long value) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        while ((value & ~0x7fL) != 0) {
            out.write((int) (value & 0x7f) | 0x80);
            value >>>= 7;
        }
        out.write((int) value);
        return out.toByteArray();
    }

    private static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] part : parts) {
            out.writeBytes(part);
        }
        return out.toByteArray();
    }
}
