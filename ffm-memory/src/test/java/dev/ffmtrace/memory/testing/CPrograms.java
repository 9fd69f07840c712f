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
    private CPrograms() {
    }

    /**
     * The path of program {@code name} (a target of {@code native/Makefile}, e.g.
     * {@code "smb_tool"}), made first if it is missing or out of date.
     */
    public static Path program(String name) {
        Path nativeDir = nativeDir();
        Path binary = nativeDir.resolve("target").resolve("bin").resolve(name);
        if (!upToDate(binary, nativeDir)) {
            make(nativeDir, name);
        }
        if (!Files.isExecutable(binary)) {
            throw new IllegalStateException("make -C " + nativeDir + " " + name + " made no " + binary);
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

    private static void make(Path nativeDir, String name) {
        List<String> command = List.of("make", "-C", nativeDir.toString(), name);
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
