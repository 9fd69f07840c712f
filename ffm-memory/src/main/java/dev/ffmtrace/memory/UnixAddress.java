package dev.ffmtrace.memory;

import dev.ffmtrace.memory.internal.Native;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * The name of a Unix domain socket: a path in the filesystem, or a name in Linux's
 * abstract namespace (no file; gone when the last socket bound to it closes).
 */
public record UnixAddress(String name, boolean isAbstract) implements StreamAddress {
    public UnixAddress {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("a Unix socket address needs a name");
        }
        if (name.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("Unix socket name contains a NUL byte");
        }
        int limit = Native.SUN_PATH_SIZE - 1;
        if (name.getBytes(StandardCharsets.UTF_8).length > limit) {
            throw new IllegalArgumentException("Unix socket name longer than " + limit + " bytes: " + name);
        }
    }

    /** A name in the abstract namespace (shown as {@code @name} by {@code ss}). */
    public static UnixAddress abstractName(String name) {
        return new UnixAddress(name, true);
    }

    public static UnixAddress path(Path path) {
        return new UnixAddress(path.toString(), false);
    }

    /**
     * An address as {@link #toString()} writes it, and as Perfetto and {@code ss} name
     * sockets: {@code @name} in the abstract namespace, anything else a path.
     */
    public static UnixAddress parse(String name) {
        return name.startsWith("@") ? abstractName(name.substring(1)) : path(Path.of(name));
    }

    /** {@code struct sockaddr_un} for this address; its meaningful length is {@link #sockaddrLength()}. */
    MemorySegment toSockaddr(Arena arena) {
        MemorySegment sockaddr = arena.allocate(Native.SOCKADDR_UN_SIZE, 2);
        sockaddr.set(Layouts.SHORT, 0, (short) Native.AF_UNIX);
        byte[] bytes = name.getBytes(StandardCharsets.UTF_8);
        // Abstract names start with a NUL; paths end with one (the segment is zeroed).
        MemorySegment.copy(bytes, 0, sockaddr, Layouts.BYTE, Native.SUN_PATH_OFFSET + (isAbstract ? 1 : 0), bytes.length);
        return sockaddr;
    }

    int sockaddrLength() {
        return Native.SUN_PATH_OFFSET + name.getBytes(StandardCharsets.UTF_8).length + 1;
    }

    @Override
    public String toString() {
        return isAbstract ? "@" + name : name;
    }
}
