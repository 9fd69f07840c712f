package dev.ffmtrace.heapprofd.service;

/**
 * Call frame information that cannot be used: malformed, out of bounds, or of a kind the
 * unwinder does not follow (a DWARF expression, an indirect pointer). Checked, so that
 * every reader of a file's untrusted CFI says where it becomes "no CFI for this pc"; it
 * carries no stack trace, as it is an answer, not a bug.
 */
final class CfiRefusal extends Exception {
    CfiRefusal(String reason) {
        super(reason, null, false, false);
    }
}
