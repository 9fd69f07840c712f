package dev.ffmtrace.tracing.buffer;

/**
 * The trusted identity of the process behind a producer, as the service learned it
 * from the connection (peer credentials), never from the producer's own data.
 */
public record ClientIdentity(int uid, int pid) {
}
