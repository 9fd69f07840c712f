package dev.ffmtrace.tracing.relay;

import dev.ffmtrace.ipc.BoundService;
import dev.ffmtrace.ipc.IpcClient;
import dev.ffmtrace.ipc.PeerIdentity;
import dev.ffmtrace.ipc.Reply;
import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.perfetto.protos.InitRelayRequest;
import dev.ffmtrace.perfetto.protos.SyncClockRequest;
import dev.ffmtrace.protozero.HeapBuffered;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A machine's own connection to the host's RelayPort, as traced_relay's RelayClient: it
 * names the machine (SetPeerIdentity), sends the machine's SystemInfo (InitRelay), then
 * exchanges clocks, a PING and an UPDATE, again every {@link #SYNC_PERIOD}; the host
 * writes the exchanges into each session, and a trace reader needs them to put the
 * machine's timestamps on the host's timeline. A host that is not there, goes away or
 * refuses is tried again after a pause that doubles from 1 s up to 30 s, as
 * traced_relay does, until closed. The machine's producers do not depend on it.
 *
 * <p>A relay runs one; so does a producer connected straight to a host over TCP.
 */
public final class RelayClient implements AutoCloseable {
    /** traced_relay's clock exchange period. */
    static final Duration SYNC_PERIOD = Duration.ofSeconds(30);
    private static final long FIRST_RETRY_MS = 1_000;
    private static final long MAX_RETRY_MS = 30_000;
    private static final long REPLY_TIMEOUT_MS = 10_000;

    private final StreamAddress host;
    private final PeerIdentity identity;
    private final Thread thread;
    private final Object stop = new Object();
    private boolean stopped;
    private final AtomicLong syncs = new AtomicLong();

    /** A client for the host at {@code host}, naming this machine as {@code identity}; {@link #start()} starts it. */
    public RelayClient(StreamAddress host, PeerIdentity identity) {
        this.host = host;
        this.identity = identity;
        this.thread = Thread.ofPlatform().daemon().name("ffmtrace-relay-client").unstarted(this::run);
    }

    /** Connects in the background and keeps exchanging clocks until closed. */
    public void start() {
        thread.start();
    }

    /** Clock exchanges (PING and UPDATE each) the host answered. */
    public long syncs() {
        return syncs.get();
    }

    /**
     * Waits until the host answered {@code count} clock exchanges, the client closes or
     * {@code timeout} passes; returns whether it answered them.
     */
    public boolean awaitSyncs(long count, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (stop) {
            while (syncs.get() < count && !stopped) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    break;
                }
                TimeUnit.NANOSECONDS.timedWait(stop, left);
            }
            return syncs.get() >= count;
        }
    }

    /** Stops: the connection, if any, closes, and no attempt follows. */
    @Override
    public void close() {
        synchronized (stop) {
            stopped = true;
            stop.notifyAll();
        }
        thread.interrupt();
        try {
            thread.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void run() {
        long retryMs = FIRST_RETRY_MS;
        while (!isStopped()) {
            boolean served = false;
            try (IpcClient client = IpcClient.connect(host)) {
                client.setPeerIdentity(identity);
                BoundService port = client.bindService("RelayPort").get(REPLY_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                HeapBuffered<InitRelayRequest> init = new HeapBuffered<>(InitRelayRequest.FACTORY);
                ThisMachine.describe(init.get().setSystemInfo());
                expectSuccess(client.invoke(port, "InitRelay", init.toByteArray()).get(REPLY_TIMEOUT_MS,
                        TimeUnit.MILLISECONDS));
                while (!isStopped()) {
                    expectSuccess(sync(client, port, SyncClockRequest.Phase.PING));
                    expectSuccess(sync(client, port, SyncClockRequest.Phase.UPDATE));
                    synchronized (stop) {
                        syncs.incrementAndGet();
                        stop.notifyAll();
                    }
                    served = true;
                    retryMs = FIRST_RETRY_MS;
                    if (!pause(SYNC_PERIOD.toMillis()) || !client.isConnected()) {
                        break;
                    }
                }
            } catch (Exception e) {
                // No host, a host without RelayPort, or one that went away: try again later.
            }
            pause(retryMs);
            retryMs = served ? FIRST_RETRY_MS : Math.min(MAX_RETRY_MS, retryMs * 2);
        }
    }

    private static Reply sync(IpcClient client, BoundService port, SyncClockRequest.Phase phase) throws Exception {
        HeapBuffered<SyncClockRequest> request = new HeapBuffered<>(SyncClockRequest.FACTORY);
        request.get().setPhase(phase);
        for (ClockReading reading : ClockReading.snapshot()) {
            SyncClockRequest.Clock clock = request.get().addClocks();
            clock.setClockId(reading.clockId());
            clock.setTimestamp(reading.timestamp());
        }
        return client.invoke(port, "SyncClock", request.toByteArray()).get(REPLY_TIMEOUT_MS, TimeUnit.MILLISECONDS);
    }

    private static void expectSuccess(Reply reply) {
        if (!reply.success()) {
            throw new IllegalStateException("the host refused the call");
        }
    }

    private boolean isStopped() {
        synchronized (stop) {
            return stopped;
        }
    }

    /** Waits {@code millis} unless the relay closes first; false if it did. */
    private boolean pause(long millis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        synchronized (stop) {
            while (!stopped) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return true;
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(stop, left);
                } catch (InterruptedException e) {
                    return !stopped;
                }
            }
            return false;
        }
    }
}
