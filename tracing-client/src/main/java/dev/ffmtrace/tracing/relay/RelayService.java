package dev.ffmtrace.tracing.relay;

import dev.ffmtrace.ipc.PeerIdentity;
import dev.ffmtrace.memory.ListeningSocket;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.PeerCredentials;
import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.memory.UnixAddress;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * ffmtrace's {@code traced_relay}: producers of this machine connect to its socket as to
 * a tracing service, and it forwards each of them to a host service on another machine
 * (usually over TCP), named by a SetPeerIdentity frame (the producer's pid and uid from
 * the kernel, this machine's id hint and name) sent before anything the producer says.
 * The host gives the machine an id, asks its producers for shared memory emulation (no
 * memory is shared across machines), and stamps their packets with the machine. A
 * {@link RelayClient} of its own tells the host the machine's SystemInfo and clocks.
 *
 * <p>A producer whose host connection cannot be made is disconnected; it may try again.
 * Threads: one accepting, two per forwarded producer, one for the RelayPort client.
 */
public final class RelayService implements AutoCloseable {
    /**
     * How a relay runs.
     *
     * @param producerSocket where this machine's producers connect
     * @param socketMode     the socket file's permission bits, or -1 for the umask's
     * @param host           the host service's producer socket, as {@code PERFETTO_RELAY_SOCK_NAME} names it
     * @param machineIdHint  what the host derives this machine's id from (traced_relay: the boot id)
     * @param machineName    what sessions' {@code machine_name_filter} match
     */
    public record Options(UnixAddress producerSocket, int socketMode, StreamAddress host, String machineIdHint,
                          String machineName) {
        /** Options for this machine as traced_relay describes it: its boot id and {@link ThisMachine#name()}. */
        public static Options of(UnixAddress producerSocket, StreamAddress host) {
            return new Options(producerSocket, -1, host, ThisMachine.bootId(), ThisMachine.name());
        }

        public Options withSocketMode(int mode) {
            return new Options(producerSocket, mode, host, machineIdHint, machineName);
        }

        public Options withMachineName(String name) {
            return new Options(producerSocket, socketMode, host, machineIdHint, name);
        }
    }

    private final Options options;
    private final ListeningSocket server;
    private final RelayClient relayClient;
    private final Thread acceptor;
    private final Set<ForwardedConnection> forwarded = ConcurrentHashMap.newKeySet();
    /** Notified when a forwarding ends. */
    private final Object forwardingEnded = new Object();
    private final AtomicLong producersForwarded = new AtomicLong();
    private final ForwardedConnection.Counters counters =
            new ForwardedConnection.Counters(new AtomicLong(), new AtomicLong());
    private volatile boolean closed;

    private RelayService(Options options, ListeningSocket server) {
        this.options = options;
        this.server = server;
        this.relayClient = new RelayClient(options.host(),
                new PeerIdentity(Os.pid(), Os.uid(), options.machineIdHint(), options.machineName()));
        this.acceptor = Thread.ofPlatform().daemon().name("ffmtrace-relay-accept").unstarted(this::acceptLoop);
    }

    /**
     * Listens on the producer socket and starts forwarding.
     *
     * @throws dev.ffmtrace.memory.NativeException if the socket cannot be bound
     */
    public static RelayService start(Options options) {
        RelayService relay = new RelayService(options,
                ListeningSocket.listen(options.producerSocket(), 64, options.socketMode()));
        relay.relayClient.start();
        relay.acceptor.start();
        return relay;
    }

    public UnixAddress producerSocket() {
        return options.producerSocket();
    }

    /** Producers that connected so far (each forwarded, or disconnected if the host could not be reached). */
    public long producersForwarded() {
        return producersForwarded.get();
    }

    /** Producers disconnected because the host could not be reached for them. */
    public long hostUnreachable() {
        return counters.hostUnreachable().get();
    }

    /** Descriptors producers sent (an SMB of their own), which cannot cross to the host: closed. */
    public long descriptorsDropped() {
        return counters.descriptorsDropped().get();
    }

    /** Clock exchanges the host answered on the relay's own RelayPort connection. */
    public long clockSyncs() {
        return relayClient.syncs();
    }

    /**
     * Waits until the host answered {@code count} clock exchanges, the relay closes or
     * {@code timeout} passes; returns whether it answered them.
     */
    public boolean awaitClockSyncs(long count, Duration timeout) throws InterruptedException {
        return relayClient.awaitSyncs(count, timeout);
    }

    /** Producers forwarded now. */
    public int producerCount() {
        return forwarded.size();
    }

    /** Waits until no producer is forwarded, or {@code timeout} passes; returns whether none is. */
    public boolean awaitNoProducers(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (forwardingEnded) {
            while (!forwarded.isEmpty()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(forwardingEnded, left);
            }
            return true;
        }
    }

    private void ended(ForwardedConnection connection) {
        synchronized (forwardingEnded) {
            forwarded.remove(connection);
            forwardingEnded.notifyAll();
        }
    }

    private void acceptLoop() {
        while (!closed) {
            StreamSocket producer;
            try {
                producer = server.accept();
            } catch (RuntimeException e) {
                if (closed) {
                    return;
                }
                pause();
                continue;
            }
            forward(producer);
        }
    }

    private void forward(StreamSocket producer) {
        PeerCredentials credentials;
        try {
            credentials = producer.peerCredentials();
        } catch (RuntimeException e) {
            producer.close();
            return;
        }
        PeerIdentity identity = new PeerIdentity(credentials.pid(), credentials.uid(), options.machineIdHint(),
                options.machineName());
        ForwardedConnection connection = new ForwardedConnection(producer, options.host(), identity.frame(), counters,
                this::ended);
        forwarded.add(connection);
        producersForwarded.incrementAndGet();
        connection.start();
        if (closed) {
            connection.shutdown();
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

    /** Stops accepting, ends every forwarded producer and the RelayPort client. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        server.close();
        try {
            acceptor.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        forwarded.forEach(ForwardedConnection::shutdown);
        relayClient.close();
    }
}
