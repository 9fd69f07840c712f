package dev.ffmtrace.memory;

/**
 * Where a stream socket listens or connects: a Unix domain socket ({@link UnixAddress})
 * or a TCP endpoint ({@link TcpAddress}).
 */
public sealed interface StreamAddress permits UnixAddress, TcpAddress {
    /**
     * An address as Perfetto's tools write one ({@code PERFETTO_PRODUCER_SOCK_NAME},
     * {@code PERFETTO_RELAY_SOCK_NAME}): {@code @name} in the abstract namespace,
     * {@code host:port} or {@code [v6]:port} a TCP endpoint, anything else a path. A path
     * that starts with {@code /} stays a path even with a colon in it, where Perfetto would
     * take it for a host.
     *
     * @throws IllegalArgumentException for a {@code vsock://} address (not served here), or
     *                                  a TCP address whose port or host does not parse
     */
    static StreamAddress parse(String name) {
        if (name.startsWith("vsock://")) {
            throw new IllegalArgumentException("vsock addresses are not supported: " + name);
        }
        if (!name.startsWith("@") && !name.startsWith("/") && name.indexOf(':') >= 0) {
            return TcpAddress.parse(name);
        }
        return UnixAddress.parse(name);
    }
}
