package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.heapprofd.wire.ClientConfiguration;
import dev.ffmtrace.memory.NativeException;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.PeerCredentials;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.ListeningSocket;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.shmring.SharedRingBuffer;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;

/**
 * heapprofd's service, in-process: listens on a socket, makes each client's handshake
 * (takes its /proc/self/maps and mem fds, makes its SharedRingBuffer, sends the
 * configuration with the ring's fd), then hands the client to a thread of its own that
 * reads its ring, unwinds its records and keeps its books. The client's pid comes from
 * the socket's peer credentials, never from what it sends.
 *
 * <p>Java stacks ({@code AllocMetadata.ARCH_JAVA}) are decoded; native x86-64 stacks are
 * unwound by frame pointers and symbolized from the ELF files the process maps (see
 * {@code Unwinder}), which needs the program built with {@code -fno-omit-frame-pointer}. A
 * client that dies or sends garbage costs only itself: its thread counts what it could not
 * read and ends when its socket closes.
 */
public final class HeapprofdService implements AutoCloseable {
    private final ListeningSocket server;
    private final ClientConfiguration configuration;
    private final long ringSize;
    private final ClientFilter filter;
    private volatile long rejected;
    /** The uid whose processes are profiled, or -1 for any. */
    private final int onlyUid;
    private final AtomicLong otherUsers = new AtomicLong();
    private final List<ClientConnection> clients = new CopyOnWriteArrayList<>();
    /** The libraries its clients map, read once for all of them. */
    private final ElfFiles elfFiles = new ElfFiles();
    private final List<StreamSocket> sockets = new CopyOnWriteArrayList<>();
    private final Thread acceptor;
    private volatile boolean closed;

    private HeapprofdService(ListeningSocket server, ClientConfiguration configuration, long ringSize,
                             ClientFilter filter, int onlyUid) {
        this.server = server;
        this.onlyUid = onlyUid;
        this.configuration = configuration;
        this.ringSize = ringSize;
        this.filter = filter;
        this.acceptor = Thread.ofPlatform().daemon().name("heapprofd accept").unstarted(this::acceptClients);
    }

    /**
     * Starts a service at {@code address} that sends every client of this process's uid
     * {@code configuration} and gives it a ring of {@code ringSize} bytes.
     *
     * @param ringSize a power of two, at least a page, as SharedRingBuffer's sizes are
     */
    public static HeapprofdService start(UnixAddress address, ClientConfiguration configuration, long ringSize) {
        return start(address, configuration, ringSize, (pid, cmdline) -> true);
    }

    /**
     * Whose processes a service profiles. The socket's peer credentials say (SO_PEERCRED),
     * checked before the client's handshake is read: an abstract socket has no
     * permissions, and its name shows in {@code /proc/net/unix}.
     */
    public enum Users {
        /** Processes of the service's own uid: the default. */
        OWN,
        /** Processes of any uid: their heap profiles end up in this user's trace. */
        ANY
    }

    /**
     * Which clients a service profiles, by their pid (from the socket, trusted) and the
     * first word of their {@code /proc/PID/cmdline} (empty if it cannot be read).
     */
    @FunctionalInterface
    public interface ClientFilter {
        /** Whether the client is profiled; one that is not has its socket closed before the configuration is sent. */
        boolean accepts(int pid, String cmdline);
    }

    /**
     * {@link #start(UnixAddress, ClientConfiguration, long)}, profiling only the clients
     * {@code filter} accepts.
     */
    public static HeapprofdService start(UnixAddress address, ClientConfiguration configuration, long ringSize,
                                         ClientFilter filter) {
        return start(address, configuration, ringSize, filter, Users.OWN);
    }

    /**
     * {@link #start(UnixAddress, ClientConfiguration, long, ClientFilter)}, profiling the
     * processes of {@code users}.
     */
    public static HeapprofdService start(UnixAddress address, ClientConfiguration configuration, long ringSize,
                                         ClientFilter filter, Users users) {
        Objects.requireNonNull(configuration, "configuration");
        Objects.requireNonNull(filter, "filter");
        Objects.requireNonNull(users, "users");
        HeapprofdService service = new HeapprofdService(ListeningSocket.listen(address, 16), configuration, ringSize,
                filter, users == Users.OWN ? Os.uid() : -1);
        service.acceptor.start();
        return service;
    }

