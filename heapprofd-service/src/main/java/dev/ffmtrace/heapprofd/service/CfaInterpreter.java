package dev.ffmtrace.heapprofd.service;

/**
 * Runs the CFA instructions of a CIE and an FDE (DWARF 5 §6.4.2, as .eh_frame uses them)
 * up to a pc, to the {@link CfaRule} of the row there, for x86-64: only the CFA, rbp and
 * the return address are tracked, as they are all the unwinder recovers; every other
 * register's rule is read and dropped. A CFA or a tracked register given by a DWARF
 * expression (PLT stubs, signal frames) is refused, as is a register rule the unwinder
 * cannot apply, so the frame falls back to its frame pointer. The instructions are the
 * file's: at most {@value #MAX_INSTRUCTIONS} run per pc and {@value #MAX_REMEMBERED_STATES}
 * states are remembered, every operand is read through a bounded {@link DwarfCursor}.
 */
final class CfaInterpreter {
    static final int DWARF_RBP = 6;
    static final int DWARF_RSP = 7;
    /** x86-64's return address column. */
    static final int DWARF_RETURN_ADDRESS = 16;
    /** Far more than gcc or clang emit for one function. */
    static final int MAX_INSTRUCTIONS = 4096;
    static final int MAX_REMEMBERED_STATES = 16;

    // The opcodes in the high two bits, their operand in the low six.
    private static final int DW_CFA_ADVANCE_LOC = 0x40;
    private static final int DW_CFA_OFFSET = 0x80;
    private static final int DW_CFA_RESTORE = 0xc0;
    private static final int HIGH_OPCODE_MASK = 0xc0;
    private static final int LOW_OPERAND_MASK = 0x3f;
    private static final int DW_CFA_NOP = 0x00;
    private static final int DW_CFA_SET_LOC = 0x01;
    private static final int DW_CFA_ADVANCE_LOC1 = 0x02;
    private static final int DW_CFA_ADVANCE_LOC2 = 0x03;
    private static final int DW_CFA_ADVANCE_LOC4 = 0x04;
    private static final int DW_CFA_OFFSET_EXTENDED = 0x05;
    private static final int DW_CFA_RESTORE_EXTENDED = 0x06;
    private static final int DW_CFA_UNDEFINED = 0x07;
    private static final int DW_CFA_SAME_VALUE = 0x08;
    private static final int DW_CFA_REGISTER = 0x09;
    private static final int DW_CFA_REMEMBER_STATE = 0x0a;
    private static final int DW_CFA_RESTORE_STATE = 0x0b;
    private static final int DW_CFA_DEF_CFA = 0x0c;
    private static final int DW_CFA_DEF_CFA_REGISTER = 0x0d;
    private static final int DW_CFA_DEF_CFA_OFFSET = 0x0e;
    private static final int DW_CFA_DEF_CFA_EXPRESSION = 0x0f;
    private static final int DW_CFA_EXPRESSION = 0x10;
    private static final int DW_CFA_OFFSET_EXTENDED_SF = 0x11;
    private static final int DW_CFA_DEF_CFA_SF = 0x12;
    private static final int DW_CFA_DEF_CFA_OFFSET_SF = 0x13;
    private static final int DW_CFA_VAL_OFFSET = 0x14;
    private static final int DW_CFA_VAL_OFFSET_SF = 0x15;
    private static final int DW_CFA_VAL_EXPRESSION = 0x16;
    private static final int DW_CFA_GNU_ARGS_SIZE = 0x2e;
    private static final int DW_CFA_GNU_NEGATIVE_OFFSET_EXTENDED = 0x2f;

    // A register's rule (DWARF 5 §6.4.1); unspecified is the start of every register.
    private static final int UNSPECIFIED = 0;
    private static final int UNDEFINED = 1;
    private static final int SAME_VALUE = 2;
    private static final int OFFSET = 3;
    private static final int VAL_OFFSET = 4;
    private static final int REGISTER = 5;
    private static final int EXPRESSION = 6;

    /** The rules of one row, of what is tracked. */
    private static final class Row {
        int cfaRegister;
        long cfaOffset;
        boolean cfaExpression;
        int rbpRule;
        long rbpOperand;
        int returnAddressRule;
        long returnAddressOperand;

        void set(Row other) {
            cfaRegister = other.cfaRegister;
            cfaOffset = other.cfaOffset;
            cfaExpression = other.cfaExpression;
            rbpRule = other.rbpRule;
            rbpOperand = other.rbpOperand;
            returnAddressRule = other.returnAddressRule;
            returnAddressOperand = other.returnAddressOperand;
        }
    }

