package dev.ffmtrace.memory.testing;

/**
 * A JVM program for heap profiler tests of JNI code: {@link #allocateThroughJni} calls the
 * native method {@code allocate} of the C library named by its argument
 * (native/src/heapprofd_jni.c, {@code libheapprofd_jni.so}), which mallocs in C, then
 * {@code release}, which frees; {@value #ALLOCATIONS} blocks of {@value #BLOCK} bytes,
 * enough for the JIT to compile the loop. Prints "done" last.
 */
public final class JniAllocatingMethod {
    public static final int ALLOCATIONS = 1_000_000;
    public static final long BLOCK = 96;

    private JniAllocatingMethod() {
    }

    private static native long allocate(long size);

    private static native void release(long address);

    static long allocateThroughJni() {
        long addresses = 0;
        for (int i = 0; i < ALLOCATIONS; i++) {
            long address = allocate(BLOCK);
            addresses += address;
            release(address);
        }
        return addresses;
    }

    public static void main(String[] args) {
        System.load(args[0]);
        System.out.println(allocateThroughJni() != 0 ? "done" : "no allocation");
    }
}
