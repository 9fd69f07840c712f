package dev.ffmtrace.memory.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Starts the second process of a cross-process test: a C program or another JVM, and waits for it. */
public final class Peers {
    private static final String NATIVE_MODULE = "dev.ffmtrace.memory";

    private Peers() {
    }

    private static CompletableFuture<String> drain(InputStream stream) {
        return CompletableFuture.supplyAsync(() -> {
            try (stream) {
                return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }, Executors.newVirtualThreadPerTaskExecutor());
    }

    /** A running peer; its output is drained while it runs, so a chatty peer never blocks on a full pipe. */
    public record Peer(Process process, CompletableFuture<String> out, CompletableFuture<String> err) {
        /** Waits for the peer and returns its standard output; fails if it exited non-zero or hung. */
        public String awaitSuccess() {
            try {
                if (!process.waitFor(60, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                    throw new AssertionError("peer did not finish within 60 s");
                }
                String stdout = out.get(10, TimeUnit.SECONDS);
                if (process.exitValue() != 0) {
                    throw new AssertionError("peer exited " + process.exitValue() + "\nstdout: " + stdout
                            + "\nstderr: " + err.get(10, TimeUnit.SECONDS));
                }
                return stdout;
            } catch (ExecutionException | TimeoutException e) {
                throw new AssertionError("cannot read the peer's output", e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted", e);
            }
        }
    }

    public static Peer startNative(Path program, String... args) {
        List<String> command = new ArrayList<>();
        command.add(program.toString());
        command.addAll(List.of(args));
        return start(command);
    }

    /**
     * Runs {@code mainClass} in a second JVM laid out as this one: the same module path and
     * class path, and, for a test class patched into a named module (as Surefire runs
     * tests), the same patch, so the peer sees the module's internals as the test does.
     * Native access goes to {@code dev.ffmtrace.memory} only, as in production.
     */
    public static Peer startJvm(Class<?> mainClass, String... args) {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElse(
                Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        command.add("--enable-native-access=" + NATIVE_MODULE);
        String modulePath = System.getProperty("jdk.module.path");
        if (modulePath != null) {
            command.add("--module-path");
            command.add(modulePath);
            command.add("--add-modules");
            command.add("ALL-MODULE-PATH");
        }
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        Module module = mainClass.getModule();
        if (module.isNamed()) {
            String name = module.getName();
            command.add("--patch-module");
            command.add(name + "=" + codeLocation(mainClass));
            command.add("--add-reads");
            command.add(name + "=ALL-UNNAMED");
            command.add("-m");
            command.add(name + "/" + mainClass.getName());
        } else {
            command.add(mainClass.getName());
        }
        command.addAll(List.of(args));
        return start(command);
    }

    private static String codeLocation(Class<?> type) {
        try {
            return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
        } catch (URISyntaxException e) {
            throw new AssertionError("cannot locate the classes of " + type, e);
        }
    }

    private static Peer start(List<String> command) {
        try {
            Process process = new ProcessBuilder(command).start();
            return new Peer(process, drain(process.getInputStream()), drain(process.getErrorStream()));
        } catch (IOException e) {
            throw new AssertionError("cannot start " + command, e);
        }
    }
}
