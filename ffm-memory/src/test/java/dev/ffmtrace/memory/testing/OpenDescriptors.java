package dev.ffmtrace.memory.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/**
 * The descriptors this process has open, each with what it refers to, for a test that
 * checks it left none behind. A leak is a descriptor open now that was not open, to the
 * same file, at the snapshot; one closed since is none, since tests share the JVM and an
 * earlier test's connection may close late. Comparing counts instead fails on that close.
 */
public final class OpenDescriptors {
    private final Set<String> entries;

    private OpenDescriptors(Set<String> entries) {
        this.entries = entries;
    }

    /** The descriptors open now. */
    public static OpenDescriptors snapshot() {
        return new OpenDescriptors(new HashSet<>(list()));
    }

    /** Descriptors open now and not at the snapshot, as {@code "fd->target"}; empty when nothing leaked. */
    public List<String> openedSince() {
        List<String> opened = new ArrayList<>(list());
        opened.removeIf(entries::contains);
        return opened;
    }

    /** {@code "fd->target"} for each open descriptor, sorted; a socket's target names its inode. */
    private static List<String> list() {
        // The listing's own descriptor, whose number may differ from one listing to the next.
        Path listing = Path.of("/proc", Long.toString(ProcessHandle.current().pid()), "fd");
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.map(fd -> {
                try {
                    Path target = Files.readSymbolicLink(fd);
                    return target.equals(listing) ? null : fd.getFileName() + "->" + target;
                } catch (IOException e) {
                    // Closed meanwhile.
                    return null;
                }
            }).filter(entry -> entry != null).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
