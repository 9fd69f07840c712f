package dev.ffmtrace.heapprofd.service;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Map;
import java.util.Set;

/**
 * The names of one client process's JIT-compiled code: its perf map
 * ({@code /tmp/perf-PID.map}, {@link PerfMap}), read at a dump, and again at a later dump
 * only if the file changed. A JVM writes the map at exit, or when asked, so frames are
 * named at the dump, not as they are unwound; code the JIT freed and reused since a stack
 * was booked is named as the map names it now, as {@code perf} would. The file is taken
 * only if it is a regular file (not a link) owned by the process's uid, no larger than
 * {@value #MAX_BYTES} bytes: in a world-writable /tmp another user could put a file there
 * first, and its sticky bit keeps anyone else from replacing the process's own. Each file
 * refused is counted. Thread-safe.
 */
final class JitSymbols {
    /** Where HotSpot, and any runtime that writes a perf map, puts it. */
    static final Path DIRECTORY = Path.of("/tmp");
    /** Far more than a large application's map (about 150 bytes per compiled method). */
    static final int MAX_BYTES = 64 << 20;

    private final Path path;
    private final int uid;
    private PerfMap map = PerfMap.EMPTY;
    /** The file's inode, size and modification time when it was read, or null. */
    private Object readAs;
    private long refused;

    /** The perf map of process {@code pid}, whose uid is {@code uid}, in {@code directory}. */
    JitSymbols(Path directory, int pid, int uid) {
        this.path = directory.resolve("perf-" + pid + ".map");
        this.uid = uid;
    }

    /** The map as the file holds it now (empty if there is none, or it was refused). */
    synchronized PerfMap current() {
        Map<String, Object> attributes;
        try {
            attributes = Files.readAttributes(path, "unix:isRegularFile,uid,ino,size,lastModifiedTime",
                    LinkOption.NOFOLLOW_LINKS);
        } catch (IOException | RuntimeException e) {
            // No map, or none yet: frames keep their addresses.
            return map;
        }
        Object as = Arrays.asList(attributes.get("ino"), attributes.get("size"), attributes.get("lastModifiedTime"));
        if (as.equals(readAs)) {
            return map;
        }
        readAs = as;
        if (!Boolean.TRUE.equals(attributes.get("isRegularFile")) || !Integer.valueOf(uid).equals(attributes.get("uid"))
                || (Long) attributes.get("size") > MAX_BYTES) {
            refused++;
            map = PerfMap.EMPTY;
            return map;
        }
        byte[] text = read();
        if (text == null) {
            refused++;
            map = PerfMap.EMPTY;
        } else {
            map = PerfMap.parse(text);
        }
        return map;
    }

    /** The file's bytes, not following a link; null if it cannot be read or is over the bound. */
    private byte[] read() {
        try (SeekableByteChannel channel = Files.newByteChannel(path,
                Set.of(StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS))) {
            ByteBuffer buffer = ByteBuffer.allocate((int) Math.min(channel.size(), MAX_BYTES) + 1);
            int read;
            do {
                read = channel.read(buffer);
            } while (read > 0 && buffer.hasRemaining());
            return buffer.hasRemaining() ? Arrays.copyOf(buffer.array(), buffer.position()) : null;
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** Files refused: not regular, another user's, too large, or unreadable. */
    synchronized long refused() {
        return refused;
    }
}
