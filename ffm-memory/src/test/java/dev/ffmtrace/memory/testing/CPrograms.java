package dev.ffmtrace.memory.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.stream.Stream;

/**
 * The C programs that tests run as the other process, from the repository's one C build:
 * {@code native/Makefile} compiles every program of {@code native/src} into
 * {@code native/target/bin}, and the Maven build runs it (module {@code ffmtrace-native})
 * before any module that depends on it. A program that is missing or older than a C
 * source (a test run from an IDE, a source edited since) is made here with
 * {@code make -C <repository>/native <name>}.
 */
public final class CPrograms {
    /**
     * The status a program of {@link #sanitized} ends with when a sanitizer finds a bug
     * ({@code native/src/sanitizer_options.c}); none of the programs exits with it itself.
     */
    public static final int SANITIZER_FINDING = 66;

    private CPrograms() {
    }

    /**
     * The path of program {@code name} (a target of {@code native/Makefile}, e.g.
     * {@code "smb_tool"}), made first if it is missing or out of date.
     */
    public static Path program(String name) {
        return built(Path.of("bin", name), name);
    }

    /**
     * The path of program {@code name} built with AddressSanitizer and
     * UndefinedBehaviorSanitizer ({@code make -C native asan/<name>}, into
     * {@code native/target/asan/bin}), made first if it is missing or out of date. A
     * finding ends it with {@link #SANITIZER_FINDING}, its report on its standard error.
     */
    public static Path sanitized(String name) {
        return built(Path.of("asan", "bin", name), "asan/" + name);
    }

    /**
     * The path of program {@code name} built with ThreadSanitizer ({@code make -C native
     * tsan/<name>}, into {@code native/target/tsan/bin}), made first if it is missing or out
     * of date. A data race ends it with {@link #SANITIZER_FINDING}.
     */
    public static Path threadSanitized(String name) {
        return built(Path.of("tsan", "bin", name), "tsan/" + name);
    }

    /** {@code native/target/<binary>}, made with {@code make -C native <target>} if out of date. */
    private static Path built(Path relative, String target) {
        Path nativeDir = nativeDir();
        Path binary = nativeDir.resolve("target").resolve(relative);
        if (!upToDate(binary, nativeDir)) {
            make(nativeDir, target);
        }
        if (!Files.isExecutable(binary)) {
            throw new IllegalStateException("make -C " + nativeDir + " " + target + " made no " + binary);
        }
        return binary;
    }

    /** {@code native/} of the repository that holds the current directory (a module's, in a Maven test run). */
    private static Path nativeDir() {
        Path start = Path.of("").toAbsolutePath();
        for (Path dir = start; dir != null; dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve("native").resolve("Makefile"))) {
                return dir.resolve("native");
            }
        }
        throw new IllegalStateException("no native/Makefile in " + start + " or any directory above it");
    }

    private static boolean upToDate(Path binary, Path nativeDir) {
        if (!Files.isExecutable(binary)) {
            return false;
        }
        try (Stream<Path> sources = Stream.of(nativeDir.resolve("src"), nativeDir.resolve("include"))
                .flatMap(CPrograms::files)) {
            FileTime built = Files.getLastModifiedTime(binary);
            return Stream.concat(sources, Stream.of(nativeDir.resolve("Makefile")))
                    .noneMatch(source -> modified(source).compareTo(built) > 0);
        } catch (IOException | UncheckedIOException e) {
            return false;
        }
    }

    private static Stream<Path> files(Path dir) {
        try {
            return Files.list(dir).filter(Files::isRegularFile);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static FileTime modified(Path file) {
        try {
            return Files.getLastModifiedTime(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void make(Path nativeDir, String target) {
        // Test JVMs of several modules run at once and may make the same program: one make at
        // a time (flock on the Makefile), or one's link replaces the file while another checks it.
        List<String> command = List.of("flock", nativeDir.resolve("Makefile").toString(),
                "make", "-C", nativeDir.toString(), target);
        String commandLine = String.join(" ", command);
        try {
            Process make = new ProcessBuilder(command).redirectErrorStream(true).start();
            String log = new String(make.getInputStream().readAllBytes());
            if (make.waitFor() != 0) {
                throw new IllegalStateException(commandLine + " failed (exit " + make.exitValue() + "):\n" + log);
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + commandLine + " (are make and gcc installed?)", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running " + commandLine, e);
        }
    }
}