    private final long codeAlignment;
    private final long dataAlignment;
    private final int pointerEncoding;
    private final long target;
    private final Row row = new Row();
    /** The row the CIE's initial instructions leave, which DW_CFA_restore returns to; null while they run. */
    private Row initial;
    private final Row[] remembered = new Row[MAX_REMEMBERED_STATES];
    private int rememberedCount;
    private long location;
    private boolean reachedTarget;
    private int executed;

    private CfaInterpreter(long codeAlignment, long dataAlignment, int pointerEncoding, long start, long target) {
        this.codeAlignment = codeAlignment;
        this.dataAlignment = dataAlignment;
        this.pointerEncoding = pointerEncoding;
        this.location = start;
        this.target = target;
    }

    /**
     * The rule at {@code pc} of the function that starts at {@code start}: the CIE's initial
     * instructions are {@code cursor}'s range {@code [cieFrom, cieTo)}, the FDE's
     * {@code [fdeFrom, fdeTo)}.
     *
     * @param pointerEncoding the FDE's pointer encoding, for DW_CFA_set_loc
     */
    static CfaRule ruleAt(DwarfCursor cursor, long codeAlignment, long dataAlignment, int pointerEncoding,
                          int cieFrom, int cieTo, int fdeFrom, int fdeTo, long start, long pc) throws CfiRefusal {
        CfaInterpreter interpreter = new CfaInterpreter(codeAlignment, dataAlignment, pointerEncoding, start, pc);
        interpreter.execute(cursor.range(cieFrom, cieTo));
        interpreter.initial = new Row();
        interpreter.initial.set(interpreter.row);
        interpreter.execute(cursor.range(fdeFrom, fdeTo));
        return interpreter.rule();
    }

    private void execute(DwarfCursor cursor) throws CfiRefusal {
        while (!reachedTarget && cursor.hasRemaining()) {
            if (++executed > MAX_INSTRUCTIONS) {
                throw new CfiRefusal("more than " + MAX_INSTRUCTIONS + " instructions");
            }
            int opcode = cursor.u8();
            int operand = opcode & LOW_OPERAND_MASK;
            switch (opcode & HIGH_OPCODE_MASK) {
                case DW_CFA_ADVANCE_LOC -> advance(operand);
                case DW_CFA_OFFSET -> setRule(operand, OFFSET, cursor.uleb128() * dataAlignment);
                case DW_CFA_RESTORE -> restore(operand);
                default -> extended(opcode, cursor);
            }
        }
    }

    private void extended(int opcode, DwarfCursor cursor) throws CfiRefusal {
        switch (opcode) {
            case DW_CFA_NOP -> {
            }
            case DW_CFA_SET_LOC -> moveTo(cursor.pointer(pointerEncoding, DwarfCursor.NO_DATA_BASE));
            case DW_CFA_ADVANCE_LOC1 -> advance(cursor.u8());
            case DW_CFA_ADVANCE_LOC2 -> advance(cursor.u16());
            case DW_CFA_ADVANCE_LOC4 -> advance(cursor.u32());
            case DW_CFA_OFFSET_EXTENDED -> setRule(cursor.ulebInt(), OFFSET, cursor.uleb128() * dataAlignment);
            case DW_CFA_RESTORE_EXTENDED -> restore(cursor.ulebInt());
            case DW_CFA_UNDEFINED -> setRule(cursor.ulebInt(), UNDEFINED, 0);
            case DW_CFA_SAME_VALUE -> setRule(cursor.ulebInt(), SAME_VALUE, 0);
            case DW_CFA_REGISTER -> setRule(cursor.ulebInt(), REGISTER, cursor.ulebInt());
            case DW_CFA_REMEMBER_STATE -> remember();
            case DW_CFA_RESTORE_STATE -> {
                if (rememberedCount == 0) {
                    throw new CfiRefusal("DW_CFA_restore_state without a remembered state");
                }
                // The CFA and the registers come back; the location does not.
                row.set(remembered[--rememberedCount]);
            }
            case DW_CFA_DEF_CFA -> defineCfa(cursor.ulebInt(), cursor.uleb128());
            case DW_CFA_DEF_CFA_SF -> defineCfa(cursor.ulebInt(), cursor.sleb128() * dataAlignment);
            case DW_CFA_DEF_CFA_REGISTER -> {
                requireRegisterCfa();
                row.cfaRegister = cursor.ulebInt();
            }
            case DW_CFA_DEF_CFA_OFFSET -> {
                requireRegisterCfa();
                row.cfaOffset = cursor.uleb128();
            }
            case DW_CFA_DEF_CFA_OFFSET_SF -> {
                requireRegisterCfa();
                row.cfaOffset = cursor.sleb128() * dataAlignment;
            }
            case DW_CFA_DEF_CFA_EXPRESSION -> {
                cursor.skip(cursor.uleb128());
                row.cfaExpression = true;
            }
            case DW_CFA_EXPRESSION, DW_CFA_VAL_EXPRESSION -> {
                int register = cursor.ulebInt();
                cursor.skip(cursor.uleb128());
                setRule(register, EXPRESSION, 0);
            }
            case DW_CFA_OFFSET_EXTENDED_SF -> setRule(cursor.ulebInt(), OFFSET, cursor.sleb128() * dataAlignment);
            case DW_CFA_VAL_OFFSET -> setRule(cursor.ulebInt(), VAL_OFFSET, cursor.uleb128() * dataAlignment);
            case DW_CFA_VAL_OFFSET_SF -> setRule(cursor.ulebInt(), VAL_OFFSET, cursor.sleb128() * dataAlignment);
            // The bytes of arguments pushed: only an exception's landing pad needs them.
            case DW_CFA_GNU_ARGS_SIZE -> cursor.uleb128();
            case DW_CFA_GNU_NEGATIVE_OFFSET_EXTENDED ->
                    setRule(cursor.ulebInt(), OFFSET, -(cursor.uleb128() * dataAlignment));
            default -> throw new CfiRefusal("CFA opcode 0x" + Integer.toHexString(opcode));
        }
    }

