package dev.ffmtrace.tracing.producer;

import dev.ffmtrace.ipc.PeerIdentity;
import dev.ffmtrace.ipc.Reply;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.memory.TcpAddress;
import dev.ffmtrace.perfetto.protos.ActivateTriggersRequest;
import dev.ffmtrace.perfetto.protos.InitializeConnectionRequest;
import dev.ffmtrace.perfetto.protos.RegisterDataSourceRequest;
import dev.ffmtrace.perfetto.protos.UnregisterDataSourceRequest;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.producer.internal.CloseHandshake;
import dev.ffmtrace.tracing.producer.internal.DataSourceHandler;
import dev.ffmtrace.tracing.relay.RelayClient;
import dev.ffmtrace.tracing.relay.ThisMachine;
import dev.ffmtrace.tracing.smb.SharedMemoryArbiter;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A producer's connection to a Perfetto tracing service (Perfetto's
 * {@code ProducerIPCClientImpl} with the SDK's producer around it): connects to the
 * producer socket, binds {@code ProducerPort}, sends InitializeConnection, opens the
 * GetAsyncCommand stream and registers the application's data sources; then follows the
 * service's commands. SetupTracing brings the shared memory buffer (a sealed memfd,
 * checked and mapped), Setup/StartDataSource start data source instances whose
 * {@link TraceWriter}s write into it and commit chunks and patches with CommitData,
 * StopDataSource stops them (answered with NotifyDataSourceStopped once the handler is
 * done), Flush commits what idle writers hold and then acknowledges the flush,
 * ClearIncrementalState moves the instances' clear counters.
 *
 * <p><b>Over TCP</b> (a {@code host:port} socket, a service on another machine) there is
 * no shared memory. The connection names its machine first, as {@code traced_relay} does
 * (SetPeerIdentity: pid, uid, the kernel's boot id, {@code PERFETTO_MACHINE_NAME}); the
 * service answers with shared memory emulation, and the writers write into a 1 MiB buffer
 * of this process whose chunks travel inside CommitData, split to fit Perfetto's 128 KiB
 * IPC frames. A {@link RelayClient} beside it does what a relay would do for the
 * machine: its SystemInfo and the clock exchanges without which a trace reader cannot
 * place the machine's timestamps.
 *
 * <p><b>Never blocks the application.</b> Writers commit under their arbiter's lock;
 * the connection only encodes the request and queues it; one sender thread writes the
 * socket. A full buffer drops events as the writers' {@code BufferExhaustedPolicy} says.
 *
 * <p><b>Never trusts the service.</b> Every command is decoded defensively; one that does
 * not decode or does not fit the state (SetupTracing without a sealed memfd of a usable
 * size, a data source never registered, an unknown instance, a config without a target
 * buffer) is counted in {@link Stats#commandsRejected()} and ignored.
 *
 * <p><b>Reconnects.</b> When the service goes away, started instances are stopped, their
 * writers closed (a {@code TrackEventWriter} over one counts its events as discarded),
 * the buffer unmapped; the connection retries with Perfetto's back-off (1 s more per
 * attempt up to 10 s, then 30 s) and registers the data sources again.
 *
 * <p>Each connection to the service is a {@code ProducerEndpoint}, which follows the
 * commands; this class makes them one after another, on its sender thread, and sends
 * what they queue.
 *
 * <p>Over 600 lines: {@link Options}, {@link RetryDelays} and {@link Stats}, about 100,
 * stay nested, since {@code ProducerConnection.Options} and the others are the names
 * applications and the docs use; the rest is the public API and the sender thread (the
 * commands are {@code ProducerEndpoint}'s, the handshake {@code ProducerHandshake}'s, the
 * close's race with the sender {@code CloseHandshake}'s).
 */
public final class ProducerConnection implements AutoCloseable {
    /** Commits queued beyond this are dropped (and counted) rather than growing without bound. */
    private static final int MAX_QUEUED_COMMITS = 64 * 1024;
    /** How long close() lets the sender deliver what was queued before it gives up on the socket. */
    private static final long CLOSE_TIMEOUT_MILLIS = 2_000;
    private static final byte[] EMPTY = new byte[0];

    /**
     * How to connect.
     *
     * @param producerName         the name the service knows the producer by
     * @param socket               the service's producer socket, a Unix socket or a TCP
     *                             endpoint; null for {@link #defaultProducerSocket()}
     * @param smbSizeHintBytes     the SMB size asked for (0: the service's default)
     * @param smbPageSizeHintBytes the SMB page size asked for (0: the service's default)
     * @param scrapingMode         whether the service may read chunks still being written on a flush
     * @param producerProvidedSmbBytes if positive, the producer makes a sealed memfd SMB of
     *                             this size and offers it with InitializeConnection (not over TCP)
     * @param retryDelays          the back-off between connection attempts: the first delay, the
     *                             increment, the cap before the long delay, and the long delay
     * @param localCommits         a service in this process to commit into by calls, or null
     */
    public record Options(String producerName, StreamAddress socket, int smbSizeHintBytes, int smbPageSizeHintBytes,
                          InitializeConnectionRequest.ProducerSMBScrapingMode scrapingMode,
                          int producerProvidedSmbBytes, RetryDelays retryDelays, LocalCommits localCommits) {
        public Options {
            Objects.requireNonNull(producerName, "producerName");
            Objects.requireNonNull(scrapingMode, "scrapingMode");
            Objects.requireNonNull(retryDelays, "retryDelays");
            if (smbSizeHintBytes < 0 || smbPageSizeHintBytes < 0 || producerProvidedSmbBytes < 0) {
                throw new IllegalArgumentException("sizes cannot be negative");
            }
        }

        /** A producer named {@code producerName} on the default socket, with the service's SMB and scraping on. */
        public static Options named(String producerName) {
            return new Options(producerName, null, 0, 0,
                    InitializeConnectionRequest.ProducerSMBScrapingMode.SMB_SCRAPING_ENABLED, 0, RetryDelays.PERFETTO,
                    null);
        }

        public Options withSocket(StreamAddress socket) {
            return new Options(producerName, socket, smbSizeHintBytes, smbPageSizeHintBytes, scrapingMode,
                    producerProvidedSmbBytes, retryDelays, localCommits);
        }

        public Options withSmbHints(int sizeBytes, int pageSizeBytes) {
            return new Options(producerName, socket, sizeBytes, pageSizeBytes, scrapingMode,
                    producerProvidedSmbBytes, retryDelays, localCommits);
        }

        public Options withProducerProvidedSmb(int sizeBytes) {
            return new Options(producerName, socket, smbSizeHintBytes, smbPageSizeHintBytes, scrapingMode,
                    sizeBytes, retryDelays, localCommits);
        }

        public Options withRetryDelays(RetryDelays retryDelays) {
            return new Options(producerName, socket, smbSizeHintBytes, smbPageSizeHintBytes, scrapingMode,
                    producerProvidedSmbBytes, retryDelays, localCommits);
        }

        /** Commits as calls into {@code service}, when it is the one the socket leads to. */
        public Options withLocalCommits(LocalCommits service) {
            return new Options(producerName, socket, smbSizeHintBytes, smbPageSizeHintBytes, scrapingMode,
                    producerProvidedSmbBytes, retryDelays, Objects.requireNonNull(service, "service"));
        }
    }

    /** Back-off between connection attempts: {@code first}, growing by {@code step} while under {@code cap}, then {@code longDelay}. */
    public record RetryDelays(Duration first, Duration step, Duration cap, Duration longDelay) {
        /** Perfetto's IPC client: 1 s, 2 s, ... 10 s, then 30 s. */
        public static final RetryDelays PERFETTO = new RetryDelays(Duration.ofSeconds(1), Duration.ofSeconds(1),
                Duration.ofSeconds(10), Duration.ofSeconds(30));

        long next(long previousNanos) {
            if (previousNanos == 0) {
                return first.toNanos();
            }
            return previousNanos < cap.toNanos() ? previousNanos + step.toNanos() : longDelay.toNanos();
        }
    }

    /**
     * Counters since the connection was made.
     *
     * @param connections              sessions with the service that got through InitializeConnection
     * @param connectFailures          attempts that failed (no socket, no ProducerPort, init refused)
     * @param disconnections           sessions lost
     * @param commandsRejected         service commands ignored as malformed or out of place
     * @param commitsDropped           commit requests not sent: no service, or the send queue full
     * @param writersClosedByDisconnect writers still open when their session was lost
     * @param handlerFailures          data source handler calls that threw
     * @param writersRefused           writers asked for when all writer ids were taken
     * @param localCommits             commit requests handed to a service in this process by
     *                                 a call ({@link Options#withLocalCommits}), not sent
     * @param triggersDropped          trigger activations never sent: no service within their
     *                                 time to live, or more waiting than are kept
     */
    public record Stats(long connections, long connectFailures, long disconnections, long commandsRejected,
                        long commitsDropped, long writersClosedByDisconnect, long handlerFailures,
                        long writersRefused, long localCommits, long triggersDropped) {
    }

    /** A data source the application registered, and the handler that hears about its instances. */
    record Registration(DataSourceDescriptor descriptor, DataSourceHandler handler) {
    }

    /** Triggers activated while no service was connected, sent on connection unless {@code deadline} (System.nanoTime) passed. */
    private record PendingTriggers(List<String> names, long deadline) {
    }

    /** Activations kept while not connected; older ones give way to newer. */
    private static final int MAX_PENDING_TRIGGERS = 64;

    private final Options options;
    private final StreamAddress address;
    private final Map<String, Registration> dataSources = new LinkedHashMap<>();
    /** Guarded by this. */
    private final ArrayDeque<PendingTriggers> pendingTriggers = new ArrayDeque<>();
    /** What the sender thread sends, in order. */
    private final OutgoingQueue<ProducerEndpoint> outgoing = new OutgoingQueue<>(MAX_QUEUED_COMMITS);
    /** The close, and the session the sender serves: so that close() interrupts no serving sender. */
    private final CloseHandshake<ProducerEndpoint> closing = new CloseHandshake<>();
    private final Thread sender;
    /** Over TCP: how the connection names this machine (read once); else null. */
    private final PeerIdentity machine;
    /** Over TCP: the machine's clock exchanges with the host; else null. */
    private final RelayClient clockLink;
    /** The session with the service now, or null. Guarded by this. */
    private ProducerEndpoint session;
    private final ProducerCounters counters = new ProducerCounters();

    private ProducerConnection(Options options, StreamAddress address) {
        this.options = options;
        this.address = address;
        this.machine = address instanceof TcpAddress ? thisMachine() : null;
        this.clockLink = machine != null ? new RelayClient(address, machine) : null;
        this.sender = Thread.ofPlatform().daemon().name("perfetto-producer " + options.producerName())
                .unstarted(this::run);
    }

    /**
     * Starts connecting to the service in the background: returns at once, whether or not
     * the service is there (the connection keeps trying). Register data sources before or
     * after.
     *
     * @throws IllegalArgumentException if the default socket's name does not parse
     */
    public static ProducerConnection connect(Options options) {
        StreamAddress address = options.socket() != null ? options.socket() : defaultProducerSocket();
        ProducerConnection connection = new ProducerConnection(options, address);
        connection.sender.start();
        if (connection.clockLink != null) {
            connection.clockLink.start();
        }
        return connection;
    }

    /** How a producer on TCP names its machine: as traced_relay names its own. */
    private static PeerIdentity thisMachine() {
        return new PeerIdentity(Os.pid(), Os.uid(), ThisMachine.bootId(), ThisMachine.name());
    }

    /**
     * The producer socket as Perfetto's clients find it: PERFETTO_PRODUCER_SOCK_NAME (the
     * first of a comma-separated list; {@code @name} for an abstract socket), else
     * {@code /run/perfetto/traced-producer.sock} if {@code /run/perfetto} is usable, else
     * {@code /tmp/perfetto-producer}.
     *
     * @throws IllegalArgumentException if the name does not parse (see {@link #socketAddress})
     */
    public static StreamAddress defaultProducerSocket() {
        String name = System.getenv("PERFETTO_PRODUCER_SOCK_NAME");
        if (name == null || name.isEmpty()) {
            Path run = Path.of("/run/perfetto");
            name = Files.isDirectory(run) && Files.isWritable(run) && Files.isExecutable(run)
                    ? "/run/perfetto/traced-producer.sock" : "/tmp/perfetto-producer";
        }
        return socketAddress(name.split(",", -1)[0]);
    }

    /**
     * A socket name as Perfetto writes them: a path, {@code @name} for an abstract socket,
     * {@code host:port} or {@code [v6]:port} for TCP.
     *
     * @throws IllegalArgumentException for a vsock address, or a TCP one that does not parse
     */
    public static StreamAddress socketAddress(String name) {
        return StreamAddress.parse(name);
    }

    /** The producer socket this connection uses. */
    public StreamAddress address() {
        return address;
    }

    /**
     * Registers a data source (now with the service if connected, and again on every
     * reconnection); the handler hears about its instances. For the SDK, whose
     * {@code DataSource} is what applications register: the handler's type is in a package
     * exported to the SDK (and the service's warm-up) only.
     *
     * @throws IllegalArgumentException if a data source of that name is registered already
     */
    @SuppressWarnings("exports")
    public void registerDataSource(DataSourceDescriptor descriptor, DataSourceHandler handler) {
        Objects.requireNonNull(handler, "handler");
        synchronized (this) {
            if (dataSources.putIfAbsent(descriptor.name(), new Registration(descriptor, handler)) != null) {
                throw new IllegalArgumentException("data source " + descriptor.name() + " is registered already");
            }
            if (session != null) {
                sendRegisterDataSource(session, descriptor);
            }
        }
    }

    /** Unregisters a data source; its running instances go on until the service stops them. */
    public void unregisterDataSource(String name) {
        synchronized (this) {
            if (dataSources.remove(name) != null && session != null) {
                HeapBuffered<UnregisterDataSourceRequest> request = new HeapBuffered<>(UnregisterDataSourceRequest.FACTORY);
                request.get().setDataSourceName(name);
                outgoing.add(session, "UnregisterDataSource", request.toByteArray(), null);
            }
        }
    }

    /**
     * Activates the triggers {@code names} (Perfetto's ActivateTriggers): the service's
     * sessions that listen to one of them start, stop or snapshot as their configs say.
     * Sent now if connected; otherwise kept until a connection is made, for at most
     * {@code timeToLive}, as Perfetto's SDK keeps them, and counted in
     * {@link Stats#triggersDropped()} if none is.
     */
    public void activateTriggers(List<String> names, Duration timeToLive) {
        List<String> copy = List.copyOf(names);
        if (copy.isEmpty()) {
            return;
        }
        synchronized (this) {
            if (session != null) {
                sendTriggers(session, copy);
                return;
            }
            if (pendingTriggers.size() == MAX_PENDING_TRIGGERS) {
                pendingTriggers.pollFirst();
                counters.triggersDropped.incrementAndGet();
            }
            pendingTriggers.addLast(new PendingTriggers(copy, System.nanoTime() + timeToLive.toNanos()));
        }
    }

    /** Sends the triggers kept while not connected that may still go; the caller holds this. */
    private void sendPendingTriggers(ProducerEndpoint target) {
        long now = System.nanoTime();
        for (PendingTriggers pending : pendingTriggers) {
            if (pending.deadline() - now >= 0) {
                sendTriggers(target, pending.names());
            } else {
                counters.triggersDropped.incrementAndGet();
            }
        }
        pendingTriggers.clear();
    }

    private void sendTriggers(ProducerEndpoint target, List<String> names) {
        byte[] args = ProducerEndpoint.encode(ActivateTriggersRequest.FACTORY, message -> names.forEach(message::addTriggerNames));
        outgoing.add(target, "ActivateTriggers", args, null);
    }

    /**
     * Perfetto's Sync: completes once the service has handled everything sent before it
     * (true), or false if there is no service or it failed.
     */
    public CompletableFuture<Boolean> sync() {
        CompletableFuture<Reply> reply = new CompletableFuture<>();
        synchronized (this) {
            if (session == null) {
                return CompletableFuture.completedFuture(false);
            }
            outgoing.add(session, "Sync", EMPTY, reply);
        }
        return reply.thenApply(Reply::success);
    }

    /** Whether a session with the service is up (InitializeConnection went through and the socket is open). */
    public boolean isConnected() {
        ProducerEndpoint current;
        synchronized (this) {
            current = session;
        }
        return current != null && current.isLive() && current.client().isConnected();
    }

    /**
     * Over TCP, waits until the host has had this machine's clocks once (a trace read
     * before that cannot place the machine's timestamps on the host's timeline: a
     * short-lived program waits for it before it exits); true at once on a Unix socket.
     *
     * @return whether the host has the clocks
     */
    public boolean awaitClockSync(Duration timeout) throws InterruptedException {
        return clockLink == null || clockLink.awaitSyncs(1, timeout);
    }

    /** Waits until {@link #isConnected()} or the timeout passes; returns whether connected. */
    public boolean awaitConnected(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (this) {
            // Woken when a session is made and when the connection closes.
            while (!isConnected()) {
                long left = deadline - System.nanoTime();
                if (left <= 0 || closing.isClosed()) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
            return true;
        }
    }

    /** The shared memory arbiter's counters of the current session, or null without one. */
    public SharedMemoryArbiter.Stats arbiterStats() {
        ProducerEndpoint current;
        synchronized (this) {
            current = session;
        }
        return current == null ? null : current.arbiterStats();
    }

    public Stats stats() {
        return counters.snapshot();
    }

    /**
     * Disconnects: started instances are stopped (their handlers told), writers closed,
     * then what is queued for the service (their last commits, NotifyDataSourceStopped of
     * instances that just stopped) is sent, the socket closed and the buffer unmapped;
     * waits for the connection's threads to end. A service that does not read within 2 s
     * loses what is left, counted in {@link Stats#commitsDropped()}.
     */
    @Override
    public void close() {
        if (!closing.close()) {
            return;
        }
        synchronized (this) {
            notifyAll();
        }
        // A serving sender is woken from its wait for messages; one connecting or waiting
        // to retry is interrupted (see CloseHandshake). One whose session closes after this
        // read sees the close before it connects again.
        outgoing.wake();
        if (closing.unclosed() == null) {
            sender.interrupt();
        }
        boolean interrupted = false;
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CLOSE_TIMEOUT_MILLIS);
        while (true) {
            try {
                long left = deadline - System.nanoTime();
                if (left > 0) {
                    TimeUnit.NANOSECONDS.timedJoin(sender, left);
                    if (!sender.isAlive()) {
                        break;
                    }
                }
                // The service stopped reading: shutting the socket down fails the blocked send.
                ProducerEndpoint stuck = closing.unclosed();
                if (stuck != null) {
                    stuck.client().close();
                }
                sender.join();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (clockLink != null) {
            clockLink.close();
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    // ---- the sender thread: connects, sends, reconnects ----

    private void run() {
        long delay = 0;
        try {
            while (!closing.isClosed()) {
                ProducerEndpoint current = open();
                if (current == null && closing.isClosed()) {
                    break;
                }
                if (current == null) {
                    counters.connectFailures.incrementAndGet();
                    delay = options.retryDelays().next(delay);
                    TimeUnit.NANOSECONDS.sleep(delay);
                    continue;
                }
                delay = 0;
                try {
                    serve(current);
                } finally {
                    tearDown(current);
                }
                if (!closing.isClosed()) {
                    counters.disconnections.incrementAndGet();
                }
            }
        } catch (InterruptedException e) {
            // close() interrupts a sender that connects or waits; no session is open.
        } finally {
            dropQueued();
        }
    }

    /**
     * Connects and makes the new session current, queuing what it starts with (the data
     * sources, the triggers kept meanwhile); null if the service is not there or the
     * connection closed meanwhile.
     */
    private ProducerEndpoint open() throws InterruptedException {
        ProducerHandshake.Accepted accepted = ProducerHandshake.connect(address, machine, options);
        if (accepted == null) {
            return null;
        }
        ProducerEndpoint opened = new ProducerEndpoint(accepted.client(), accepted.port(), accepted.emulated(),
                accepted.providedSmb(), outgoing, counters, this::registration, options.localCommits());
        if (!closing.open(opened)) {
            // close() may have missed the session and interrupted us: nothing was sent on it yet.
            opened.close();
            return null;
        }
        try {
            synchronized (this) {
                session = opened;
                counters.connections.incrementAndGet();
                opened.client().invoke(opened.port(), "GetAsyncCommand", EMPTY, -1, opened::onCommand);
                for (Registration registration : dataSources.values()) {
                    sendRegisterDataSource(opened, registration.descriptor());
                }
                sendPendingTriggers(opened);
                notifyAll();
            }
        } catch (RuntimeException e) {
            // The service went between the handshake and the first requests: the session was
            // already current, and the buffer it took is unmapped with it.
            tearDown(opened);
            return null;
        }
        return opened;
    }

    /** Sends queued messages until the session is lost or the connection closed: each wakes the wait. */
    private void serve(ProducerEndpoint current) {
        current.client().disconnection().thenRun(outgoing::wake);
        while (!closing.isClosed() && current.client().isConnected()) {
            OutgoingQueue.Message<ProducerEndpoint> message;
            try {
                message = outgoing.take();
            } catch (InterruptedException e) {
                // Only close() interrupts, and it closed the handshake first.
                continue;
            }
            if (message != null) {
                send(message);
            }
        }
    }

    /** Sends what is queued, in order, while the service is connected; close() bounds the time. */
    private void drain(ProducerEndpoint current) {
        OutgoingQueue.Message<ProducerEndpoint> message;
        while (current.client().isConnected() && (message = outgoing.peek()) != null) {
            send(message);
        }
    }

    /** Sends the oldest message, or drops it if its session is gone, and frees its slot. */
    private void send(OutgoingQueue.Message<ProducerEndpoint> message) {
        ProducerEndpoint target = message.session;
        try {
            if (!target.isLive()) {
                drop(message);
            } else if (message.reply == null) {
                target.client().invokeDropReply(target.port(), message.method, message.args, message.length);
            } else {
                CompletableFuture<Reply> reply = message.reply;
                target.client().invoke(target.port(), message.method, message.args).whenComplete((answer, error) -> {
                    // No reply of these methods carries a descriptor: one a service sends anyway is closed.
                    if (error == null) {
                        StreamSocket.closeReceived(answer.fd());
                    }
                    reply.complete(error == null
                            ? new Reply(answer.success(), false, answer.replyProto(), -1)
                            : new Reply(false, false, EMPTY, -1));
                });
            }
        } catch (RuntimeException e) {
            // A service that did not list the method in its BindServiceReply.
            drop(message);
        } finally {
            outgoing.release(message);
        }
    }

    private void drop(OutgoingQueue.Message<ProducerEndpoint> message) {
        if (message.isCommit) {
            counters.commitsDropped.incrementAndGet();
        }
        if (message.reply != null) {
            message.reply.complete(new Reply(false, false, EMPTY, -1));
        }
    }

    private void dropQueued() {
        OutgoingQueue.Message<ProducerEndpoint> message;
        while ((message = outgoing.peek()) != null) {
            drop(message);
            outgoing.release(message);
        }
    }

    private void sendRegisterDataSource(ProducerEndpoint target, DataSourceDescriptor descriptor) {
        HeapBuffered<RegisterDataSourceRequest> request = new HeapBuffered<>(RegisterDataSourceRequest.FACTORY);
        dev.ffmtrace.perfetto.protos.DataSourceDescriptor message = request.get().setDataSourceDescriptor();
        message.setName(descriptor.name());
        if (descriptor.willNotifyOnStop()) {
            message.setWillNotifyOnStop(true);
        }
        if (descriptor.willNotifyOnStart()) {
            message.setWillNotifyOnStart(true);
        }
        if (descriptor.handlesIncrementalStateClear()) {
            message.setHandlesIncrementalStateClear(true);
        }
        if (descriptor.noFlush()) {
            message.setNoFlush(true);
        }
        byte[] program = descriptor.protoVmProgram();
        if (program != null) {
            message.setProtovmProgram(program);
        }
        // Perfetto's producer asks for a reply it only logs: the service's verdict changes nothing here.
        CompletableFuture<Reply> reply = new CompletableFuture<>();
        outgoing.add(target, "RegisterDataSource", request.toByteArray(), reply);
    }

    private synchronized Registration registration(String name) {
        return dataSources.get(name);
    }

    /**
     * Ends a session: stops its instances, closes their writers, the socket, and unmaps
     * the buffer once no writer can touch it. On close() with the service still there, the
     * writers' last commits and everything queued before go out first.
     */
    private void tearDown(ProducerEndpoint ending) {
        boolean graceful = closing.isClosed() && ending.client().isConnected();
        synchronized (this) {
            if (session == ending) {
                session = null;
            }
        }
        ending.stopInstances(graceful);
        if (graceful) {
            drain(ending);
        }
        ending.close();
        closing.tornDown();
    }
}
