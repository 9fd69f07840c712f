package dev.ffmtrace.tracing.relay;

import dev.ffmtrace.memory.NativeException;
import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.memory.StreamSocket;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * One producer a relay forwards: its connection to the relay and the relay's connection
 * to the host, with a thread per direction copying bytes as they come. The first thread
 * connects to the host (so a host that is slow to answer holds up no other producer),
 * sends the SetPeerIdentity frame that names the producer, then copies what the producer
 * says; the second copies what the host says. Descriptors cannot cross TCP: one the
 * producer sends (an SMB of its own) is closed and counted, and the host, which emulates
 * shared memory on TCP, never sends one. Either side ending ends both.
 */
final class ForwardedConnection {
    private static final int READ_SIZE = 64 * 1024;

    /** What the relay counts of its forwarded producers. */
    record Counters(AtomicLong hostUnreachable, AtomicLong descriptorsDropped) {
    }

    private final StreamSocket producer;
    private final StreamAddress hostAddress;
    private final byte[] identityFrame;
    private final Counters counters;
    private final Consumer<ForwardedConnection> onEnd;
    private final Thread up;
    /** The host's socket, once connected; written by the up thread before the down thread starts. */
    private volatile StreamSocket host;
    private volatile boolean shutDown;
    private final AtomicInteger ended = new AtomicInteger();

    /** {@code onEnd} gets this connection once both its sockets are closed. */
    ForwardedConnection(StreamSocket producer, StreamAddress hostAddress, byte[] identityFrame, Counters counters,
                        Consumer<ForwardedConnection> onEnd) {
        this.producer = producer;
        this.hostAddress = hostAddress;
        this.identityFrame = identityFrame;
        this.counters = counters;
        this.onEnd = onEnd;
        this.up = Thread.ofPlatform().daemon().name("ffmtrace-relay-up").unstarted(this::connectAndCopyUp);
    }

    void start() {
        up.start();
    }

    /** Ends the forwarding: both sockets are shut down, and the threads close them. */
    void shutdown() {
        shutDown = true;
        producer.shutdown();
        StreamSocket connected = host;
        if (connected != null) {
            connected.shutdown();
        }
    }

    private void connectAndCopyUp() {
        StreamSocket connected;
        try {
            connected = StreamSocket.connect(hostAddress);
            connected.send(identityFrame);
        } catch (RuntimeException e) {
            counters.hostUnreachable().incrementAndGet();
            producer.close();
            onEnd.accept(this);
            return;
        }
        host = connected;
        if (shutDown) {
            connected.shutdown();
        }
        Thread.ofPlatform().daemon().name("ffmtrace-relay-down").start(() -> copy(connected, producer));
        copy(producer, connected);
    }

    private void copy(StreamSocket from, StreamSocket to) {
        byte[] buffer = new byte[READ_SIZE];
        int[] fds = new int[from.isUnix() ? 1 : 0];
        try {
            while (true) {
                int bytes = from.receive(buffer, fds);
                if (fds.length > 0 && fds[0] >= 0) {
                    StreamSocket.closeReceived(fds);
                    counters.descriptorsDropped().incrementAndGet();
                }
                if (bytes == 0) {
                    break;
                }
                to.sendBytes(buffer, bytes, -1);
            }
        } catch (NativeException | IllegalStateException e) {
            // A side that failed, or sent more descriptors than one: the pair ends either way.
        } finally {
            from.shutdown();
            to.shutdown();
            if (ended.incrementAndGet() == 2) {
                producer.close();
                host.close();
                onEnd.accept(this);
            }
        }
    }
}
