package dev.ffmtrace.heapprofd.service;

/**
 * What the CFI row at a pc says of its frame, as far as the x86-64 unwinder follows it:
 * the CFA is the value of {@code cfaRegister} (rsp or rbp, as DWARF numbers them) plus
 * {@code cfaOffset}; the return address is the word at CFA + {@code returnAddressOffset},
 * unless the row marks it undefined ({@code outermost}: the stack starts here); the
 * caller's rbp is as {@code rbpRule} says, with {@code rbpOffset} from the CFA. The
 * caller's rsp is the CFA.
 */
record CfaRule(int cfaRegister, long cfaOffset, boolean outermost, long returnAddressOffset, int rbpRule,
               long rbpOffset) {
    /** rbp is the callee's: not saved, or saved and restored by the time of the pc. */
    static final int RBP_SAME = 0;
    /** rbp cannot be recovered: the caller gets none (0). */
    static final int RBP_UNDEFINED = 1;
    /** rbp was saved at CFA + {@code rbpOffset}. */
    static final int RBP_SAVED = 2;
    /** rbp is CFA + {@code rbpOffset} itself. */
    static final int RBP_VALUE = 3;
}
