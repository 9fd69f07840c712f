package dev.ffmtrace.ipc;

import dev.ffmtrace.memory.NativeException;
import dev.ffmtrace.memory.PeerCredentials;
import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.memory.ListeningSocket;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.perfetto.protos.IPCFrame;
import dev.ffmtrace.protozero.ProtoField;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The host end of Perfetto's IPC (HostImpl): listens on a Unix socket, exposes services
 * by name, answers BindService with the service's id and method ids, and dispatches
 * InvokeMethod to a method by id.
 *
 * <p>As Perfetto's host: service ids count from 1 in exposure order; binding an unknown
 * service gets an empty BindServiceReply (no success); invoking an unknown service or
 * method id gets an InvokeMethodReply with success false; a frame with none of bind,
 * invoke or peer identity gets a RequestError "unknown request".
 *
 * <p>Unix sockets and TCP ({@link StreamAddress}). On a Unix socket the peer's uid and pid
 * come from SO_PEERCRED and a SetPeerIdentity frame is ignored. On TCP the kernel cannot
 * vouch for the peer: it is uid 0, pid -1 and this machine until a SetPeerIdentity frame
 * names its pid, uid and machine (a relay forwarding a producer of its machine), which a
 * connection may do once, before its first BindService. Later or repeated ones are ignored;
 * every ignored one is counted in {@link #identitiesRefused()}. All TCP clients together
 * share one {@link Options#maxConnectionsPerUid()} allowance.
 *
 * <p>Stricter than Perfetto (which drops an unparsable frame and keeps a stray
 * descriptor): a frame over the size limit, a frame that does not parse, a descriptor on
 * a frame whose method takes none, or more than one descriptor in a read, closes that
 * client's connection and counts a {@link #violations() violation}; the host and its
 * other clients carry on.
 *
 * <p>Threads: one accepting thread, and one I/O thread per client that reads its frames
 * and runs its invocations' handlers in order. Handlers of different clients run
 * concurrently. A client has {@link #SEND_TIMEOUT} to take each frame sent to it, as in
 * Perfetto: one that stops reading is then disconnected (counted in
 * {@link #sendTimeouts()}), so no thread that sends to it waits longer.
 */
public final class IpcHost implements AutoCloseable {
    /** Bytes taken off a socket per read. */
    private static final int READ_SIZE = 16 * 1024;
    /**
     * How long a client has to take a frame (Perfetto's kDefaultIpcTxTimeoutMs): a client
     * that stops reading is disconnected then, and the thread that sent to it goes on.
     */
    public static final Duration SEND_TIMEOUT = Duration.ofSeconds(10);
    /**
     * Connections one uid may hold at once (Perfetto has no such limit: its one thread
     * costs nothing more per client, where each of ours has a thread of its own).
     */
    public static final int MAX_CONNECTIONS_PER_UID = 1024;

    private final ListeningSocket server;
    private final Map<Integer, ExposedService> services = new ConcurrentHashMap<>();
    private final Map<Long, Connection> connections = new ConcurrentHashMap<>();
    private final AtomicLong lastClientId = new AtomicLong();
    private final AtomicLong violations = new AtomicLong();
    private final AtomicLong handlerFailures = new AtomicLong();
    private final AtomicLong sendTimeouts = new AtomicLong();
    private final AtomicLong connectionsRefused = new AtomicLong();
    private final AtomicLong identitiesRefused = new AtomicLong();
    /** Connections held now, by uid; changed by the accepting thread and by connections' threads as they end. */
    private final Map<Long, Integer> connectionsByUid = new ConcurrentHashMap<>();
    private final Options options;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Thread acceptor;
    private int lastServiceId;

    private record ExposedService(int id, ServiceDescriptor descriptor) {
    }

    private IpcHost(ListeningSocket server, Options options) {
        this.server = server;
        this.options = options;
        this.acceptor = Thread.ofPlatform().daemon().name("ipc-host-accept " + server.address()).unstarted(this::acceptLoop);
    }

    /**
     * How a host treats its clients.
     *
     * @param socketMode           the socket file's permission bits (as
     *                             {@link ListeningSocket#listen(StreamAddress, int, int)}); -1 for the umask's
     * @param sendTimeout          how long a client has to take a frame before it is disconnected
     * @param maxConnectionsPerUid connections one uid may hold at once; one more is closed at once
     */
    public record Options(int socketMode, Duration sendTimeout, int maxConnectionsPerUid) {
        /** The umask's mode, Perfetto's 10 s send timeout, {@value #MAX_CONNECTIONS_PER_UID} connections a uid. */
        public static final Options DEFAULT = new Options(-1, SEND_TIMEOUT, MAX_CONNECTIONS_PER_UID);

        public Options {
            if (sendTimeout.isNegative() || sendTimeout.isZero() || maxConnectionsPerUid < 1) {
                throw new IllegalArgumentException("the send timeout and the connections a uid may hold must be positive");
            }
        }

        public Options withSocketMode(int mode) {
            return new Options(mode, sendTimeout, maxConnectionsPerUid);
        }

        public Options withSendTimeout(Duration timeout) {
            return new Options(socketMode, timeout, maxConnectionsPerUid);
        }

        public Options withMaxConnectionsPerUid(int connections) {
            return new Options(socketMode, sendTimeout, connections);
        }
    }

    /** Listens on {@code address} and starts accepting clients. */
    public static IpcHost listen(StreamAddress address) {
        return listen(address, Options.DEFAULT);
    }

    /** Listens on {@code address}, a socket file with permission bits {@code mode}, and starts accepting clients. */
    public static IpcHost listen(StreamAddress address, int mode) {
        return listen(address, Options.DEFAULT.withSocketMode(mode));
    }

    /** Listens on {@code address} and starts accepting clients, treated as {@code options} say. */
    public static IpcHost listen(StreamAddress address, Options options) {
        IpcHost host = new IpcHost(ListeningSocket.listen(address, 64, options.socketMode()), options);
        host.acceptor.start();
        return host;
    }

    /** Exposes {@code service}; false if a service of that name is already exposed. */
    public synchronized boolean exposeService(ServiceDescriptor service) {
        if (services.values().stream().anyMatch(s -> s.descriptor().name().equals(service.name()))) {
            return false;
        }
        int id = ++lastServiceId;
        services.put(id, new ExposedService(id, service));
        return true;
    }

    public StreamAddress address() {
        return server.address();
    }

    /** Connections closed for a protocol violation (oversized or malformed frame, stray descriptor). */
    public long violations() {
        return violations.get();
    }

    /** Handlers that threw; each such invocation was failed. */
    public long handlerFailures() {
        return handlerFailures.get();
    }

    /** Clients disconnected because they did not take a frame within the send timeout. */
    public long sendTimeouts() {
        return sendTimeouts.get();
    }

    /** Connections closed at once because their uid held {@link Options#maxConnectionsPerUid()} already. */
    public long connectionsRefused() {
        return connectionsRefused.get();
    }

    /** SetPeerIdentity frames ignored: on a Unix socket, a second one, or one after the connection bound a service. */
    public long identitiesRefused() {
        return identitiesRefused.get();
    }

    /** Clients connected now. */
    public int clientCount() {
        return connections.size();
    }

    /**
     * Disconnects client {@code clientId}, e.g. one a service gave up on; its I/O thread
     * closes the socket and services hear of it as of any client that went away. Does
     * nothing if the client is gone.
     */
    public void disconnect(long clientId) {
        Connection connection = connections.get(clientId);
        if (connection != null) {
            connection.shutdown();
        }
    }

    /** Stops accepting, disconnects every client and waits for their threads to end. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        server.close();
        join(acceptor);
        List<Connection> open = new ArrayList<>(connections.values());
        open.forEach(Connection::shutdown);
        open.forEach(connection -> join(connection.thread));
    }

    /** Waits for {@code thread} to end, keeping an interrupt for the caller. */
    static void join(Thread thread) {
        boolean interrupted = false;
        while (true) {
            try {
                thread.join();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** A short wait before accepting again after an error such as EMFILE, which would repeat at once. */
    private static void pause() {
        try {
            Thread.sleep(10);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void acceptLoop() {
        while (!closed.get()) {
            StreamSocket socket;
            try {
                socket = server.accept();
            } catch (RuntimeException e) {
                // Closing the server socket wakes accept with an error; anything else
                // (EMFILE, ECONNABORTED) leaves the host serving the clients it has.
                if (closed.get()) {
                    return;
                }
                pause();
                continue;
            }
            Connection connection;
            try {
                socket.setSendTimeout(options.sendTimeout());
                long id = lastClientId.incrementAndGet();
                ClientInfo info;
                if (socket.isUnix()) {
                    PeerCredentials credentials = socket.peerCredentials();
                    info = new ClientInfo(id, credentials.uid(), credentials.pid());
                } else {
                    info = ClientInfo.unvouched(id);
                }
                connection = new Connection(this, socket, info);
            } catch (RuntimeException e) {
                socket.close();
                continue;
            }
            if (!admit(connection.admissionKey)) {
                connectionsRefused.incrementAndGet();
                socket.close();
                continue;
            }
            connections.put(connection.info.clientId(), connection);
            if (closed.get()) {
                connection.shutdown();
            }
            try {
                connection.thread.start();
            } catch (OutOfMemoryError e) {
                // No thread for it (the system's limit): the client goes, the host serves the others.
                connections.remove(connection.info.clientId());
                release(connection.admissionKey);
                socket.close();
                pause();
            }
        }
    }

    /** One connection of {@code uid} (or of TCP, {@link Connection#TCP_ADMISSION}) fewer. */
    private void release(long uid) {
        connectionsByUid.computeIfPresent(uid, (key, held) -> held > 1 ? held - 1 : null);
    }

    /** Counts one more connection of {@code uid}, unless it holds as many as it may already. */
    private boolean admit(long uid) {
        boolean[] admitted = new boolean[1];
        connectionsByUid.compute(uid, (key, held) -> {
            int now = held == null ? 0 : held;
            admitted[0] = now < options.maxConnectionsPerUid();
            return admitted[0] ? now + 1 : now;
        });
        return admitted[0];
    }

    /** Handles the frame {@code reader} took last; false on a violation, after closing the frame's descriptor. */
    private boolean dispatchSafely(Connection connection, FrameReader reader) {
        boolean handled;
        try {
            handled = dispatch(connection, reader);
        } catch (RuntimeException e) {
            // The decoders report malformed input as status, so this is a frame that
            // broke an assumption elsewhere: the client goes, the host stays.
            handled = false;
        }
        if (!handled) {
            StreamSocket.closeReceived(reader.fd());
        }
        return handled;
    }

    /** Handles one frame, decoded in place in the reader's copy of it; false on a violation. */
    private boolean dispatch(Connection connection, FrameReader reader) {
        int fd = reader.fd();
        IPCFrame.Decoder frame = connection.frame;
        frame.reset(reader.payloads(), reader.payloadOffset(), reader.payloadLength());
        if (frame.hasError()) {
            return false;
        }
        long requestId = frame.requestId();
        if (frame.hasMsgBindService()) {
            IPCFrame.BindService.Decoder bind = new IPCFrame.BindService.Decoder();
            if (fd >= 0 || !frame.msgBindService(bind) || bind.hasError()) {
                return false;
            }
            connection.identityClosed = true;
            ExposedService service = serviceNamed(bind.serviceName());
            connection.send(service == null ? Frames.bindServiceReply(requestId, 0, null)
                    : Frames.bindServiceReply(requestId, service.id(),
                            service.descriptor().methods().stream().map(ServiceDescriptor.Method::name).toList()), -1);
            return true;
        }
        if (frame.hasMsgInvokeMethod()) {
            IPCFrame.InvokeMethod.Decoder invoke = connection.invoke;
            if (!frame.msgInvokeMethod(invoke) || invoke.hasError()) {
                return false;
            }
            ExposedService service = services.get(invoke.serviceId());
            int methodId = invoke.methodId();
            List<ServiceDescriptor.Method> methods = service == null ? List.of() : service.descriptor().methods();
            if (methodId <= 0 || methodId > methods.size()) {
                if (fd >= 0) {
                    return false;
                }
                connection.send(Frames.invokeMethodRejected(requestId), -1);
                return true;
            }
            ServiceDescriptor.Method method = methods.get(methodId - 1);
            if (fd >= 0 && !method.takesFd()) {
                return false;
            }
            ProtoField args = invoke.field(IPCFrame.InvokeMethod.ARGS_PROTO_FIELD_NUMBER);
            Invocation invocation = connection.invocation();
            invocation.start(requestId, invoke.dropReply(), reader.payloads(), args.offset(), args.length(), fd);
            try {
                method.handler().invoke(invocation);
            } catch (RuntimeException e) {
                handlerFailures.incrementAndGet();
                invocation.failIfOpen();
            } finally {
                invocation.closeUntakenFd();
                connection.endCall(invocation, method.reusesInvocation());
            }
            return true;
        }
        if (fd >= 0) {
            return false;
        }
        if (frame.hasSetPeerIdentity()) {
            IPCFrame.SetPeerIdentity.Decoder identity = new IPCFrame.SetPeerIdentity.Decoder();
            if (!frame.setPeerIdentity(identity) || identity.hasError()) {
                return false;
            }
            if (connection.socket.isUnix() || connection.identityClosed) {
                identitiesRefused.incrementAndGet();
            } else {
                connection.identityClosed = true;
                connection.info = identified(connection, identity);
            }
            return true;
        }
        connection.send(Frames.requestError(requestId, Frames.UNKNOWN_REQUEST), -1);
        return true;
    }

    /** The client {@code identity} names, on the machine its hint (or the address it reached) identifies. */
    private static ClientInfo identified(Connection connection, IPCFrame.SetPeerIdentity.Decoder identity) {
        byte[] hint = identity.field(IPCFrame.SetPeerIdentity.MACHINE_ID_HINT_FIELD_NUMBER).asBytes();
        String reached;
        try {
            reached = connection.socket.localAddress().toString();
        } catch (RuntimeException e) {
            reached = "";
        }
        String name = identity.hasMachineName() ? identity.machineName() : "";
        return new ClientInfo(connection.info.clientId(), identity.uid(), identity.pid(),
                MachineIds.of(hint, reached), name, false);
    }

    private ExposedService serviceNamed(String name) {
        for (ExposedService service : services.values()) {
            if (service.descriptor().name().equals(name)) {
                return service;
            }
        }
        return null;
    }

    private void disconnected(Connection connection) {
        connections.remove(connection.info.clientId());
        release(connection.admissionKey);
        for (ExposedService service : services.values()) {
            try {
                service.descriptor().onClientDisconnected().accept(connection.info);
            } catch (RuntimeException e) {
                handlerFailures.incrementAndGet();
            }
        }
    }

    /** One client: its socket, owned by its I/O thread, which alone closes it. */
    static final class Connection {
        /** The key TCP connections share in the per-uid allowance: no uid of a Unix peer. */
        private static final long TCP_ADMISSION = -1L;

        private final IpcHost host;
        private final StreamSocket socket;
        /** Set once by the I/O thread, on SetPeerIdentity; read by the threads that reply. */
        private volatile ClientInfo info;
        /** The allowance this connection counts against: its Unix peer's uid, or TCP's. */
        private final long admissionKey;
        /** Whether a SetPeerIdentity would be ignored now: one came, or a service was bound. I/O thread only. */
        private boolean identityClosed;
        private final Thread thread;
        /** Decoders of the frames this connection receives, reused: only its I/O thread decodes. */
        private final IPCFrame.Decoder frame = new IPCFrame.Decoder();
        private final IPCFrame.InvokeMethod.Decoder invoke = new IPCFrame.InvokeMethod.Decoder();
        /** The invocation the next request gets: the last one, if it was spent in its handler's call. */
        private Invocation spare;
        /** Where the next socket read puts the descriptor that came with it, if any. */
        private final int[] receivedFd = new int[1];
        /** Guards sends and the socket's close, so no send uses a closed fd's number. */
        private final Object sendLock = new Object();
        /**
         * Guards the socket's shutdown and close, so no shutdown uses a closed fd's number,
         * apart from {@link #sendLock}: a send blocked on a client that stops reading holds
         * that one for as long as the client lives, and a shutdown must not wait for it (it
         * is what ends that send). Taken after {@link #sendLock} when both are.
         */
        private final Object closeLock = new Object();
        /** Written under both locks, read under either. */
        private boolean socketClosed;
        /** Encodes invocations' replies; guarded by {@link #sendLock}. */
        private final FrameWriter replies = new FrameWriter();

        private Connection(IpcHost host, StreamSocket socket, ClientInfo info) {
            this.host = host;
            this.socket = socket;
            this.info = info;
            this.admissionKey = socket.isUnix() ? Integer.toUnsignedLong(info.uid()) : TCP_ADMISSION;
            this.thread = Thread.ofPlatform().daemon().name("ipc-host-client " + info.clientId()).unstarted(this::run);
        }

        ClientInfo clientInfo() {
            return info;
        }

        /** Sends a frame; a client that is gone or fails the send is disconnected, the frame dropped. */
        void send(byte[] frame, int fd) {
            synchronized (sendLock) {
                if (socketClosed) {
                    return;
                }
                try {
                    Frames.send(socket, frame, fd);
                } catch (NativeException e) {
                    sendFailed(e);
                }
            }
        }

        /** An invocation for the next request: the spare one, or a new one (the last is still open, or not reusable). */
        private Invocation invocation() {
            Invocation invocation = spare;
            spare = null;
            return invocation != null ? invocation : new Invocation(this);
        }

        private void endCall(Invocation invocation, boolean reusable) {
            if (invocation.endCall() && reusable) {
                spare = invocation;
            }
        }

        /**
         * Replies to {@code invocation}: success (with {@code replyProto}) or failure, and
         * whether more follow. Encoded in the connection's reused buffer and sent unless the
         * client asked for no reply; nothing, and no exception, after the last reply if
         * {@code ifOpen}.
         *
         * @throws IllegalStateException after the last reply, unless {@code ifOpen}
         * @throws IllegalArgumentException if the frame would exceed Perfetto's size limit
         */
        void reply(Invocation invocation, boolean success, boolean hasMore, byte[] replyProto, int replyLength,
                   int fd, boolean ifOpen) {
            synchronized (sendLock) {
                if (invocation.dropReply()) {
                    invocation.finish(hasMore, ifOpen);
                    return;
                }
                Frames.writeInvokeMethodReply(replies.begin(), invocation.requestId(), success, hasMore, replyProto,
                        replyLength);
                int length = replies.end();
                if (!invocation.finish(hasMore, ifOpen) || socketClosed) {
                    return;
                }
                try {
                    socket.sendBytes(replies.bytes(), length, fd);
                } catch (NativeException e) {
                    sendFailed(e);
                }
            }
        }

        /** A send that failed, or that the client did not take in time, ends the connection. Called under the send lock. */
        private void sendFailed(NativeException e) {
            if (e.timedOut()) {
                host.sendTimeouts.incrementAndGet();
            }
            socket.shutdown();
        }

        /** Ends the connection: a send blocked on it fails, then its thread closes it. Never blocks. */
        void shutdown() {
            synchronized (closeLock) {
                if (!socketClosed) {
                    socket.shutdown();
                }
            }
        }

        private void run() {
            byte[] chunk = new byte[READ_SIZE];
            try (FrameReader reader = new FrameReader()) {
                boolean violated = false;
                while (!violated) {
                    int bytes;
                    try {
                        bytes = socket.receive(chunk, receivedFd);
                    } catch (IllegalStateException e) {
                        violated = true;
                        break;
                    } catch (NativeException e) {
                        break;
                    }
                    int fd = receivedFd[0];
                    if (bytes == 0) {
                        StreamSocket.closeReceived(fd);
                        break;
                    }
                    violated = !reader.feed(chunk, bytes, fd);
                    while (!violated && reader.next()) {
                        violated = !host.dispatchSafely(this, reader);
                    }
                }
                if (violated) {
                    host.violations.incrementAndGet();
                }
            } finally {
                // A send blocked on this client fails once the socket is shut down: shut it
                // first, so that the send lock comes free for the close.
                shutdown();
                synchronized (sendLock) {
                    synchronized (closeLock) {
                        socketClosed = true;
                        socket.close();
                    }
                }
                host.disconnected(this);
            }
        }
    }
}