    /** Where clients connect. */
    public UnixAddress address() {
        return (UnixAddress) server.address();
    }

    private void acceptClients() {
        while (!closed) {
            StreamSocket socket;
            try {
                socket = server.accept();
            } catch (RuntimeException e) {
                return;
            }
            sockets.add(socket);
            // A platform thread: a virtual one blocked in the socket's native receive would pin its carrier.
            Thread.ofPlatform().daemon().name("heapprofd client").start(() -> serve(socket));
        }
    }

    /** The handshake, then the client's records until its socket closes; a failed handshake closes the socket. */
    private void serve(StreamSocket socket) {
        ClientConnection connection;
        try {
            connection = handshake(socket);
        } catch (RuntimeException e) {
            socket.close();
            sockets.remove(socket);
            return;
        }
        connection.run();
        sockets.remove(socket);
    }

    private ClientConnection handshake(StreamSocket socket) {
        PeerCredentials peer = socket.peerCredentials();
        if (onlyUid != -1 && peer.uid() != onlyUid) {
            otherUsers.incrementAndGet();
            throw new IllegalStateException("a client of uid " + peer.uid() + ", not " + onlyUid);
        }
        StreamSocket.Received hello = socket.receive(new byte[1], 2);
        if (hello.bytes() != 1 || hello.fds().length != 2) {
            StreamSocket.closeReceived(hello.fds());
            throw new IllegalStateException("a client's handshake is one byte with two fds");
        }
        if (!filter.accepts(peer.pid(), cmdline(peer.pid()))) {
            StreamSocket.closeReceived(hello.fds());
            rejected++;
            throw new IllegalStateException("a client the session does not profile");
        }
        // The client's /proc/self/maps and /proc/self/mem, for unwinding its native stacks.
        int mapsFd = hello.fds()[0];
        int memFd = hello.fds()[1];
        SharedRingBuffer ring;
        ClientConnection connection;
        try {
            ring = SharedRingBuffer.create(ringSize);
        } catch (RuntimeException e) {
            StreamSocket.closeReceived(hello.fds());
            throw e;
        }
        // The reader sleeps until the client's first record: the client must wake it.
        ring.setReaderPaused();
        try {
            connection = new ClientConnection(processName(peer.pid()), peer.pid(), peer.uid(), socket, ring, mapsFd, memFd,
                    elfFiles);
        } catch (RuntimeException e) {
            ring.close();
            StreamSocket.closeReceived(hello.fds());
            throw e;
        }
        // Listed before the client has its ring: once it can write, clientsGone() waits for it.
        clients.add(connection);
        try {
            byte[] bytes = new byte[ClientConfiguration.SIZE];
            configuration.encodeTo(MemorySegment.ofArray(bytes), 0);
            socket.send(bytes, ring.fd());
        } catch (RuntimeException e) {
            clients.remove(connection);
            connection.release();
            throw e;
        }
        return connection;
    }

    /**
     * The heap profile of every client so far, as folded stacks, one line per callsite:
     * {@code process;root_frame;...;leaf_frame BYTES}, unreleased bytes (allocated minus
     * freed) or allocated ones. The process is its command name and pid.
     */
    public List<String> folded(boolean unreleased) {
        List<String> lines = new ArrayList<>();
        for (ClientConnection client : clients) {
            String process = client.process;
            UnaryOperator<Frame> names = client.frameNames();
            for (HeapBooks books : new TreeMap<>(client.heaps).values()) {
                for (Map.Entry<String, Long> callsite : books.folded(unreleased, names).entrySet()) {
                    String stack = callsite.getKey().isEmpty() ? process : process + ";" + callsite.getKey();
                    lines.add(stack + " " + callsite.getValue());
                }
            }
        }
        return lines;
    }

