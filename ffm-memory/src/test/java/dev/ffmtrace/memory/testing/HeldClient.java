package dev.ffmtrace.memory.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A client program that makes its calls, prints {@code held} and stays connected until
 * its standard input ends ({@code perfetto_ipc_tool call}): an attacker that is still
 * there while the test checks that others are served. Run as this user or, through
 * {@link OtherUser}, as another.
 */
public final class HeldClient implements AutoCloseable {
    /** A hang detector, not a timing. */
    private static final long TIMEOUT_SECONDS = 60;

    private final Process process;
    private final BufferedReader out;
    private final CompletableFuture<String> err;
    private final List<String> lines = new ArrayList<>();

    private HeldClient(Process process) {
        this.process = process;
        this.out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        this.err = CompletableFuture.supplyAsync(() -> {
            try {
                return new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }, Thread::startVirtualThread);
    }

    /** Starts {@code command}, as uid {@link OtherUser#UID} if {@code asOtherUser}. */
    public static HeldClient start(boolean asOtherUser, List<String> command) {
        return start(asOtherUser ? OtherUser.UID : -1, command);
    }

    /** Starts {@code command}, as {@code uid} through {@link OtherUser} unless it is -1. */
    public static HeldClient start(int uid, List<String> command) {
        try {
            return new HeldClient(new ProcessBuilder(uid == -1 ? command : OtherUser.command(uid, command)).start());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The lines the client printed before {@code held}: its replies. Fails if it ended
     * first (with what it printed) or did not get there within the hang detector's time.
     */
    public List<String> awaitHeld() {
        return awaitLine("held");
    }

    /** The lines printed since the last marker awaited, up to {@code marker}; fails as {@link #awaitHeld()}. */
    public List<String> awaitLine(String marker) {
        CompletableFuture<List<String>> held = CompletableFuture.supplyAsync(() -> {
            try {
                lines.clear();
                for (String line; (line = out.readLine()) != null; ) {
                    if (line.equals(marker)) {
                        return List.copyOf(lines);
                    }
                    lines.add(line);
                }
                return null;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }, Thread::startVirtualThread);
        try {
            List<String> replies = held.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
            if (replies == null) {
                throw new AssertionError("the client ended before \"" + marker + "\" (exit " + process.waitFor()
                        + "): " + lines + " " + err.join());
            }
            return replies;
        } catch (TimeoutException e) {
            process.destroyForcibly();
            throw new AssertionError("the client did not print \"" + marker + "\" within " + TIMEOUT_SECONDS
                    + " s: " + lines, e);
        } catch (ExecutionException e) {
            throw new AssertionError("cannot read the client's output", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /** Lets a client {@code paused} go on. */
    public void resume() {
        try {
            process.getOutputStream().write('\n');
            process.getOutputStream().flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Lets the client go (its standard input ends) and waits for it to exit. */
    @Override
    public void close() {
        try {
            process.getOutputStream().close();
            if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (IOException e) {
            process.destroyForcibly();
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
