package dev.ffmtrace.memory;

import dev.ffmtrace.memory.internal.Native;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.ByteOrder;

/**
 * A TCP endpoint: an IPv4 or IPv6 address and a port (0 when listening: the kernel picks
 * one, which {@link ListeningSocket#address()} then names).
 */
public record TcpAddress(InetAddress host, int port) implements StreamAddress {
    public TcpAddress {
        if (host == null) {
            throw new IllegalArgumentException("a TCP address needs a host");
        }
        if (port < 0 || port > 0xFFFF) {
            throw new IllegalArgumentException("TCP port " + port + " is not within 0..65535");
        }
    }

    /** The loopback interface's IPv4 address, {@code 127.0.0.1}, at {@code port}. */
    public static TcpAddress loopback(int port) {
        return new TcpAddress(InetAddress.getLoopbackAddress(), port);
    }

    /**
     * {@code host:port}, or {@code [address]:port} for an IPv6 address, as Perfetto writes
     * them; a host name is resolved.
     *
     * @throws IllegalArgumentException if the port is missing or not a number within
     *                                  0..65535, or the host cannot be resolved
     */
    public static TcpAddress parse(String text) {
        int colon = text.lastIndexOf(':');
        if (colon <= 0 || colon == text.length() - 1) {
            throw new IllegalArgumentException("not host:port: " + text);
        }
        String host = text.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        } else if (host.indexOf(':') >= 0) {
            throw new IllegalArgumentException("an IPv6 address needs brackets, as in [::1]:20001: " + text);
        }
        int port;
        try {
            port = Integer.parseInt(text.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a port number in " + text);
        }
        try {
            return new TcpAddress(InetAddress.getByName(host), port);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("unknown host in " + text, e);
        }
    }

    /** Whether only this machine can reach the address. */
    public boolean isLoopback() {
        return host.isLoopbackAddress();
    }

    int family() {
        return host instanceof Inet6Address ? Native.AF_INET6 : Native.AF_INET;
    }

    /** {@code struct sockaddr_in} or {@code sockaddr_in6}; its length is {@link #sockaddrLength()}. */
    MemorySegment toSockaddr(Arena arena) {
        MemorySegment sockaddr = arena.allocate(Native.SOCKADDR_STORAGE_SIZE, 8);
        sockaddr.set(Layouts.SHORT, 0, (short) family());
        sockaddr.set(Layouts.SHORT.withOrder(ByteOrder.BIG_ENDIAN), 2, (short) port);
        byte[] bytes = host.getAddress();
        MemorySegment.copy(bytes, 0, sockaddr, Layouts.BYTE, host instanceof Inet4Address ? 4 : 8, bytes.length);
        if (host instanceof Inet6Address v6) {
            sockaddr.set(Layouts.INT, 24, v6.getScopeId());
        }
        return sockaddr;
    }

    int sockaddrLength() {
        return host instanceof Inet6Address ? Native.SOCKADDR_IN6_SIZE : Native.SOCKADDR_IN_SIZE;
    }

    /** The address in a {@code struct sockaddr_in} or {@code sockaddr_in6} the kernel filled. */
    static TcpAddress fromSockaddr(MemorySegment sockaddr) {
        int family = sockaddr.get(Layouts.SHORT, 0);
        int port = Short.toUnsignedInt(sockaddr.get(Layouts.SHORT.withOrder(ByteOrder.BIG_ENDIAN), 2));
        byte[] bytes = new byte[family == Native.AF_INET6 ? 16 : 4];
        MemorySegment.copy(sockaddr, Layouts.BYTE, family == Native.AF_INET6 ? 8 : 4, bytes, 0, bytes.length);
        try {
            return new TcpAddress(InetAddress.getByAddress(bytes), port);
        } catch (UnknownHostException e) {
            throw new IllegalStateException("the kernel returned an address of " + bytes.length + " bytes", e);
        }
    }

    /**
     * The host as {@code inet_ntop} writes it: dotted IPv4, or IPv6 in lower-case hex with
     * the longest run of two or more zero groups (the first, if tied) written {@code ::}.
     */
    public String hostText() {
        byte[] bytes = host.getAddress();
        if (bytes.length == 4) {
            return host.getHostAddress();
        }
        int[] groups = new int[8];
        for (int i = 0; i < 8; i++) {
            groups[i] = ((bytes[2 * i] & 0xFF) << 8) | (bytes[2 * i + 1] & 0xFF);
        }
        int bestStart = -1;
        int bestLength = 1;
        for (int i = 0; i < 8; ) {
            int end = i;
            while (end < 8 && groups[end] == 0) {
                end++;
            }
            if (end - i > bestLength) {
                bestStart = i;
                bestLength = end - i;
            }
            i = Math.max(end, i + 1);
        }
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < 8; i++) {
            if (i == bestStart) {
                text.append("::");
                i += bestLength - 1;
                continue;
            }
            if (!text.isEmpty() && text.charAt(text.length() - 1) != ':') {
                text.append(':');
            }
            text.append(Integer.toHexString(groups[i]));
        }
        return text.toString();
    }

    /** {@code host:port}, or {@code [host]:port} for IPv6, as Perfetto names a socket's address. */
    @Override
    public String toString() {
        return (host instanceof Inet6Address ? "[" + hostText() + "]" : hostText()) + ":" + port;
    }
}
