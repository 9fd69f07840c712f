package dev.ffmtrace.tracing.service;

import dev.ffmtrace.ipc.ClientInfo;
import dev.ffmtrace.ipc.Invocation;
import dev.ffmtrace.ipc.IpcHost;
import dev.ffmtrace.ipc.ServiceDescriptor;
import dev.ffmtrace.ipc.ServiceDescriptor.Method;
import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.memory.UnixAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;

/**
 * The producer port of Perfetto's IPC, as {@code traced} serves it: producers in other
 * processes, built with Perfetto's SDK or ffmtrace's {@code ProducerConnection}, connect
 * to its socket, bind {@value #SERVICE_NAME}, and write into the sessions of a
 * {@link TracingService} through a shared memory buffer (SMB).
 *
 * <p>As Perfetto's {@code ProducerIPCService}: InitializeConnection first (any other
 * method before it fails), with an SMB the service makes as the producer's hints say
 * (kept within Perfetto's bounds) or one the producer provides as a sealed memfd
 * (refused, and replaced by the service's, if it is not sealed or not a whole number of
 * pages); GetAsyncCommand opens the stream of commands (SetupTracing with the SMB's fd,
 * SetupDataSource, StartDataSource, StopDataSource, Flush, ClearIncrementalState);
 * CommitData moves and patches chunks, and acknowledges a flush with its
 * {@code flush_request_id} (and every earlier one); RegisterTraceWriter says where a
 * writer's scraped chunks go; Sync answers once everything sent before it is done.
 * ActivateTriggers hands the names, with the producer's name and uid, to the service's
 * sessions that listen to them.
 *
 * <p>Untrusted peers: a producer's uid and pid come from the socket (SO_PEERCRED); its
 * commits reach only buffers its started data sources write to; chunk indexes, patch
 * offsets and sizes are checked by the SMB reader and the buffer; what is refused is
 * counted in {@link #violations()}. A producer that does not read its commands is
 * disconnected once {@value RemoteProducer#MAX_QUEUED_COMMANDS} wait, so it never holds
 * up the service. A producer that goes away, killed or not, is closed as
 * {@link Producer#close()} says: what it wrote is taken, what it was writing is counted.
 *
 * <p>Unlike {@code traced}, whose default is off, the port scrapes a producer's SMB on
 * every flush unless the producer asks it not to ({@code SMB_SCRAPING_DISABLED}), as
 * ffmtrace's in-process producers are: a flush then also takes what writers on threads
 * that are busy elsewhere have written.
 */
public final class ProducerPort implements AutoCloseable {
    /** The name producers bind. */
    public static final String SERVICE_NAME = "ProducerPort";

    private final TracingService service;
    private final IpcHost host;
    /** By client: a ClientInfo is one object per connection, and a key that needs no boxing. */
    private final Map<ClientInfo, RemoteProducer> producers = new ConcurrentHashMap<>();
    private final AtomicLong violations = new AtomicLong();
    private final AtomicLong refusals = new AtomicLong();
    private volatile String lastConnectionRefusal;
    /** Held while a producer leaves the map for the gone totals, so that totals count it once. */
    private final Object totals = new Object();
    /** What producers that are gone moved and violated, so that the totals keep them. */
    private long goneChunksMoved;
    private long goneAbiViolations;

    /** Whether producers send their chunks in CommitData: on TCP, where no memory can be shared. */
    private final boolean emulatesSharedMemory;

    private ProducerPort(TracingService service, IpcHost host) {
        this.service = service;
        this.host = host;
        this.emulatesSharedMemory = !(host.address() instanceof UnixAddress);
    }

    /**
     * Serves producers of {@code service} on a socket at {@code address}.
     *
     * @throws dev.ffmtrace.memory.NativeException if the socket cannot be bound
     */
    public static ProducerPort listen(TracingService service, StreamAddress address) {
        return expose(service, IpcHost.listen(address));
    }

    /**
     * Serves producers of {@code service} on {@code host}, which the port then owns:
     * closing the port closes it.
     *
     * @throws IllegalStateException if the host already exposes a service named {@value #SERVICE_NAME}
     */
    public static ProducerPort expose(TracingService service, IpcHost host) {
        ProducerPort port = new ProducerPort(service, host);
        if (!host.exposeService(port.descriptor())) {
            throw new IllegalStateException("the host already exposes " + SERVICE_NAME);
        }
        return port;
    }

    public StreamAddress address() {
        return host.address();
    }

    /** Producers connected now that have initialized their connection. */
    public int producerCount() {
        return producers.size();
    }

    /**
     * Protocol violations: frames the IPC layer refused (each closed its connection), and
     * requests and commits the port refused (a malformed request, a commit of a chunk the
     * producer cannot commit, chunk bytes in a commit on a Unix socket or a commit without
     * them on TCP, a patch that is not 4 bytes, a producer that did not read its commands).
     */
    public long violations() {
        return violations.get() + host.violations();
    }

