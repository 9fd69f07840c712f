package dev.ffmtrace.ipc;

import dev.ffmtrace.memory.NativeException;
import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.perfetto.protos.IPCFrame;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The client end of Perfetto's IPC (ClientImpl): binds services by name, learning their
 * method ids from the host's reply, and invokes methods with request ids counting from 1.
 *
 * <p>Replies arrive on the client's I/O thread. A stream's listener gets every reply;
 * the last has {@code hasMore} false. A request the host answers with a RequestError, or
 * one still open when the connection is lost, ends with a failed reply (Perfetto's
 * client drops such requests silently; a Java caller would wait forever). A frame over
 * the size limit or one that does not parse closes the connection.
 */
public final class IpcClient implements AutoCloseable {
    private static final int READ_SIZE = 16 * 1024;

    private final StreamSocket socket;
    private final AtomicLong lastRequestId = new AtomicLong();
    private final Map<Long, Pending> pending = new ConcurrentHashMap<>();
    private final Object sendLock = new Object();
    /** The frame {@link #invokeDropReply(BoundService, String, byte[], int)} encodes; under sendLock. */
    private final HeapBuffered<IPCFrame> reusedFrame = Frames.newFrame();
    /** reusedFrame's bytes behind their header, as sent; grows to the largest; under sendLock. */
    private byte[] reusedBytes = new byte[256];
    private MemorySegment reusedSegment = MemorySegment.ofArray(reusedBytes);
    private final Thread thread;
    private volatile boolean connected = true;
    private final CompletableFuture<Void> disconnection = new CompletableFuture<>();
    private boolean socketClosed;

    private sealed interface Pending permits PendingBind, PendingInvoke {
    }

    private record PendingBind(String name, CompletableFuture<BoundService> future) implements Pending {
    }

    private record PendingInvoke(Consumer<Reply> listener) implements Pending {
    }

    private IpcClient(StreamSocket socket, String name) {
        this.socket = socket;
        this.thread = Thread.ofPlatform().daemon().name("ipc-client " + name).unstarted(this::run);
    }

    public static IpcClient connect(StreamAddress address) {
        IpcClient client = new IpcClient(StreamSocket.connect(address), address.toString());
        client.thread.start();
        return client;
    }

    public boolean isConnected() {
        return connected;
    }

    /**
     * Completes once the connection is gone (lost, or {@link #close closed}), after
     * {@link #isConnected()} turned false and the open requests ended; on the client's
     * I/O thread, or at once if it is gone already.
     */
    public CompletableFuture<Void> disconnection() {
        return disconnection.copy();
    }

    /**
     * Names the process this connection speaks for, as a relay does for each producer it
     * forwards: its pid and uid, and its machine's id hint and name. Honoured by a host on
     * TCP before the connection's first {@link #bindService}; it gets no reply.
     */
    public void setPeerIdentity(PeerIdentity identity) {
        long requestId = lastRequestId.incrementAndGet();
        send(requestId, Frames.setPeerIdentity(requestId, identity.pid(), identity.uid(), identity.machineIdHint(),
                identity.machineName()), -1);
    }

    /** Binds service {@code name}; fails with {@link IpcException} if the host does not expose it. */
    public CompletableFuture<BoundService> bindService(String name) {
        CompletableFuture<BoundService> future = new CompletableFuture<>();
        long requestId = lastRequestId.incrementAndGet();
        pending.put(requestId, new PendingBind(name, future));
        send(requestId, Frames.bindService(requestId, name), -1);
        return future;
    }

    /**
     * Invokes {@code method} with the serialized request {@code args} and a descriptor if
     * {@code fd >= 0} (it stays the caller's); {@code listener} gets each reply.
     *
     * @return the request id
     */
    public long invoke(BoundService service, String method, byte[] args, int fd, Consumer<Reply> listener) {
        int methodId = service.methodId(method);
        long requestId = lastRequestId.incrementAndGet();
        byte[] frame = Frames.invokeMethod(requestId, service.serviceId(), methodId, args, false);
        pending.put(requestId, new PendingInvoke(listener));
        send(requestId, frame, fd);
        return requestId;
    }

    /** Invokes a method that replies once; the future holds its reply, successful or not. */
    public CompletableFuture<Reply> invoke(BoundService service, String method, byte[] args) {
        CompletableFuture<Reply> future = new CompletableFuture<>();
        invoke(service, method, args, -1, reply -> {
            if (!reply.hasMore()) {
                future.complete(reply);
            }
        });
        return future;
    }

    /** Invokes a method and asks for no reply (drop_reply). */
    public void invokeDropReply(BoundService service, String method, byte[] args) {
        long requestId = lastRequestId.incrementAndGet();
        send(requestId, Frames.invokeMethod(requestId, service.serviceId(), service.methodId(method), args, true), -1);
    }

