package dev.ffmtrace.protovm;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * One {@code VmInstruction} of a program, decoded once when the program is loaded. Perfetto's
 * parser decodes the instruction bytes again at every step; decoding them up front with the
 * same rules (protozero's reader, the last occurrence of a singular field wins, repeated ones
 * in wire order, unknown ids ignored) gives the same instructions without the repeated work.
 *
 * <p>Bytes Perfetto's decoders would read as garbage (a submessage with a scalar wire type,
 * a scalar written length-delimited: the C++ reinterprets the value as a pointer) make the
 * instruction {@link #MALFORMED}: running it aborts.
 */
final class Instruction {
    static final int MALFORMED = -1;
    static final int NONE = 0;
    static final int SELECT = 1;
    static final int REG_LOAD = 2;
    static final int MERGE = 3;
    static final int SET = 4;
    static final int DEL = 5;

    /** {@code VmCursorEnum}. */
    static final int CURSOR_SRC = 1;

    /** {@code VmInstruction.AbortLevel}. */
    static final int SKIP_CURRENT_INSTRUCTION_AND_BREAK_OUTER = 2;
    static final int ABORT = 3;

    private static final Instruction[] NO_INSTRUCTIONS = {};
    private static final PathComponent[] NO_PATH = {};

    /** The operation the parser runs: select first, then reg_load, del, merge, set, as Perfetto checks them. */
    final int op;
    /** The abort level, {@link #SKIP_CURRENT_INSTRUCTION_AND_BREAK_OUTER} when absent. */
    final int abortLevel;
    final Instruction[] nested;
    /** select's and reg_load's cursor, {@link #CURSOR_SRC} when absent. */
    final int cursor;
    final boolean createIfNotExist;
    final PathComponent[] path;
    final int dstRegister;
    final boolean skipSubmessages;
    final boolean delIfSrcEmpty;

    private Instruction(int op, int abortLevel, Instruction[] nested, int cursor, boolean createIfNotExist,
                        PathComponent[] path, int dstRegister, boolean skipSubmessages, boolean delIfSrcEmpty) {
        this.op = op;
        this.abortLevel = abortLevel;
        this.nested = nested;
        this.cursor = cursor;
        this.createIfNotExist = createIfNotExist;
        this.path = path;
        this.dstRegister = dstRegister;
        this.skipSubmessages = skipSubmessages;
        this.delIfSrcEmpty = delIfSrcEmpty;
    }

    /**
     * One component of a select's path. {@code fieldId} and the other ids are the uint32s
     * protozero reads (the varint cut to 32 bits); a register id is cut to 8 bits where used.
     */
    record PathComponent(boolean hasFieldId, int fieldId, boolean hasArrayIndex, int arrayIndex,
                         boolean hasMapKeyFieldId, int mapKeyFieldId, boolean isRepeated,
                         boolean hasRegisterToMatch, int registerToMatch) {
    }

    /** The instructions of a {@code VmProgram} (its field 2) in {@code program[offset, offset + length)}. */
    static Instruction[] decodeProgram(MemorySegment program, long offset, long length, int depthLeft) {
        return decodeList(program, offset, length, 2, depthLeft);
    }

    /** Every occurrence of the length-delimited field {@code fieldId}, as instructions. */
    private static Instruction[] decodeList(MemorySegment data, long offset, long length, int fieldId, int depthLeft) {
        List<Instruction> list = new ArrayList<>();
        WireReader reader = new WireReader().reset(data, offset, length);
        while (reader.next()) {
            if (reader.id() == fieldId) {
                list.add(reader.isLengthDelimited() && depthLeft > 0
                        ? decode(data, reader.payloadOffset(), reader.payloadLength(), depthLeft - 1)
                        : malformed());
            }
        }
        return list.isEmpty() ? NO_INSTRUCTIONS : list.toArray(Instruction[]::new);
    }

    private static Instruction malformed() {
        return new Instruction(MALFORMED, SKIP_CURRENT_INSTRUCTION_AND_BREAK_OUTER, NO_INSTRUCTIONS, CURSOR_SRC,
                false, NO_PATH, 0, false, false);
    }

    /** A {@code VmInstruction} message; nesting deeper than the program allows is malformed. */
    private static Instruction decode(MemorySegment data, long offset, long length, int depthLeft) {
        // The last occurrence of each singular field, as (offset, length) or value; -1: absent.
        long select = -1, selectLength = 0, regLoad = -1, regLoadLength = 0, merge = -1, mergeLength = 0;
        boolean hasSet = false, hasDel = false, hasAbortLevel = false, malformed = false;
        long abortLevel = 0;
        WireReader reader = new WireReader().reset(data, offset, length);
        while (reader.next()) {
            switch (reader.id()) {
                // set and del are empty messages: Perfetto only asks whether they are there.
                case 4 -> hasSet = true;
                case 5 -> hasDel = true;
                case 1, 2, 3 -> {
                    if (!reader.isLengthDelimited()) {
                        malformed = true;
                    } else if (reader.id() == 1) {
                        select = reader.payloadOffset();
                        selectLength = reader.payloadLength();
                    } else if (reader.id() == 2) {
                        regLoad = reader.payloadOffset();
                        regLoadLength = reader.payloadLength();
                    } else {
                        merge = reader.payloadOffset();
                        mergeLength = reader.payloadLength();
                    }
                }
                case 6 -> {
                    malformed |= reader.isLengthDelimited();
                    hasAbortLevel = true;
                    abortLevel = reader.value();
                }
                default -> {
                }
            }
        }
        if (malformed) {
            return malformed();
        }
        Instruction[] nested = decodeList(data, offset, length, 7, depthLeft);
        int level = hasAbortLevel ? (int) abortLevel : SKIP_CURRENT_INSTRUCTION_AND_BREAK_OUTER;
        if (select >= 0) {
            return decodeSelect(data, select, selectLength, level, nested);
        }
        if (regLoad >= 0) {
            Scalars fields = Scalars.decode(data, regLoad, regLoadLength, 2, 0);
            if (fields == null) {
                return malformed();
            }
            int cursor = fields.has(1) ? (int) fields.value(1) : CURSOR_SRC;
            return new Instruction(REG_LOAD, level, nested, cursor, false, NO_PATH, (int) fields.value(2), false, false);
        }
        if (hasDel) {
            return new Instruction(DEL, level, nested, CURSOR_SRC, false, NO_PATH, 0, false, false);
        }
        if (merge >= 0) {
            Scalars fields = Scalars.decode(data, merge, mergeLength, 2, 0);
            if (fields == null) {
                return malformed();
            }
            return new Instruction(MERGE, level, nested, CURSOR_SRC, false, NO_PATH, 0,
                    fields.value(1) != 0, fields.value(2) != 0);
        }
        int op = hasSet ? SET : NONE;
        return new Instruction(op, level, nested, CURSOR_SRC, false, NO_PATH, 0, false, false);
    }

    private static Instruction decodeSelect(MemorySegment data, long offset, long length, int level,
                                            Instruction[] nested) {
        Scalars fields = Scalars.decode(data, offset, length, 3, 2);
        if (fields == null) {
            return malformed();
        }
        List<PathComponent> path = new ArrayList<>();
        WireReader reader = new WireReader().reset(data, offset, length);
        while (reader.next()) {
            if (reader.id() == 2) {
                if (!reader.isLengthDelimited()) {
                    return malformed();
                }
                Scalars component = Scalars.decode(data, reader.payloadOffset(), reader.payloadLength(), 7, 0);
                if (component == null) {
                    return malformed();
                }
                path.add(new PathComponent(component.has(1), (int) component.value(1), component.has(2),
                        (int) component.value(2), component.has(3), (int) component.value(3),
                        component.value(5) != 0, component.has(6), (int) component.value(6)));
            }
        }
        int cursor = fields.has(1) ? (int) fields.value(1) : CURSOR_SRC;
        return new Instruction(SELECT, level, nested, cursor, fields.value(3) != 0,
                path.toArray(PathComponent[]::new), 0, false, false);
    }

    /**
     * The last value of each scalar field 1..maxId of a message (0 when absent), where a
     * length-delimited occurrence of such a field is malformed, except {@code messageId}'s
     * (0: none), which the caller reads itself.
     */
    private record Scalars(long[] values, boolean[] present) {
        static Scalars decode(MemorySegment data, long offset, long length, int maxId, int messageId) {
            long[] values = new long[maxId + 1];
            boolean[] present = new boolean[maxId + 1];
            WireReader reader = new WireReader().reset(data, offset, length);
            while (reader.next()) {
                int id = reader.id();
                if (id > maxId) {
                    continue;
                }
                if (reader.isLengthDelimited()) {
                    if (id == messageId) {
                        continue;
                    }
                    return null;
                }
                values[id] = reader.value();
                present[id] = true;
            }
            return new Scalars(values, present);
        }

        boolean has(int id) {
            return present[id];
        }

        long value(int id) {
            return values[id];
        }
    }
}
