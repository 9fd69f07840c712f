package dev.ffmtrace.ipc;

/**
 * One reply to an invocation, as a client receives it.
 *
 * @param success    whether the method ran and replied; false also when the host
 *                   could not dispatch it or the connection was lost
 * @param hasMore    more replies with the same request id follow (a stream)
 * @param replyProto the method's reply message, serialized (empty unless success)
 * @param fd         a descriptor sent with the reply, now the receiver's to close; -1 if none
 */
public record Reply(boolean success, boolean hasMore, byte[] replyProto, int fd) {
}
