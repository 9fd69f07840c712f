package dev.ffmtrace.ipc;

import dev.ffmtrace.memory.UnixSocket;

/**
 * One call of a service's method, handed to its {@link ServiceDescriptor.MethodHandler}.
 * The handler replies once with {@link #reply}, or several times with {@link #replyMore}
 * and a last {@link #reply} (a stream), or {@link #fail}s; now or later, from any thread.
 * Replies after the last one are refused; replies to a client that is gone, or that
 * asked for no reply (drop_reply), are dropped.
 */
public final class Invocation {
    private final IpcHost.Connection connection;
    private final long requestId;
    private final byte[] args;
    private final boolean dropReply;
    private int receivedFd;
    private boolean finished;

    Invocation(IpcHost.Connection connection, long requestId, byte[] args, boolean dropReply, int receivedFd) {
        this.connection = connection;
        this.requestId = requestId;
        this.args = args;
        this.dropReply = dropReply;
        this.receivedFd = receivedFd;
    }

    public ClientInfo client() {
        return connection.clientInfo();
    }

    public long requestId() {
        return requestId;
    }

    /** The request message, serialized: the client's bytes, to be parsed as untrusted. */
    public byte[] args() {
        return args.clone();
    }

    /** The client asked for no reply; replies are dropped. */
    public boolean dropReply() {
        return dropReply;
    }

    /**
     * The descriptor that came with the invocation, now the caller's to close, or -1.
     * Only during the handler's call: the host closes one not taken when it returns.
     */
    public synchronized int takeReceivedFd() {
        int fd = receivedFd;
        receivedFd = -1;
        return fd;
    }

    /** The last (or only) reply. */
    public void reply(byte[] replyProto) {
        reply(replyProto, false, -1);
    }

    /** One reply of a stream, more to follow. */
    public void replyMore(byte[] replyProto) {
        reply(replyProto, true, -1);
    }

    /**
     * A successful reply, with a descriptor if {@code fd >= 0} (it stays the caller's).
     *
     * @throws IllegalStateException after the last reply
     * @throws IllegalArgumentException if the frame would exceed Perfetto's size limit
     */
    public void reply(byte[] replyProto, boolean hasMore, int fd) {
        byte[] frame = Frames.invokeMethodReply(requestId, true, hasMore, replyProto);
        finish(hasMore);
        send(frame, fd);
    }

    /** Ends the invocation without a result (Perfetto's Deferred::Reject). */
    public void fail() {
        byte[] frame = Frames.invokeMethodReply(requestId, false, false, new byte[0]);
        finish(false);
        send(frame, -1);
    }

    /** Fails the invocation unless it already ended: for a handler that threw. */
    synchronized boolean failIfOpen() {
        if (finished) {
            return false;
        }
        fail();
        return true;
    }

    /** Closes the received descriptor if the handler did not take it. */
    void closeUntakenFd() {
        UnixSocket.closeReceived(takeReceivedFd());
    }

    private synchronized void finish(boolean hasMore) {
        if (finished) {
            throw new IllegalStateException("request " + requestId + " already had its last reply");
        }
        finished = !hasMore;
    }

    private void send(byte[] frame, int fd) {
        if (!dropReply) {
            connection.send(frame, fd);
        }
    }
}
