package dev.ffmtrace.protovm;

import static dev.ffmtrace.protovm.Programs.DST;
import static dev.ffmtrace.protovm.Programs.SRC;
import static dev.ffmtrace.protovm.Programs.cat;
import static dev.ffmtrace.protovm.Programs.fBytes;
import static dev.ffmtrace.protovm.Programs.fVarint;
import static dev.ffmtrace.protovm.Programs.field;
import static dev.ffmtrace.protovm.Programs.op;
import static dev.ffmtrace.protovm.Programs.path;
import static dev.ffmtrace.protovm.Programs.program;
import static dev.ffmtrace.protovm.Programs.regLoad;
import static dev.ffmtrace.protovm.Programs.repeated;
import static dev.ffmtrace.protovm.Programs.select;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.MemorySegment;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/**
 * The inputs where ffmtrace's VM differs from Perfetto's C++ on purpose (the divergence
 * table of docs/protovm.md): there the C++ crashes, leaks, or is plainly wrong. Each test
 * says what the C++ does and pins what ffmtrace does instead.
 */
class DivergenceTest {
    private static final HexFormat HEX = HexFormat.of();
    private static final long MIB = 1 << 20;

    private static MemorySegment bytes(byte[] value) {
        return MemorySegment.ofArray(value);
    }

    /** C++: OK, and the state then segfaults when serialised (a scalar is no message). */
    @Test
    void aScalarSetAtTheRootAborts() {
        MemorySegment program = program(select(SRC, false, path(field(1)), op("set")));
        ProtoVm vm = new ProtoVm(program, MIB, null);
        assertEquals(Status.ABORT, vm.applyPatch(bytes(fVarint(1, 5))));
        assertEquals("", HEX.formatHex(vm.serializeState()));
        assertEquals(program.byteSize(), vm.memoryUsageBytes());
    }

    /** C++: the root becomes Empty and its 6-byte blob stays counted, forever. */
    @Test
    void deletingTheRootFreesWhatItHeld() {
        MemorySegment program = program(select(DST, false, path(), op("del")));
        ProtoVm vm = new ProtoVm(program, MIB, bytes(cat(fBytes(1, fVarint(1, 1)), fVarint(2, 2))));
        assertEquals(program.byteSize() + 6, vm.memoryUsageBytes());
        assertEquals(Status.OK, vm.applyPatch(bytes(new byte[0])));
        assertEquals(program.byteSize(), vm.memoryUsageBytes());
        assertEquals("", HEX.formatHex(vm.serializeState()));
    }

    /**
     * C++: each element becomes Empty with its 2-byte blob still counted (340 bytes where 336
     * are reachable), and a debug build crashes on the blob.
     */
    @Test
    void deletingAForeachElementEmptiesItAndFreesWhatItHeld() {
        MemorySegment program = program(select(DST, false, path(repeated(1)), op("del")));
        ProtoVm vm = new ProtoVm(program, MIB, bytes(cat(fBytes(1, fVarint(1, 1)), fBytes(1, fVarint(1, 2)))));
        assertEquals(Status.OK, vm.applyPatch(bytes(new byte[0])));
        // The field's entry and node, and per element an entry and an (empty) node.
        assertEquals(program.byteSize() + 6 * StateAllocator.NODE_SIZE, vm.memoryUsageBytes());
        assertEquals("", HEX.formatHex(vm.serializeState()));
    }

    /**
     * A state holding an element whose int32 id is -1 (a 10-byte varint): the lookup by the
     * register cuts the key to 32 bits. C++: the key read back stays 64-bit, never matches,
     * and the set inserts a second element with the same id.
     */
    @Test
    void aNegativeKeyReadBackFromTheStateMatchesItsLookup() {
        MemorySegment program = program(select(SRC, false, path(repeated(3)),
                select(SRC, false, path(field(1)), regLoad(0)),
                select(DST, true, path(field(1), cat(fVarint(3, 1), fVarint(6, 0))), op("set"))));
        byte[] element = cat(fVarint(1, -1L), fVarint(2, 7));
        ProtoVm vm = new ProtoVm(program, MIB, bytes(fBytes(1, element)));
        byte[] update = cat(fVarint(1, -1L), fVarint(2, 8));
        assertEquals(Status.OK, vm.applyPatch(bytes(fBytes(3, update))));
        assertEquals(HEX.formatHex(fBytes(1, update)), HEX.formatHex(vm.serializeState()));
    }

    /** C++: reads a varint's value as a pointer to the select's bytes (a crash, or garbage). */
    @Test
    void anInstructionWithASubmessageOfTheWrongWireTypeAborts() {
        MemorySegment program = bytes(cat(fVarint(1, 1), fBytes(2, fVarint(1, 5))));
        ProtoVm vm = new ProtoVm(program, MIB, null);
        assertEquals(Status.ABORT, vm.applyPatch(bytes(fVarint(1, 5))));
    }

    /** C++: no bound; the state grows as deep as paths go, and its serialiser recurses as deep. */
    @Test
    void aStateDeeperThan32LevelsAborts() {
        byte[][] deep = new byte[StateCursor.MAX_DEPTH + 1][];
        for (int i = 0; i < deep.length; i++) {
            deep[i] = field(1);
        }
        ProtoVm vm = new ProtoVm(program(select(DST, true, deep, op("merge"))), MIB, null);
        assertEquals(Status.ABORT, vm.applyPatch(bytes(fVarint(2, 1))));
        byte[][] limit = java.util.Arrays.copyOf(deep, StateCursor.MAX_DEPTH);
        ProtoVm within = new ProtoVm(program(select(DST, true, limit, op("merge"))), MIB, null);
        assertEquals(Status.OK, within.applyPatch(bytes(fVarint(2, 1))));
    }

    /** C++: no bound; a DST foreach inside a SRC foreach runs (patch fields x state elements) steps. */
    @Test
    void aPatchRunningMoreThanAMillionStepsAborts() {
        ByteArrayBuilder state = new ByteArrayBuilder();
        for (int i = 0; i < 1100; i++) {
            state.add(fBytes(1, new byte[0]));
        }
        ByteArrayBuilder patch = new ByteArrayBuilder();
        for (int i = 0; i < 1000; i++) {
            patch.add(fVarint(2, i));
        }
        MemorySegment program = program(select(SRC, false, path(repeated(2)),
                select(DST, false, path(repeated(1)), regLoad(0))));
        ProtoVm vm = new ProtoVm(program, 64 * MIB, bytes(state.bytes()));
        assertEquals(Status.ABORT, vm.applyPatch(bytes(patch.bytes())));
        assertEquals("more than " + Interpreter.MAX_STEPS + " steps in one patch", vm.abortReason().getFirst());
    }

    private static final class ByteArrayBuilder {
        private final java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();

        void add(byte[] part) {
            out.writeBytes(part);
        }

        byte[] bytes() {
            return out.toByteArray();
        }
    }
}
