package dev.ffmtrace.ipc;

/**
 * Who invoked a method: the host's id of the connection, the peer's uid and pid, and the
 * machine it runs on.
 *
 * <p>On a Unix socket the uid and pid are what the kernel recorded at connect time
 * (SO_PEERCRED), and the machine is this one ({@link #LOCAL_MACHINE}); a SetPeerIdentity
 * frame never changes them. On TCP the kernel knows neither: they are uid 0 and pid -1
 * (Perfetto's defaults) until the peer, a relay, names them in a SetPeerIdentity frame,
 * which also gives the machine's id and name. Only the first are {@link #vouched}.
 *
 * @param machineId   {@link #LOCAL_MACHINE} for this machine, else the id the host derived
 *                    for the peer's machine (never 0)
 * @param machineName the name the relay gave its machine, or null
 * @param vouched     whether the kernel vouched for the uid and pid (a Unix socket's peer);
 *                    a service that decides by uid what a client may do trusts no other
 */
public record ClientInfo(long clientId, int uid, int pid, int machineId, String machineName, boolean vouched) {
    /** The machine id of this machine, as Perfetto's {@code kDefaultMachineID}. */
    public static final int LOCAL_MACHINE = 0;

    /** A client on this machine whose uid and pid the kernel vouched for. */
    public ClientInfo(long clientId, int uid, int pid) {
        this(clientId, uid, pid, LOCAL_MACHINE, null, true);
    }

    /** A TCP client that has not named itself: uid 0 and pid -1, as Perfetto's, vouched by nobody. */
    public static ClientInfo unvouched(long clientId) {
        return new ClientInfo(clientId, 0, -1, LOCAL_MACHINE, null, false);
    }

    /** Whether the client runs on another machine (it came through a relay or over TCP). */
    public boolean isRemote() {
        return machineId != LOCAL_MACHINE;
    }
}
