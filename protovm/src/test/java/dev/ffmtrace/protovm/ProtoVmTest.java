package dev.ffmtrace.protovm;

import static dev.ffmtrace.protovm.Programs.DST;
import static dev.ffmtrace.protovm.Programs.SRC;
import static dev.ffmtrace.protovm.Programs.fVarint;
import static dev.ffmtrace.protovm.Programs.field;
import static dev.ffmtrace.protovm.Programs.op;
import static dev.ffmtrace.protovm.Programs.path;
import static dev.ffmtrace.protovm.Programs.program;
import static dev.ffmtrace.protovm.Programs.select;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/** Behaviours golden.txt cannot hold (Perfetto's debug build crashes on them), and the API's contract. */
class ProtoVmTest {
    private static final HexFormat HEX = HexFormat.of();

    /**
     * A scalar element entered by index is no bytes, so setting it writes an empty field.
     * Perfetto's release build gives {@code 2200} with 96 bytes in use besides the program (its
     * debug build crashes).
     */
    @Test
    void aScalarEnteredByIndexIsSetAsNoBytes() {
        MemorySegment program = program(select(SRC, false, path(field(1), fVarint(2, 0)),
                select(DST, true, path(field(4)), op("set"))));
        ProtoVm vm = new ProtoVm(program, 1 << 20, null);
        assertEquals(Status.OK, vm.applyPatch(MemorySegment.ofArray(fVarint(1, 5))));
        assertEquals("2200", HEX.formatHex(vm.serializeState()));
        assertEquals(program.byteSize() + 2 * StateAllocator.NODE_SIZE, vm.memoryUsageBytes());
    }

    @Test
    void aReadOnlyCloneKeepsTheStateAndAbortsEveryPatch() {
        MemorySegment program = program(op("merge"));
        ProtoVm vm = new ProtoVm(program, 1 << 20, null);
        assertEquals(Status.OK, vm.applyPatch(MemorySegment.ofArray(fVarint(1, 5))));
        ProtoVm clone = vm.cloneReadOnly();
        assertTrue(clone.isReadOnly());
        assertEquals(Status.ABORT, clone.applyPatch(MemorySegment.ofArray(fVarint(1, 6))));
        assertEquals("0805", HEX.formatHex(clone.serializeState()));
        assertEquals(program.byteSize() + 2, clone.memoryUsageBytes());
        assertEquals(Status.OK, vm.applyPatch(MemorySegment.ofArray(fVarint(1, 6))));
        assertEquals("0805", HEX.formatHex(clone.serializeState()));
    }

    @Test
    void anAbortSaysWhyAndWhere() {
        ProtoVm vm = new ProtoVm(program(select(SRC, false, path(field(1)), op("merge"))), 1 << 20, null);
        assertEquals(Status.ABORT, vm.applyPatch(MemorySegment.ofArray(fVarint(1, 5))));
        assertEquals("Attempted MERGE operation but src cursor has incompatible data type",
                vm.abortReason().getFirst());
        assertEquals("instruction[0]", vm.abortReason().getLast());
        assertEquals(Status.OK, vm.applyPatch(MemorySegment.ofArray(Programs.fBytes(1, fVarint(2, 7)))));
        assertTrue(vm.abortReason().isEmpty());
    }

    @Test
    void aNegativeLimitIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> new ProtoVm(program(), -1, null));
    }
}
