package dev.ffmtrace.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.testing.Await;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Os's questions about processes: exited (zombies included) and the PID namespace. */
class OsTest {
    @Test
    void aRunningProcessHasNotExitedAndAReapedOneHas() throws Exception {
        assertFalse(Os.processExited(Os.pid()));
        Process child = new ProcessBuilder("sleep", "60").start();
        try {
            assertFalse(Os.processExited((int) child.pid()));
        } finally {
            child.destroyForcibly();
        }
        assertTrue(child.waitFor(10, TimeUnit.SECONDS));
        assertTrue(Os.processExited((int) child.pid()), "the JDK has reaped it: no such process");
    }

    @Test
    void aZombieHasExitedThoughKillStillFindsIt() throws Exception {
        // A background child that waits for a line on the parent's stdin (an asynchronous list's
        // own stdin is /dev/null, hence fd 3); the parent then becomes `sleep`, which never reaps.
        Process parent = new ProcessBuilder("sh", "-c", "exec 3<&0; sh -c 'read line' <&3 & echo $!; exec sleep 60")
                .start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(parent.getInputStream(), StandardCharsets.UTF_8));
            int zombie = Integer.parseInt(out.readLine().trim());
            // The child exits only once its parent is `sleep`: sh, had it still been sh, might have reaped it.
            Await.until(() -> comm((int) parent.pid()).equals("sleep"));
            parent.getOutputStream().write('\n');
            parent.getOutputStream().flush();
            Await.until(() -> state(zombie).equals("Z"));
            assertTrue(Os.processExists(zombie), "kill(pid, 0) still succeeds on a zombie");
            assertTrue(Os.processExited(zombie));
        } finally {
            parent.destroyForcibly();
            parent.waitFor(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aThreadIdOtherThanTheMainThreadsIsNoProcessThatExited() throws Exception {
        CountDownLatch done = new CountDownLatch(1);
        CompletableFuture<Integer> tid = new CompletableFuture<>();
        Thread thread = Thread.ofPlatform().start(() -> {
            tid.complete(Os.tid());
            try {
                done.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        try {
            assertFalse(Os.processExited(tid.get(10, TimeUnit.SECONDS)));
        } finally {
            done.countDown();
            thread.join();
        }
        assertFalse(Os.processExited(0));
        assertFalse(Os.processExited(-1));
    }

    @Test
    void thePidNamespaceIdIsTheInodeOfProcSelfNsPid() throws IOException {
        long inode = (Long) Files.getAttribute(Path.of("/proc/self/ns/pid"), "unix:ino");
        assertEquals(inode, Os.pidNamespaceId());
    }

    private static String comm(int pid) throws IOException {
        return Files.readAllLines(Path.of("/proc/" + pid + "/comm")).getFirst();
    }

    /** The state letter of /proc/PID/stat (after the command name, which may hold spaces and parentheses). */
    private static String state(int pid) throws IOException {
        // Lines, not readString: a JDK read of a /proc file by its size can stop short.
        String stat = Files.readAllLines(Path.of("/proc/" + pid + "/stat")).getFirst();
        return stat.substring(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    }
}
