package dev.ffmtrace.memory.testing;

import java.lang.foreign.Arena;

/**
 * A JVM program for heap profiler tests that name JIT-compiled frames: one method,
 * {@link #allocateNative}, makes {@value #ALLOCATIONS} FFM allocations of {@value #BLOCK}
 * bytes, each in an arena of its own, closed at once (libc's malloc and free of 64 bytes,
 * through {@code Unsafe.allocateMemory} and libjvm's {@code os::malloc}); enough for the
 * JIT to compile the method's loop. Prints "done" last.
 */
public final class NativeAllocatingMethod {
    public static final int ALLOCATIONS = 1_000_000;
    public static final long BLOCK = 64;

    private NativeAllocatingMethod() {
    }

    static long allocateNative() {
        long addresses = 0;
        for (int i = 0; i < ALLOCATIONS; i++) {
            try (Arena arena = Arena.ofConfined()) {
                addresses += arena.allocate(BLOCK).address();
            }
        }
        return addresses;
    }

    public static void main(String[] args) {
        System.out.println(allocateNative() != 0 ? "done" : "no allocation");
    }
}
