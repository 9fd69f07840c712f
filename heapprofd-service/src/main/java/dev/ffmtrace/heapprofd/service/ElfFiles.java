package dev.ffmtrace.heapprofd.service;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The ELF files a service has read, shared by its connections: every process of a
 * profile maps libc, and every JVM libjvm, whose symbol and CFI tables take longer to
 * read than the rest of a short process's records to unwind. A file is the one at its
 * path with its inode, size and modification time as they are when it is asked for, so a
 * binary rebuilt in place is read again. At most {@value #MAX_FILES} are kept (all let go
 * when full). Thread-safe: an {@link ElfFile} is read-only once read; two connections
 * asking for one file at once read it once.
 */
final class ElfFiles {
    private static final int MAX_FILES = 4096;

    private record Key(String path, long inode, long size, long modifiedNanos) {
    }

    private final Map<Key, Optional<ElfFile>> files = new ConcurrentHashMap<>();

    /** The ELF file at {@code path} if it is the file with inode {@code inode} and an ELF file; else null. */
    ElfFile get(String path, long inode) {
        Key key = key(path);
        if (key == null || key.inode != inode) {
            // Not the file mapped: a rebuilt binary's symbols would name the wrong functions.
            return null;
        }
        if (files.size() >= MAX_FILES) {
            files.clear();
        }
        return files.computeIfAbsent(key, k -> Optional.ofNullable(ElfFile.read(k.path))).orElse(null);
    }

    private static Key key(String path) {
        try {
            Map<String, Object> attributes = Files.readAttributes(Path.of(path), "unix:ino,size,lastModifiedTime");
            return new Key(path, (Long) attributes.get("ino"), (Long) attributes.get("size"),
                    ((FileTime) attributes.get("lastModifiedTime")).to(TimeUnit.NANOSECONDS));
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