    private void advance(long delta) {
        moveTo(location + delta * codeAlignment);
    }

    /** The row changes at {@code next}: past the target, the row is the target's. */
    private void moveTo(long next) {
        if (Long.compareUnsigned(next, target) > 0) {
            reachedTarget = true;
        } else {
            location = next;
        }
    }

    private void defineCfa(int register, long offset) {
        row.cfaRegister = register;
        row.cfaOffset = offset;
        row.cfaExpression = false;
    }

    /** DW_CFA_def_cfa_register and _offset change a register and offset rule, and have no meaning after an expression. */
    private void requireRegisterCfa() throws CfiRefusal {
        if (row.cfaExpression) {
            throw new CfiRefusal("CFA register or offset changed after an expression");
        }
    }

    private void setRule(int register, int rule, long operand) {
        if (register == DWARF_RBP) {
            row.rbpRule = rule;
            row.rbpOperand = operand;
        } else if (register == DWARF_RETURN_ADDRESS) {
            row.returnAddressRule = rule;
            row.returnAddressOperand = operand;
        }
    }

    private void restore(int register) {
        Row from = initial != null ? initial : new Row();
        if (register == DWARF_RBP) {
            row.rbpRule = from.rbpRule;
            row.rbpOperand = from.rbpOperand;
        } else if (register == DWARF_RETURN_ADDRESS) {
            row.returnAddressRule = from.returnAddressRule;
            row.returnAddressOperand = from.returnAddressOperand;
        }
    }

    private void remember() throws CfiRefusal {
        if (rememberedCount == MAX_REMEMBERED_STATES) {
            throw new CfiRefusal("more than " + MAX_REMEMBERED_STATES + " remembered states");
        }
        if (remembered[rememberedCount] == null) {
            remembered[rememberedCount] = new Row();
        }
        remembered[rememberedCount++].set(row);
    }

    private CfaRule rule() throws CfiRefusal {
        if (row.cfaExpression) {
            throw new CfiRefusal("CFA by a DWARF expression");
        }
        if (row.cfaRegister != DWARF_RSP && row.cfaRegister != DWARF_RBP) {
            throw new CfiRefusal("CFA from register " + row.cfaRegister + ", which the unwinder does not recover");
        }
        boolean outermost = switch (row.returnAddressRule) {
            case UNDEFINED -> true;
            case OFFSET -> false;
            default -> throw new CfiRefusal("return address rule " + row.returnAddressRule);
        };
        int rbpRule = switch (row.rbpRule) {
            case UNSPECIFIED, SAME_VALUE -> CfaRule.RBP_SAME;
            case UNDEFINED -> CfaRule.RBP_UNDEFINED;
            case OFFSET -> CfaRule.RBP_SAVED;
            case VAL_OFFSET -> CfaRule.RBP_VALUE;
            case REGISTER -> {
                if (row.rbpOperand != DWARF_RBP) {
                    throw new CfiRefusal("rbp in register " + row.rbpOperand);
                }
                yield CfaRule.RBP_SAME;
            }
            default -> throw new CfiRefusal("rbp by a DWARF expression");
        };
        return new CfaRule(row.cfaRegister, row.cfaOffset, outermost, outermost ? 0 : row.returnAddressOperand,
                rbpRule, rbpRule == CfaRule.RBP_SAVED || rbpRule == CfaRule.RBP_VALUE ? row.rbpOperand : 0);
    }
}
