package dev.ffmtrace.tracing.producer.internal;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * How a connection's {@code close()} meets its sender thread, which opens sessions with
 * the service and serves them. The closer must stop a sender that connects or waits to
 * retry (by interrupting it) but must never interrupt one that serves a session (an
 * interrupt in the middle of a send breaks the stream); it shuts that session instead.
 *
 * <p>A Dekker pair of volatiles decides it: the sender publishes its session before it
 * reads {@code closed}, the closer sets {@code closed} before it reads the session. In
 * every interleaving at least one sees the other: the closer sees the session (and shuts
 * it if the sender is stuck), or the sender sees the close (and serves nothing), or both.
 * Never does a sender serve while the closer saw no session and interrupts.
 * {@code stress/CloseHandshakeStress} forbids that outcome.
 *
 * @param <S> the session
 */
public final class CloseHandshake<S> {
    private final AtomicBoolean closed = new AtomicBoolean();
    /** The session opened and not yet torn down, or null while the sender connects or waits. */
    private volatile S unclosed;

    /**
     * The sender: publishes {@code session}, then looks for a close.
     *
     * @return true if the sender may serve it; false if the connection closed first (the
     *     session is withdrawn: the sender shuts it, having sent nothing on it)
     */
    public boolean open(S session) {
        unclosed = session;
        if (closed.get()) {
            unclosed = null;
            return false;
        }
        return true;
    }

    /** The sender: the session it opened is torn down. */
    public void tornDown() {
        unclosed = null;
    }

    /** The closer: closes, once; true for the call that did. */
    public boolean close() {
        return closed.compareAndSet(false, true);
    }

    /** Whether the connection is closed. */
    public boolean isClosed() {
        return closed.get();
    }

    /**
     * The closer, after {@link #close()}: the session the sender opened and has not torn
     * down, which the closer shuts if the sender is stuck on it; null if the sender
     * connects or waits, and may be interrupted.
     */
    public S unclosed() {
        return unclosed;
    }
}
