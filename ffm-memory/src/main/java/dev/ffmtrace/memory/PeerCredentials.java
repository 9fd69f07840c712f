package dev.ffmtrace.memory;

/** Who is at the other end of a Unix socket, as the kernel recorded it at connect time (SO_PEERCRED). */
public record PeerCredentials(int pid, int uid, int gid) {
}
