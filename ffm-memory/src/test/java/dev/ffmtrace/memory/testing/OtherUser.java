package dev.ffmtrace.memory.testing;

import dev.ffmtrace.memory.Os;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A program run as another local user, the attacker of the cross-user tests: uid and gid
 * 65534 ({@code nobody}), no supplementary groups, through {@code setpriv}, which needs
 * root. Tests that need it skip, saying {@link #unavailableReason()}, where it cannot run.
 */
public final class OtherUser {
    /** nobody's uid and gid. */
    public static final int UID = 65534;
    /** A hang detector, not a timing: the programs answer or fail at once. */
    private static final long TIMEOUT_SECONDS = 60;

    private OtherUser() {
    }

    /** What a program printed on standard output, and its exit status. */
    public record Run(int exit, String out, String err) {
        public List<String> lines() {
            return out.lines().toList();
        }
    }

    /** Why programs cannot run as another user here, or null if they can. */
    public static String unavailableReason() {
        if (Os.uid() != 0) {
            return "switching to uid " + UID + " needs root; the tests run as uid " + Os.uid();
        }
        if (!Files.isExecutable(Path.of("/usr/bin/setpriv")) && !Files.isExecutable(Path.of("/bin/setpriv"))) {
            return "setpriv (util-linux) is not installed";
        }
        return null;
    }

    /**
     * Lets other users reach files in {@code dir} (mode 0711: through, not listing), as a
     * socket another user connects to needs; a JUnit temporary directory is 0700.
     */
    public static void openForTraversal(Path dir) {
        try {
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static CompletableFuture<String> drain(InputStream stream) {
        return CompletableFuture.supplyAsync(() -> {
            try (stream) {
                return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }, Thread::startVirtualThread);
    }

    /** {@code command} prefixed to run as uid {@link #UID}. */
    public static List<String> command(List<String> command) {
        return command(UID, command);
    }

    /** {@code command} prefixed to run as {@code uid} (and gid {@code uid}), which need not have a name. */
    public static List<String> command(int uid, List<String> command) {
        List<String> full = new ArrayList<>(List.of("setpriv", "--reuid=" + uid, "--regid=" + uid,
                "--clear-groups", "--"));
        full.addAll(command);
        return full;
    }

    /** Runs {@code command} as uid {@link #UID} and waits for it. */
    public static Run run(List<String> command) {
        List<String> full = command(command);
        try {
            Process process = new ProcessBuilder(full).redirectInput(ProcessBuilder.Redirect.PIPE).start();
            process.getOutputStream().close();
            CompletableFuture<String> out = drain(process.getInputStream());
            CompletableFuture<String> err = drain(process.getErrorStream());
            if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError(String.join(" ", full) + " did not end within " + TIMEOUT_SECONDS + " s");
            }
            return new Run(process.exitValue(), out.join(), err.join());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }
}
