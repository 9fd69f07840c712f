package dev.ffmtrace.ipc;

/**
 * Who invoked a method: the host's id of the connection, and the peer's uid and pid as
 * the kernel recorded them at connect time (SO_PEERCRED). A SetPeerIdentity frame never
 * changes them on a Unix socket.
 */
public record ClientInfo(long clientId, int uid, int pid) {
}