    /** Chunks moved out of the SMBs of this port's producers, those gone included. */
    public long chunksMoved() {
        synchronized (totals) {
            return goneChunksMoved + producers.values().stream().mapToLong(p -> p.producer().chunksMoved()).sum();
        }
    }

    /** {@link Producer#abiViolations()} of this port's producers, those gone included. */
    public long abiViolations() {
        synchronized (totals) {
            return goneAbiViolations + producers.values().stream().mapToLong(p -> p.producer().abiViolations()).sum();
        }
    }

    /**
     * Requests refused by a {@link Guardrails guardrail}: a data source name too long, too
     * many data sources on one connection. Each got its error reply; the producer stays.
     */
    public long refusals() {
        return refusals.get();
    }

    /**
     * Why the service last refused a producer's InitializeConnection (it is closed, out of
     * producer ids, or could not make the SMB: the memfd's error), or null if it never did.
     * The producer got a failed reply, and may try again.
     */
    public String lastConnectionRefusal() {
        return lastConnectionRefusal;
    }

    void connectionRefused(RuntimeException why) {
        lastConnectionRefusal = why.getMessage() != null ? why.getMessage() : why.toString();
    }

    void countViolation() {
        violations.incrementAndGet();
    }

    void countRefusal() {
        refusals.incrementAndGet();
    }

    /** Disconnects a producer the port gave up on. */
    void disconnect(ClientInfo client) {
        host.disconnect(client.clientId());
    }

    TracingService service() {
        return service;
    }

    /**
     * Whether this port asks its producers for shared memory emulation: on TCP, where no
     * descriptor can travel, each CommitData carries its chunks' bytes, and SetupTracing
     * carries no SMB.
     */
    boolean emulatesSharedMemory() {
        return emulatesSharedMemory;
    }

    /** Stops serving: every producer is disconnected and closed; the service and its sessions go on. */
    @Override
    public void close() {
        host.close();
        producers.keySet().forEach(this::closed);
    }

    private ServiceDescriptor descriptor() {
        // Perfetto's declaration order: a method's id is its position.
        return new ServiceDescriptor(SERVICE_NAME, List.of(
                new Method("InitializeConnection", true, this::initializeConnection),
                new Method("RegisterDataSource", initialized(RemoteProducer::registerDataSource)),
                new Method("UnregisterDataSource", initialized(RemoteProducer::unregisterDataSource)),
                // The commit path allocates nothing: its handler replies within its call.
                new Method("CommitData", false, true, initialized(RemoteProducer::commitData)),
                new Method("GetAsyncCommand", initialized(RemoteProducer::getAsyncCommand)),
                new Method("RegisterTraceWriter", initialized(RemoteProducer::registerTraceWriter)),
                new Method("UnregisterTraceWriter", initialized(RemoteProducer::unregisterTraceWriter)),
                new Method("NotifyDataSourceStarted", initialized(RemoteProducer::notifyDataSourceStarted)),
                new Method("NotifyDataSourceStopped", initialized(RemoteProducer::notifyDataSourceStopped)),
                new Method("ActivateTriggers", initialized(RemoteProducer::activateTriggers)),
                new Method("Sync", initialized(RemoteProducer::sync)),
                new Method("UpdateDataSource", initialized(RemoteProducer::updateDataSource))),
                this::closed);
    }

    private void initializeConnection(Invocation invocation) {
        ClientInfo client = invocation.client();
        if (producers.containsKey(client)) {
            // Perfetto's port refuses a second InitializeConnection on one connection.
            invocation.fail();
            return;
        }
        RemoteProducer producer = RemoteProducer.initialize(this, invocation);
        if (producer != null) {
            producers.put(client, producer);
        }
    }

    /** A method that needs InitializeConnection first: before it, the invocation fails, as in Perfetto. */
    private ServiceDescriptor.MethodHandler initialized(BiConsumer<RemoteProducer, Invocation> method) {
        return invocation -> {
            RemoteProducer producer = producers.get(invocation.client());
            if (producer == null) {
                invocation.fail();
                return;
            }
            method.accept(producer, invocation);
        };
    }

    /** Closes a producer, then takes it out of the map and into the gone totals. */
    private void closed(ClientInfo client) {
        RemoteProducer producer = producers.get(client);
        if (producer == null) {
            return;
        }
        // Closed before it leaves the count: a producer not counted holds nothing.
        producer.close();
        synchronized (totals) {
            if (producers.remove(client) != null) {
                goneChunksMoved += producer.producer().chunksMoved();
                goneAbiViolations += producer.producer().abiViolations();
            }
        }
    }
}
