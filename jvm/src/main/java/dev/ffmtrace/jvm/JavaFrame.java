package dev.ffmtrace.jvm;

import java.util.ArrayList;
import java.util.List;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordedStackTrace;

/**
 * One frame of a Java stack as the profiles intern it: the method ({@code pkg.Class.method}),
 * how it ran (JFR's frame type: "Interpreted", "JIT compiled", "Inlined", "Native"; shown
 * as the frame's mapping), the bytecode index (the frame's {@code rel_pc}) and the line.
 */
record JavaFrame(String function, String type, int bytecodeIndex, int line) {
    /** The root frame added under a stack JFR cut at its depth limit. */
    static final JavaFrame TRUNCATED = new JavaFrame("[truncated]", "", 0, 0);

    static JavaFrame of(RecordedFrame frame) {
        String function = methodName(frame.getMethod());
        String type = frame.getType();
        return new JavaFrame(function, type == null ? "" : type, Math.max(0, frame.getBytecodeIndex()),
                Math.max(0, frame.getLineNumber()));
    }

    /** {@code pkg.Class.method}, or "[unknown]" for no method. */
    static String methodName(RecordedMethod method) {
        if (method == null) {
            return "[unknown]";
        }
        return (method.getType() == null ? "[unknown]" : method.getType().getName()) + "." + method.getName();
    }

    /** A frame standing for an allocated class: the leaf of an allocation's stack. */
    static JavaFrame allocated(String className) {
        return new JavaFrame(className, "Allocated", 0, 0);
    }

    /** The mapping this frame is shown in: its frame type, bracketed as Perfetto names anonymous mappings. */
    String mapping() {
        return type.isEmpty() ? "[java]" : "[java " + type + "]";
    }

    /**
     * The frames of {@code stack} root first, as Perfetto's callstacks list them (JFR lists
     * the top first), under a {@link #TRUNCATED} root when JFR cut the stack.
     */
    static List<JavaFrame> rootFirst(RecordedStackTrace stack) {
        List<RecordedFrame> frames = stack.getFrames();
        List<JavaFrame> result = new ArrayList<>(frames.size() + 2);
        if (stack.isTruncated()) {
            result.add(TRUNCATED);
        }
        for (int i = frames.size() - 1; i >= 0; i--) {
            result.add(of(frames.get(i)));
        }
        return result;
    }
}
