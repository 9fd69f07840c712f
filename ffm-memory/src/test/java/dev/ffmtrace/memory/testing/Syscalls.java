package dev.ffmtrace.memory.testing;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Where a thread waits, as /proc tells: a test that needs a thread to be blocked in a
 * system call (an accept a close must wake, a send waiting for a peer that stopped reading, a
 * client sleeping for room) waits until /proc shows it there, instead of sleeping and
 * hoping it got there.
 */
public final class Syscalls {
    /** The system calls tests wait in, by number on x86-64 and AArch64. */
    public enum Call {
        ACCEPT4(288, 242),
        /** aarch64 has no poll: glibc's poll calls ppoll there. */
        POLL(7, 73),
        CLOCK_NANOSLEEP(230, 115);

        private final int x86;
        private final int arm;

        Call(int x86, int arm) {
            this.x86 = x86;
            this.arm = arm;
        }

        int number() {
            return System.getProperty("os.arch").equals("aarch64") ? arm : x86;
        }
    }

    private static final long DEADLINE_SECONDS = 60;

    private Syscalls() {
    }

    /**
     * Waits until thread {@code tid} of process {@code pid} (the process's main thread when
     * they are equal) sleeps in {@code call}; fails after a minute, naming where it was.
     */
    public static void awaitBlockedIn(long pid, long tid, Call call) {
        Path task = Path.of("/proc/" + pid + "/task/" + tid);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS);
        String where;
        while (!(where = read(task.resolve("syscall"))).startsWith(call.number() + " ") || !sleeping(task)) {
            assertTrue(System.nanoTime() < deadline, "thread " + tid + " of " + pid + " never slept in " + call
                    + " (system call " + call.number() + "): " + where.strip());
            Thread.onSpinWait();
        }
    }

    private static boolean sleeping(Path task) {
        String stat = read(task.resolve("stat"));
        int end = stat.lastIndexOf(')');
        return end >= 0 && end + 2 < stat.length() && stat.charAt(end + 2) == 'S';
    }

    private static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (NoSuchFileException e) {
            // The thread ended: it will never get there.
            throw new AssertionError("no such thread: " + file.getParent());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
