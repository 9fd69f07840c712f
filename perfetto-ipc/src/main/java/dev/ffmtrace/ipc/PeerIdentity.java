package dev.ffmtrace.ipc;

/**
 * Who a relay says a connection speaks for: the pid and uid of the process it forwards
 * (or its own), and its machine's id hint and name. Sent as a SetPeerIdentity frame
 * before the connection's first BindService; a host honours it on TCP only.
 */
public record PeerIdentity(int pid, int uid, String machineIdHint, String machineName) {
    public PeerIdentity {
        if (machineIdHint == null || machineName == null) {
            throw new IllegalArgumentException("a peer identity needs a machine id hint and a name (either may be empty)");
        }
    }

    /** The SetPeerIdentity frame, with its size header, as traced_relay writes it (request id 0). */
    public byte[] frame() {
        return Frames.setPeerIdentity(0, pid, uid, machineIdHint, machineName);
    }
}
