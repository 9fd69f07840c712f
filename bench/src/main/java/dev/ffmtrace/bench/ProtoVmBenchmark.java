package dev.ffmtrace.bench;

import dev.ffmtrace.perfetto.protos.VmCursorEnum;
import dev.ffmtrace.perfetto.protos.VmInstruction;
import dev.ffmtrace.perfetto.protos.VmOpSelect;
import dev.ffmtrace.perfetto.protos.VmProgram;
import dev.ffmtrace.protovm.ProtoVm;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.Message;
import dev.ffmtrace.protozero.MessageFactory;
import dev.ffmtrace.protovm.Status;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
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
        HeapBuffered<Fields> state = new HeapBuffered<>(FIELDS);
        sets = new MemorySegment[ELEMENTS];
        merges = new MemorySegment[ELEMENTS];
        deleteThenSets = new MemorySegment[ELEMENTS];
        for (int id = 0; id < ELEMENTS; id++) {
            state.get().appendBytes(1, element(id, id));
            sets[id] = patch(null, 3, element(id, id + 1));
            merges[id] = patch(null, 2, element(id, id + 2));
            deleteThenSets[id] = patch(id, 3, element(id, id + 3));
        }
        vm = new ProtoVm(MemorySegment.ofArray(incrementalTraceProgram()), 64 << 20,
                MemorySegment.ofArray(state.toByteArray()));
        // Decode the state once, as a running VM has; a program that does not take the
        // patches would measure nothing.
        for (MemorySegment[] patches : List.of(sets, merges, deleteThenSets)) {
            for (MemorySegment patch : patches) {
                if (vm.applyPatch(patch) != Status.OK) {
                    throw new IllegalStateException("the program refused a patch: " + vm.abortReason());
                }
            }
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

    /** SamplePrograms::IncrementalTraceInstructions: for each patch element, by its id, del, merge or set. */
    static byte[] incrementalTraceProgram() {
        HeapBuffered<VmProgram> program = new HeapBuffered<>(VmProgram.FACTORY);
        program.get().setVersion(1);
        keyed(program.get().addInstructions(), 1, false, VmInstruction::setDel);
        keyed(program.get().addInstructions(), 2, true, VmInstruction::setMerge);
        keyed(program.get().addInstructions(), 3, true, VmInstruction::setSet);
        return program.toByteArray();
    }

    /** For each element of patch field {@code srcField}: load its id, select that element of the state, run {@code op}. */
    private static void keyed(VmInstruction instruction, int srcField, boolean create, Consumer<VmInstruction> op) {
        VmOpSelect.PathComponent elements = instruction.setSelect().addRelativePath();
        elements.setFieldId(srcField);
        elements.setIsRepeated(true);
        if (srcField == 1) {
            instruction.addNestedInstructions().setRegLoad().setDstRegister(0);   // the element is the id
        } else {
            VmInstruction id = instruction.addNestedInstructions();
            id.setSelect().addRelativePath().setFieldId(1);
            id.addNestedInstructions().setRegLoad().setDstRegister(0);
        }
        VmInstruction dst = instruction.addNestedInstructions();
        VmOpSelect select = dst.setSelect();
        select.setCursor(VmCursorEnum.VM_CURSOR_DST);
        select.addRelativePath().setFieldId(1);
        VmOpSelect.PathComponent byId = select.addRelativePath();
        byId.setMapKeyFieldId(1);
        byId.setRegisterToMatch(0);
        select.setCreateIfNotExist(create);
        op.accept(dst.addNestedInstructions());
    }

    /** The spec's test schema, written with protozero: it has no generated classes here. */
    private static final class Fields extends Message {
    }

    private static final MessageFactory<Fields> FIELDS = MessageFactory.of(Fields::new);

    private static byte[] element(int id, int value) {
        HeapBuffered<Fields> element = new HeapBuffered<>(FIELDS);
        element.get().appendVarInt(1, id);
        element.get().appendVarInt(2, value);
        return element.toByteArray();
    }

    /** A patch: elements_to_delete {@code delete} (unless null), then {@code element} in field {@code field}. */
    private static MemorySegment patch(Integer delete, int field, byte[] element) {
        HeapBuffered<Fields> patch = new HeapBuffered<>(FIELDS);
        if (delete != null) {
            patch.get().appendVarInt(1, delete);
        }
        patch.get().appendBytes(field, element);
        return MemorySegment.ofArray(patch.toByteArray());
    }
}
