package dev.ffmtrace.tracing.buffer;

import dev.ffmtrace.memory.Os;

/**
 * The trusted identity of the process behind a producer, as the service learned it
 * from the connection (peer credentials), never from the producer's own data.
 */
public record ClientIdentity(int uid, int pid) {
    /** This process's uid and pid: the identity of an in-process producer. */
    public static ClientIdentity self() {
        return new ClientIdentity(Os.uid(), Os.pid());
    }
}