    /**
     * What the service read from one client, or from every client so far.
     *
     * @param records records read and booked
     * @param malformed records, or their Java stacks, that were not what they claimed
     * @param overflowed allocations dropped, or booked at the root, because a client's books were full
     * @param nativeStacks native stacks unwound
     * @param unwindingErrors native stacks whose walk failed before its end (a word it could not
     *        read, a pc outside every mapping, too many frames, registers of another architecture),
     *        booked with the frames found under an {@code ERROR} frame; a walk that ends at a frame
     *        built without frame pointers is no error
     */
    public record Stats(long records, long malformed, long overflowed, long nativeStacks, long unwindingErrors) {
        Stats plus(Stats other) {
            return new Stats(records + other.records, malformed + other.malformed, overflowed + other.overflowed,
                    nativeStacks + other.nativeStacks, unwindingErrors + other.unwindingErrors);
        }
    }

    /** The {@link Stats} of every client together, so far. */
    public Stats totals() {
        Stats totals = new Stats(0, 0, 0, 0, 0);
        for (Stats stats : processStats().values()) {
            totals = totals.plus(stats);
        }
        return totals;
    }

    /**
     * The {@link Stats} of each client so far, by process as {@link #folded} names it
     * (command name and pid), the per-process stats a heap profile reports.
     */
    public Map<String, Stats> processStats() {
        Map<String, Stats> stats = new LinkedHashMap<>();
        for (ClientConnection client : clients) {
            Stats own = new Stats(client.records(), client.malformed(), client.overflowed(), client.nativeStacks(),
                    client.unwindingErrors());
            stats.merge(client.process, own, Stats::plus);
        }
        return stats;
    }

    /** Clients refused, before their handshake was read, for being another user's processes. */
    public long otherUserClients() {
        return otherUsers.get();
    }

    /** Clients whose handshake the filter refused, so far. */
    public long rejectedClients() {
        return rejected;
    }

    /**
     * Waits until every client that made the handshake so far has gone and its records are
     * booked (a program that exited: its client's connection reads what is left in its ring).
     *
     * @return whether they all had within {@code timeout}
     */
    public boolean awaitClientsGone(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (ClientConnection client : clients) {
            try {
                client.gone().get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                return false;
            } catch (ExecutionException e) {
                throw new IllegalStateException("a client connection never fails its end", e);
            }
        }
        return true;
    }

    /** Clients that made the handshake, so far. */
    public int clientCount() {
        return clients.size();
    }

    /** Whether every client that made the handshake has gone and its records are booked. */
    public boolean clientsGone() {
        for (ClientConnection client : clients) {
            if (!client.isClosed()) {
                return false;
            }
        }
        return true;
    }

    /** The clients so far, those that have gone included, in the order they connected. */
    List<ClientConnection> clients() {
        return clients;
    }

    /** The configuration every client gets. */
    ClientConfiguration configuration() {
        return configuration;
    }

    /** The first word of a process's command line, without its NUL; empty if it cannot be read. */
    private static String cmdline(int pid) {
        try {
            byte[] bytes = Files.readAllBytes(Path.of("/proc", Integer.toString(pid), "cmdline"));
            int end = 0;
            while (end < bytes.length && end < 4096 && bytes[end] != 0) {
                end++;
            }
            return new String(bytes, 0, end, StandardCharsets.UTF_8);
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }

    private static String processName(int pid) {
        try {
            List<String> comm = Files.readAllLines(Path.of("/proc", Integer.toString(pid), "comm"), StandardCharsets.UTF_8);
            return comm.isEmpty() ? "pid" : comm.getFirst();
        } catch (IOException | RuntimeException e) {
            return "pid";
        }
    }

    /** Stops accepting and closes every client's socket; their threads read what is left and end. */
    @Override
    public void close() {
        closed = true;
        server.close();
        for (StreamSocket socket : sockets) {
            try {
                socket.close();
            } catch (NativeException e) {
                // Closed by its own thread at the same moment.
            }
        }
        try {
            acceptor.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
