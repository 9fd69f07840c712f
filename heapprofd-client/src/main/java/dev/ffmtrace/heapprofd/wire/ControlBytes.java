package dev.ffmtrace.heapprofd.wire;

/**
 * The single bytes a client and the service send each other on the socket after the
 * handshake. Perfetto's protocol has one, the wake-up (any byte: a client sends it when the
 * service's reader has paused). ffmtrace adds an exit handshake, which a Perfetto service
 * simply takes for a wake-up: the client sends {@link #EXITING} as it exits, the service
 * reads the process's maps while the process still has them and answers {@link #EXIT_READ};
 * the client may then exit with records still in the ring, which the service unwinds
 * after the process is gone against those maps. Without the answer (a service that does
 * not know it) the client waits until the ring is read, as Perfetto's does.
 */
public final class ControlBytes {
    /** Client to service: this process is exiting. Also a wake-up. */
    public static final byte EXITING = 'E';
    /** Service to client: the process's maps are read; it may exit. */
    public static final byte EXIT_READ = 'R';

    private ControlBytes() {
    }
}
