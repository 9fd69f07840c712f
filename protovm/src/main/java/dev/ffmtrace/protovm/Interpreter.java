package dev.ffmtrace.protovm;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * Runs a program's instructions on one patch: Perfetto's {@code Parser} and {@code Executor}
 * in one, with the same cursor rules (a select moves SRC when it names SRC or nothing, DST
 * otherwise; BOTH moves DST only), the same status handling per abort level and the same
 * register file, which persists across patches.
 *
 * <p>Untrusted programs: the C++ has no bounds; here a patch may run at most
 * {@link #MAX_STEPS} instructions and foreach iterations and nest at most
 * {@link #MAX_NESTING} selects and instruction lists, and aborts past either.
 */
final class Interpreter {
    static final int REGISTERS = 32;
    /** Instructions plus foreach iterations one patch may run. */
    static final int MAX_STEPS = 1 << 20;
    /** Selects and instruction lists one patch may nest. */
    static final int MAX_NESTING = 256;

    private final Instruction[] program;
    private final StateCursor.Machine machine;
    private final AbortTrace trace;
    private final WireReader reader = new WireReader();
    private final long[] registers = new long[REGISTERS];
    private final boolean[] registerSet = new boolean[REGISTERS];

    /** The cursors of the running frame; a select saves and restores them. */
    private final PatchCursor src = new PatchCursor();
    private final StateCursor dst;
    /** What each level of select nesting saved, reused patch after patch. */
    private PatchCursor[] savedSrcs = new PatchCursor[8];
    private StateCursor[] savedDsts = new StateCursor[8];
    private int selectDepth;
    /** The readers of the SRC foreach loops under way, one per level, reused. */
    private WireReader[] foreachReaders = new WireReader[8];
    private int foreachDepth;
    private int selected;
    private boolean createIfNotExist;
    /** The DST cursor the innermost enclosing select saved: del must not free it. */
    private StateCursor innermostSavedDst;
    private int steps;
    private int nesting;

    Interpreter(Instruction[] program, StateCursor.Machine machine) {
        this.program = program;
        this.machine = machine;
        this.trace = machine.trace();
        this.dst = new StateCursor(machine);
    }

    int run(MemorySegment patch, long offset, long length) {
        trace.clear();
        src.setBytes(patch, offset, length);
        dst.atRoot();
        selected = Instruction.CURSOR_SRC;
        createIfNotExist = false;
        innermostSavedDst = null;
        steps = 0;
        nesting = 0;
        selectDepth = 0;
        foreachDepth = 0;
        return runList(program);
    }

    private int runList(Instruction[] instructions) {
        if (++nesting > MAX_NESTING) {
            return trace.abort("instructions nested deeper than " + MAX_NESTING);
        }
        try {
            for (int i = 0; i < instructions.length; i++) {
                Instruction instruction = instructions[i];
                int status = runOne(instruction);
                if (status == Status.CODE_ABORT) {
                    return trace.context(Status.CODE_ABORT, "instruction[" + i + "]");
                }
                if (status == Status.CODE_ERROR) {
                    if (instruction.abortLevel == Instruction.SKIP_CURRENT_INSTRUCTION_AND_BREAK_OUTER) {
                        return Status.CODE_ERROR;
                    }
                    if (instruction.abortLevel == Instruction.ABORT) {
                        return trace.abort("instruction[" + i + "]: returned status = error and instruction's abort "
                                + "level = 'abort'");
                    }
                }
            }
            return Status.CODE_OK;
        } finally {
            nesting--;
        }
    }

    private int runOne(Instruction instruction) {
        if (++steps > MAX_STEPS) {
            return trace.abort("more than " + MAX_STEPS + " steps in one patch");
        }
        int status;
        switch (instruction.op) {
            case Instruction.SELECT -> {
                return trace.context(select(instruction), "select");
            }
            case Instruction.REG_LOAD -> status = trace.context(regLoad(instruction), "reg_load");
            case Instruction.DEL -> status = trace.context(del(), "del");
            case Instruction.MERGE -> status = trace.context(merge(instruction), "merge");
            case Instruction.SET -> status = trace.context(set(), "set");
            case Instruction.MALFORMED -> status = trace.abort("Malformed instruction");
            default -> status = trace.abort("Unsupported instruction");
        }
        return status == Status.CODE_OK ? runList(instruction.nested) : status;
    }

    private int select(Instruction instruction) {
        int depth = selectDepth;
        if (depth == savedSrcs.length) {
            savedSrcs = Arrays.copyOf(savedSrcs, depth * 2);
            savedDsts = Arrays.copyOf(savedDsts, depth * 2);
        }
        if (savedSrcs[depth] == null) {
            savedSrcs[depth] = new PatchCursor();
            savedDsts[depth] = new StateCursor(machine);
        }
        PatchCursor savedSrc = savedSrcs[depth];
        StateCursor savedDst = savedDsts[depth];
        savedSrc.set(src);
        savedDst.set(dst);
        int savedSelected = selected;
        boolean savedCreate = createIfNotExist;
        StateCursor savedInnermost = innermostSavedDst;

        innermostSavedDst = savedDst;
        selected = instruction.cursor;
        createIfNotExist = instruction.createIfNotExist;
        if (selected == Instruction.CURSOR_SRC && createIfNotExist) {
            return trace.abort("incompatible params: src cursor (read only) + create_if_not_exist");
        }
        selectDepth = depth + 1;
        int status = selectPath(instruction, 0);
        selectDepth = depth;
        src.set(savedSrc);
        dst.set(savedDst);
        selected = savedSelected;
        createIfNotExist = savedCreate;
        innermostSavedDst = savedInnermost;
        return status;
    }

    /** Walks the path from component {@code index} on, then runs the select's nested instructions. */
    private int selectPath(Instruction instruction, int index) {
        Instruction.PathComponent[] path = instruction.path;
        if (index == path.length) {
            return runList(instruction.nested);
        }
        if (++nesting > MAX_NESTING) {
            return trace.abort("path deeper than " + MAX_NESTING);
        }
        try {
            Instruction.PathComponent component = path[index++];
            Instruction.PathComponent next = index < path.length ? path[index] : null;
            if (!component.hasFieldId()) {
                return trace.abort("Invalid path. Expected path component with field_id.");
            }
            int fieldId = component.fieldId();
            if (component.isRepeated()) {
                return forEach(instruction, index, fieldId);
            }
            int status;
            if (next != null && next.hasArrayIndex()) {
                status = selected == Instruction.CURSOR_SRC
                        ? src.enterRepeatedFieldAt(reader, fieldId, Integer.toUnsignedLong(next.arrayIndex()), trace)
                        : dst.enterRepeatedFieldAt(fieldId, next.arrayIndex());
                index++;
            } else if (next != null && next.hasMapKeyFieldId()) {
                index++;
                status = enterByKey(fieldId, next);
            } else {
                status = enterField(fieldId);
            }
            if (status == Status.CODE_ABORT) {
                return trace.context(status, "enter field (id = " + Integer.toUnsignedString(fieldId) + ")");
            }
            return status == Status.CODE_OK ? selectPath(instruction, index) : status;
        } finally {
            nesting--;
        }
    }

    private int forEach(Instruction instruction, int index, int fieldId) {
        if (selected == Instruction.CURSOR_SRC) {
            int depth = foreachDepth;
            if (depth == foreachReaders.length) {
                foreachReaders = Arrays.copyOf(foreachReaders, depth * 2);
            }
            if (foreachReaders[depth] == null) {
                foreachReaders[depth] = new WireReader();
            }
            WireReader elements = foreachReaders[depth];
            if (!src.lengthDelimitedData(elements, trace)) {
                return trace.context(Status.CODE_ABORT, "iterate repeated field (id = " + fieldId + ")");
            }
            foreachDepth = depth + 1;
            try {
                while (elements.next()) {
                    if (elements.id() != fieldId) {
                        continue;
                    }
                    if (++steps > MAX_STEPS) {
                        return trace.abort("more than " + MAX_STEPS + " steps in one patch");
                    }
                    src.setField(elements);
                    int status = selectPath(instruction, index);
                    if (status != Status.CODE_OK) {
                        return status == Status.CODE_ABORT
                                ? trace.context(status, "repeated field (id = " + fieldId + ")") : status;
                    }
                }
                return Status.CODE_OK;
            } finally {
                foreachDepth = depth;
            }
        }
        if (selected != 2) {
            return trace.abort("Iteration over selected cursor (" + selected + ") is not supported. Should be "
                    + "either SRC or DST cursor.");
        }
        if (dst.depth() >= StateCursor.MAX_DEPTH) {
            return trace.abort("Attempted to iterate a field deeper than " + StateCursor.MAX_DEPTH
                    + " levels in the state");
        }
        EntryMap elements = dst.repeatedField(fieldId);
        if (elements == null) {
            return trace.context(Status.CODE_ABORT, "iterate repeated field (id = " + fieldId + ")");
        }
        int elementDepth = dst.depth() + 1;
        for (int i = 0; i < elements.size(); i++) {
            if (++steps > MAX_STEPS) {
                return trace.abort("more than " + MAX_STEPS + " steps in one patch");
            }
            dst.atElement(elements.at(i).value, elementDepth);
            int status = selectPath(instruction, index);
            if (status != Status.CODE_OK) {
                return status == Status.CODE_ABORT
                        ? trace.context(status, "repeated field (id = " + fieldId + ", index = " + i + ")") : status;
            }
        }
        return Status.CODE_OK;
    }

    private int enterField(int fieldId) {
        if (selected == Instruction.CURSOR_SRC) {
            return src.enterField(reader, fieldId, trace);
        }
        int has = dst.hasField(fieldId);
        if (has < 0) {
            return Status.CODE_ABORT;
        }
        if (has == 0 && !createIfNotExist) {
            return Status.CODE_ERROR;
        }
        return dst.enterField(fieldId);
    }

    private int enterByKey(int fieldId, Instruction.PathComponent keyComponent) {
        if (!keyComponent.hasRegisterToMatch()) {
            return trace.abort("enter mapped repeated field: expected field 'register_to_match'");
        }
        int register = keyComponent.registerToMatch() & 0xff;
        if (register >= REGISTERS) {
            return trace.abort("Register (id = " + register + ") is out of bounds");
        }
        if (!registerSet[register]) {
            return trace.abort("Register (id = " + register + ") is not initialized");
        }
        if (selected == Instruction.CURSOR_SRC) {
            return trace.abort("Mapped repeated fields are currently supported only in RwProto");
        }
        int has = dst.hasField(fieldId);
        if (has < 0) {
            return Status.CODE_ABORT;
        }
        if (has == 0 && !createIfNotExist) {
            return Status.CODE_ERROR;
        }
        // The lookup key is the register's low 32 bits, as the C++ passes it.
        return dst.enterRepeatedFieldByKey(fieldId, keyComponent.mapKeyFieldId(),
                registers[register] & 0xffff_ffffL);
    }

    private int regLoad(Instruction instruction) {
        int register = instruction.dstRegister & 0xff;
        if (register >= REGISTERS) {
            return trace.abort("Register (id = " + register + ") is out of bounds");
        }
        long value;
        if (instruction.cursor == Instruction.CURSOR_SRC) {
            if (!src.isScalar()) {
                return trace.abort("Attempted to access length-delimited field as a scalar");
            }
            value = src.value();
        } else {
            StateNode scalar = dst.scalar();
            if (scalar == null) {
                return Status.CODE_ABORT;
            }
            value = scalar.scalar;
        }
        registers[register] = value;
        registerSet[register] = true;
        return Status.CODE_OK;
    }

    private int del() {
        int root = dst.isRoot();
        if (root < 0) {
            return Status.CODE_ABORT;
        }
        if (innermostSavedDst != null && dst.sameNode(innermostSavedDst) && root == 0) {
            return trace.abort("del would invalidate a cursor saved by an enclosing select");
        }
        return dst.delete();
    }

    private int merge(Instruction instruction) {
        if (!src.isBytes()) {
            return trace.abort("Attempted MERGE operation but src cursor has incompatible data type");
        }
        return dst.merge(src.data(), src.offset(), src.length(), instruction.skipSubmessages,
                instruction.delIfSrcEmpty);
    }

    private int set() {
        if (src.isScalar()) {
            return dst.setScalar(src.type(), src.value());
        }
        return dst.setBytes(src.data(), src.offset(), src.length());
    }
}
