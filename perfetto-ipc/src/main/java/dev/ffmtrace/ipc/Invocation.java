package dev.ffmtrace.ipc;

import dev.ffmtrace.memory.Layouts;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.protozero.TypedProtoDecoder;
import java.lang.foreign.MemorySegment;

/**
 * One call of a service's method, handed to its {@link ServiceDescriptor.MethodHandler}.
 * The handler replies once with {@link #reply}, or several times with {@link #replyMore}
 * and a last {@link #reply} (a stream), or {@link #fail}s; now or later, from any thread.
 * Replies after the last one are refused; replies to a client that is gone, or that
 * asked for no reply (drop_reply), are dropped.
 *
 * <p>An invocation of a method that {@linkplain ServiceDescriptor.Method#reusesInvocation
 * reuses invocations}, and that has had its last reply when its handler returns, is spent:
 * the host reuses the object for its client's next request, so that a client's steady
 * requests allocate nothing. Such a handler keeps no reference to it past its last reply.
 */
public final class Invocation {
    private static final byte[] NO_BYTES = new byte[0];

    private final IpcHost.Connection connection;
    private long requestId;
    private boolean dropReply;
    /**
     * The request message: in the connection's received frames during the handler's call,
     * in a copy of its own after it for an invocation still open. Guarded by this.
     */
    private MemorySegment args;
    private long argsOffset;
    private long argsLength;
    private int receivedFd;
    private boolean finished;

    Invocation(IpcHost.Connection connection) {
        this.connection = connection;
    }

    /** Makes this the invocation of a request, before its handler's call. */
    synchronized void start(long requestId, boolean dropReply, MemorySegment args, long argsOffset, long argsLength,
                            int receivedFd) {
        this.requestId = requestId;
        this.dropReply = dropReply;
        this.args = args;
        this.argsOffset = argsOffset;
        this.argsLength = argsLength;
        this.receivedFd = receivedFd;
        this.finished = false;
    }

    /**
     * After the handler's call: whether the invocation is spent. One still open takes a
     * copy of its request, whose bytes the connection's next frames will overwrite.
     */
    synchronized boolean endCall() {
        if (!finished) {
            args = MemorySegment.ofArray(args());
            argsOffset = 0;
        }
        return finished;
    }

    public ClientInfo client() {
        return connection.clientInfo();
    }

    public synchronized long requestId() {
        return requestId;
    }

    /** The request message, serialized: the client's bytes, to be parsed as untrusted. */
    public synchronized byte[] args() {
        byte[] copy = new byte[(int) argsLength];
        MemorySegment.copy(args, Layouts.BYTE, argsOffset, copy, 0, copy.length);
        return copy;
    }

    /**
     * Points {@code decoder} at the request message in place, without a copy: the
     * client's bytes, as the host received them; the decoder reads them only until the
     * handler returns.
     */
    public synchronized void readArgs(TypedProtoDecoder decoder) {
        decoder.reset(args, argsOffset, argsLength);
    }

    /** The client asked for no reply; replies are dropped. */
    public synchronized boolean dropReply() {
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
        connection.reply(this, true, hasMore, replyProto, replyProto.length, fd, false);
    }

    /**
     * A successful reply of {@code replyProto[0, length)}, which the caller may reuse once
     * this returns: for a stream of replies from one array.
     *
     * @throws IllegalStateException after the last reply
     * @throws IllegalArgumentException if the frame would exceed Perfetto's size limit
     */
    public void reply(byte[] replyProto, int length, boolean hasMore) {
        connection.reply(this, true, hasMore, replyProto, length, -1, false);
    }

    /** Ends the invocation without a result (Perfetto's Deferred::Reject). */
    public void fail() {
        connection.reply(this, false, false, NO_BYTES, 0, -1, false);
    }

    /**
     * Fails the invocation unless it already ended: for a handler that threw, here or on
     * a thread the handler handed the invocation to.
     */
    public void failIfOpen() {
        connection.reply(this, false, false, NO_BYTES, 0, -1, true);
    }

    /** Closes the received descriptor if the handler did not take it. */
    void closeUntakenFd() {
        int fd = takeReceivedFd();
        if (fd >= 0) {
            StreamSocket.closeReceived(fd);
        }
    }

    /**
     * Records a reply; false, or if not {@code ifOpen} an exception, after the last one.
     *
     * @throws IllegalStateException after the last reply, unless {@code ifOpen}
     */
    synchronized boolean finish(boolean hasMore, boolean ifOpen) {
        if (finished) {
            if (ifOpen) {
                return false;
            }
            throw new IllegalStateException("request " + requestId + " already had its last reply");
        }
        finished = !hasMore;
        return true;
    }
}
