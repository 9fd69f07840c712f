package dev.ffmtrace.heapprofd.service;

import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;

/**
 * The JVM that {@link JvmUnderPreloadTest} profiles, run on the class path of a plain JVM:
 * {@value #THREADS} threads, each allocating {@value #BLOCKS} blocks of native memory
 * through an FFM arena ({@code Unsafe.allocateMemory}, then libjvm's {@code os::malloc}),
 * thread {@code i}'s of {@link #blockSize blockSize(i)} bytes; all hold theirs until every
 * thread has allocated, then free them by closing their arenas. Prints "done" last.
 */
public final class NativeAllocatingThreads {
    static final int THREADS = 20;
    static final int BLOCKS = 50;

    /** At least 4,096 bytes: sampled with their own sizes at interval 4,096 too, so the bytes are exact. */
    static long blockSize(int thread) {
        return 8_192 + 8L * thread;
    }

    /** Every block's bytes, of all threads. */
    static long totalBytes() {
        long total = 0;
        for (int thread = 0; thread < THREADS; thread++) {
            total += BLOCKS * blockSize(thread);
        }
        return total;
    }

    private NativeAllocatingThreads() {
    }

    public static void main(String[] args) throws Exception {
        CyclicBarrier allAllocated = new CyclicBarrier(THREADS);
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < THREADS; i++) {
            int thread = i;
            // A thread that fails fails the program: "done" is printed only when every one finished.
            threads.add(Thread.ofPlatform().name("allocator-" + i).uncaughtExceptionHandler((t, e) -> {
                e.printStackTrace();
                Runtime.getRuntime().halt(1);
            }).start(() -> {
                try (Arena arena = Arena.ofConfined()) {
                    for (int block = 0; block < BLOCKS; block++) {
                        arena.allocate(blockSize(thread)).set(ValueLayout.JAVA_BYTE, 0, (byte) block);
                    }
                    allAllocated.await();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }));
        }
        for (Thread thread : threads) {
            thread.join();
        }
        System.out.println("done");
    }
}
