package dev.ffmtrace.memory.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Builds the C programs that tests run as the other process, with the machine's gcc,
 * into the module's {@code target/native}. A program is rebuilt only when a source is
 * newer than the binary. The repository's {@code native/} directory (C code shared by
 * every module's programs, e.g. {@code unix_peer.c}) is on the include path; name its
 * sources as {@code ../native/<file>.c}.
 */
public final class CPrograms {
    private CPrograms() {
    }

    /**
     * Compiles {@code sources} (paths relative to the module directory, the current
     * directory of a Maven test run) into {@code target/native/<name>}.
     */
    public static Path build(String name, String... sources) {
        try {
            Path output = Path.of("target", "native", name).toAbsolutePath();
            Files.createDirectories(output.getParent());
            if (upToDate(output, sources)) {
                return output;
            }
            List<String> command = new ArrayList<>(List.of("gcc", "-std=gnu11", "-O2", "-g",
                    "-Wall", "-Wextra", "-Werror", "-I" + Path.of("..", "native", "include").toAbsolutePath().normalize(),
                    "-o", output.toString()));
            for (String source : sources) {
                command.add(Path.of(source).toAbsolutePath().toString());
            }
            Process gcc = new ProcessBuilder(command).redirectErrorStream(true).start();
            String log = new String(gcc.getInputStream().readAllBytes());
            if (gcc.waitFor() != 0) {
                throw new IllegalStateException("gcc failed for " + name + ":\n" + log);
            }
            return output;
        } catch (IOException e) {
            throw new IllegalStateException("cannot run gcc to build " + name + " (is gcc installed?)", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while building " + name, e);
        }
    }

    private static boolean upToDate(Path output, String[] sources) throws IOException {
        if (!Files.exists(output)) {
            return false;
        }
        var built = Files.getLastModifiedTime(output);
        for (String source : sources) {
            if (Files.getLastModifiedTime(Path.of(source)).compareTo(built) > 0) {
                return false;
            }
        }
        return true;
    }
}
