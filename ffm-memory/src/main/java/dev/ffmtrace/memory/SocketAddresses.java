package dev.ffmtrace.memory;

import dev.ffmtrace.memory.internal.Native;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** The kernel's view of a {@link StreamAddress}: its family and its {@code struct sockaddr}. */
final class SocketAddresses {
    private SocketAddresses() {
    }

    static int family(StreamAddress address) {
        return switch (address) {
            case UnixAddress _ -> Native.AF_UNIX;
            case TcpAddress tcp -> tcp.family();
        };
    }

    static MemorySegment sockaddr(StreamAddress address, Arena arena) {
        return switch (address) {
            case UnixAddress unix -> unix.toSockaddr(arena);
            case TcpAddress tcp -> tcp.toSockaddr(arena);
        };
    }

    static int length(StreamAddress address) {
        return switch (address) {
            case UnixAddress unix -> unix.sockaddrLength();
            case TcpAddress tcp -> tcp.sockaddrLength();
        };
    }
}