    /**
     * Invokes a method with the first {@code length} bytes of {@code args} and asks for no
     * reply, as {@link #invokeDropReply(BoundService, String, byte[])} does, but encoding the
     * frame into buffers this client keeps: a caller that sends often (CommitData at a
     * writer's rate) allocates nothing. Lost with the connection, as any dropped reply is.
     *
     * @throws IllegalArgumentException if the frame would exceed Perfetto's IPC frame size
     */
    public void invokeDropReply(BoundService service, String method, byte[] args, int length) {
        Objects.checkFromIndexSize(0, length, args.length);
        int serviceId = service.serviceId();
        int methodId = service.methodId(method);
        long requestId = lastRequestId.incrementAndGet();
        synchronized (sendLock) {
            if (socketClosed) {
                return;
            }
            reusedFrame.reset();
            Frames.writeInvokeMethod(reusedFrame.get(), requestId, serviceId, methodId, args, length, true);
            reusedFrame.get().finalizeMessage();
            int payload = Math.toIntExact(reusedFrame.size());
            Frames.checkPayloadSize(payload);
            int framed = FrameReader.HEADER_SIZE + payload;
            if (reusedBytes.length < framed) {
                reusedBytes = new byte[Math.max(framed, 2 * reusedBytes.length)];
                reusedSegment = MemorySegment.ofArray(reusedBytes);
            }
            reusedFrame.buffer().copyTo(reusedSegment, FrameReader.HEADER_SIZE);
            Frames.writeHeader(reusedBytes, payload);
            try {
                socket.sendBytes(reusedBytes, framed, -1);
            } catch (NativeException e) {
                socket.shutdown();
            }
        }
    }

    /**
     * Disconnects and waits for the I/O thread; open requests end as failed. A send blocked
     * on a peer that stops reading fails at once.
     */
    @Override
    public void close() {
        socket.shutdown();
        if (Thread.currentThread() != thread) {
            IpcHost.join(thread);
        }
    }

    private void send(long requestId, byte[] frame, int fd) {
        synchronized (sendLock) {
            if (!socketClosed) {
                try {
                    Frames.send(socket, frame, fd);
                    return;
                } catch (NativeException e) {
                    socket.shutdown();
                }
            }
        }
        end(pending.remove(requestId), "the connection to the host is closed");
    }

    private void run() {
        byte[] chunk = new byte[READ_SIZE];
        try (FrameReader reader = new FrameReader()) {
            boolean ok = true;
            while (ok) {
                StreamSocket.Received received;
                try {
                    received = socket.receive(chunk, 1);
                } catch (RuntimeException e) {
                    break;
                }
                int fd = received.fds().length == 0 ? -1 : received.fds()[0];
                if (received.bytes() == 0) {
                    StreamSocket.closeReceived(fd);
                    break;
                }
                ok = reader.feed(chunk, received.bytes(), fd);
                while (ok && reader.next()) {
                    ok = onFrame(reader);
                }
            }
        } finally {
            synchronized (sendLock) {
                socketClosed = true;
                socket.close();
            }
            for (Long requestId : pending.keySet()) {
                end(pending.remove(requestId), "the connection to the host was lost");
            }
            // Last, so that a caller who sees the client disconnected sees its requests ended.
            connected = false;
            disconnection.complete(null);
        }
    }

    /** Handles the frame {@code received} took last from the host; false if it does not parse. */
    private boolean onFrame(FrameReader received) {
        IPCFrame.Decoder frame = new IPCFrame.Decoder();
        frame.reset(received.payloads(), received.payloadOffset(), received.payloadLength());
        if (frame.hasError()) {
            StreamSocket.closeReceived(received.fd());
            return false;
        }
        long requestId = frame.requestId();
        Pending request = pending.get(requestId);
        if (request instanceof PendingInvoke invoke && frame.hasMsgInvokeMethodReply()) {
            IPCFrame.InvokeMethodReply.Decoder reply = new IPCFrame.InvokeMethodReply.Decoder();
            if (!frame.msgInvokeMethodReply(reply) || reply.hasError()) {
                StreamSocket.closeReceived(received.fd());
                return false;
            }
            boolean success = reply.success();
            byte[] proto = success && reply.hasReplyProto() ? reply.replyProto() : new byte[0];
            if (!reply.hasMore()) {
                pending.remove(requestId);
            }
            invoke.listener().accept(new Reply(success, reply.hasMore(), proto, received.fd()));
            return true;
        }
        StreamSocket.closeReceived(received.fd());
        if (request instanceof PendingBind bind && frame.hasMsgBindServiceReply()) {
            IPCFrame.BindServiceReply.Decoder reply = new IPCFrame.BindServiceReply.Decoder();
            if (!frame.msgBindServiceReply(reply) || reply.hasError()) {
                return false;
            }
            pending.remove(requestId);
            if (!reply.success()) {
                bind.future().completeExceptionally(new IpcException("the host has no service " + bind.name()));
                return true;
            }
            Map<String, Integer> methods = new HashMap<>();
            IPCFrame.BindServiceReply.MethodInfo.Decoder info = new IPCFrame.BindServiceReply.MethodInfo.Decoder();
            RepeatedFieldIterator it = reply.methods(new RepeatedFieldIterator());
            while (it.next()) {
                info.reset(it.field());
                // Perfetto's client skips entries without a name or a positive id.
                if (!info.hasError() && !info.name().isEmpty() && info.id() > 0) {
                    methods.put(info.name(), info.id());
                }
            }
            bind.future().complete(new BoundService(bind.name(), reply.serviceId(), methods));
            return true;
        }
        if (request != null && frame.hasMsgRequestError()) {
            IPCFrame.RequestError.Decoder error = new IPCFrame.RequestError.Decoder();
            String text = frame.msgRequestError(error) && !error.hasError() ? error.error() : "";
            end(pending.remove(requestId), "host error: " + text);
        }
        return true;
    }

    private static void end(Pending request, String why) {
        switch (request) {
            case null -> { }
            case PendingBind bind -> bind.future().completeExceptionally(new IpcException(why));
            case PendingInvoke invoke -> invoke.listener().accept(new Reply(false, false, new byte[0], -1));
        }
    }
}
