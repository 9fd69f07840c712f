package dev.ffmtrace.tracing.buffer;

import dev.ffmtrace.memory.Os;

/**
 * The trusted identity of the process behind a producer, as the service learned it
 * from the connection (peer credentials, or what a relay said of the producer it
 * forwards), never from the producer's own data.
 *
 * @param pid       the process id, or -1 where the connection cannot tell (TCP without a relay)
 * @param machineId 0 for this machine, else the id the service gave the producer's machine
 */
public record ClientIdentity(int uid, int pid, int machineId) {
    /** A process on this machine. */
    public ClientIdentity(int uid, int pid) {
        this(uid, pid, 0);
    }

    /** This process's uid and pid: the identity of an in-process producer. */
    public static ClientIdentity self() {
        return new ClientIdentity(Os.uid(), Os.pid());
    }
}
