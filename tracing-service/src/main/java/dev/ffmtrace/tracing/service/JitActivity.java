package dev.ffmtrace.tracing.service;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;

/**
 * How long this JVM's JIT compilers have compiled so far, where the JVM tells: the clock
 * {@link CommitPathWarmUp} reads to see whether its traffic still makes the JIT work.
 */
final class JitActivity {
    /** What {@link #compiledMillis()} returns when the JVM does not tell (no JIT, or no monitoring). */
    static final long UNKNOWN = -1;

    private JitActivity() {
    }

    /** Milliseconds all compiler threads have spent compiling since the JVM started, or {@link #UNKNOWN}. */
    static long compiledMillis() {
        CompilationMXBean compilation = ManagementFactory.getCompilationMXBean();
        if (compilation == null || !compilation.isCompilationTimeMonitoringSupported()) {
            return UNKNOWN;
        }
        return compilation.getTotalCompilationTime();
    }
}
