package dev.ffmtrace.protovm;

import java.util.ArrayList;
import java.util.List;

/**
 * Why the last patch aborted: the failure first, then the context each caller added on the
 * way out (which instruction, which select, which field), as Perfetto's abort stack reads.
 * Built only on the abort path, so an OK patch writes nothing here.
 */
final class AbortTrace {
    private final List<String> lines = new ArrayList<>();

    void clear() {
        lines.clear();
    }

    /** Records the failure and returns {@link Status#CODE_ABORT}. */
    int abort(String reason) {
        lines.clear();
        lines.add(reason);
        return Status.CODE_ABORT;
    }

    /** Adds {@code context} if {@code status} is an abort on its way out; returns {@code status}. */
    int context(int status, String context) {
        if (status == Status.CODE_ABORT) {
            lines.add(context);
        }
        return status;
    }

    List<String> lines() {
        return List.copyOf(lines);
    }
}
