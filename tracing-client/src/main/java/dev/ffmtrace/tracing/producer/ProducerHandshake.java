package dev.ffmtrace.tracing.producer;

import dev.ffmtrace.ipc.BoundService;
import dev.ffmtrace.ipc.IpcClient;
import dev.ffmtrace.ipc.PeerIdentity;
import dev.ffmtrace.ipc.Reply;
import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.perfetto.protos.InitializeConnectionRequest;
import dev.ffmtrace.perfetto.protos.InitializeConnectionResponse;
import dev.ffmtrace.protozero.HeapBuffered;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A producer's way into the service, as Perfetto's {@code ProducerIPCClientImpl} makes
 * it: connect to the producer socket, name the machine over TCP (SetPeerIdentity), bind
 * {@code ProducerPort} and send InitializeConnection, offering the producer's own
 * buffer if asked for one. Each step waits at most 10 s.
 */
final class ProducerHandshake {
    private static final String PRODUCER_PORT = "ProducerPort";
    private static final long TIMEOUT_SECONDS = 10;

    /**
     * A service that accepted the producer.
     *
     * @param emulated    the service asked for shared memory emulation
     * @param providedSmb the producer's own buffer, which the service took; or null
     */
    record Accepted(IpcClient client, BoundService port, boolean emulated, SharedMemory providedSmb) {
    }

    private ProducerHandshake() {
    }

    /**
     * Connects and initializes; null if any step fails, nothing left open.
     *
     * @param machine over TCP, how the producer names its machine; else null
     */
    static Accepted connect(StreamAddress address, PeerIdentity machine, ProducerConnection.Options options)
            throws InterruptedException {
        IpcClient client;
        try {
            client = IpcClient.connect(address);
        } catch (RuntimeException e) {
            return null;
        }
        SharedMemory provided = null;
        boolean tcp = machine != null;
        try {
            if (tcp) {
                client.setPeerIdentity(machine);
            }
            BoundService port = client.bindService(PRODUCER_PORT).get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
            // No descriptor crosses TCP: a producer's own buffer cannot be offered there.
            if (options.producerProvidedSmbBytes() > 0 && !tcp) {
                provided = SharedMemory.create("perfetto:shmem", options.producerProvidedSmbBytes());
            }
            InitializeConnectionResponse.Decoder response = initialize(client, port, options, provided);
            SharedMemory taken = null;
            if (provided != null && response.usingShmemProvidedByProducer()) {
                taken = provided;
                provided = null;
            }
            return new Accepted(client, port, response.useShmemEmulation(), taken);
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            client.close();
            return null;
        } catch (InterruptedException e) {
            client.close();
            throw e;
        } finally {
            if (provided != null) {
                provided.close();
            }
        }
    }

    /** Sends InitializeConnection and decodes the answer; throws if the service refuses. */
    private static InitializeConnectionResponse.Decoder initialize(IpcClient client, BoundService port,
            ProducerConnection.Options options, SharedMemory provided)
            throws InterruptedException, ExecutionException, TimeoutException {
        HeapBuffered<InitializeConnectionRequest> request = new HeapBuffered<>(InitializeConnectionRequest.FACTORY);
        InitializeConnectionRequest init = request.get();
        if (options.smbPageSizeHintBytes() > 0) {
            init.setSharedMemoryPageSizeHintBytes(options.smbPageSizeHintBytes());
        }
        int sizeHint = provided != null ? options.producerProvidedSmbBytes() : options.smbSizeHintBytes();
        if (sizeHint > 0) {
            init.setSharedMemorySizeHintBytes(sizeHint);
        }
        init.setProducerName(options.producerName());
        init.setSmbScrapingMode(options.scrapingMode());
        if (provided != null) {
            init.setProducerProvidedShmem(true);
        }
        init.setSdkVersion("ffmtrace");
        CompletableFuture<Reply> replied = new CompletableFuture<>();
        client.invoke(port, "InitializeConnection", request.toByteArray(), provided == null ? -1 : provided.fd(),
                reply -> {
                    if (!reply.hasMore()) {
                        replied.complete(reply);
                    } else {
                        StreamSocket.closeReceived(reply.fd());
                    }
                });
        Reply reply = replied.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        StreamSocket.closeReceived(reply.fd());
        if (!reply.success()) {
            throw new IllegalStateException("the service refused InitializeConnection");
        }
        InitializeConnectionResponse.Decoder response = new InitializeConnectionResponse.Decoder();
        response.reset(MemorySegment.ofArray(reply.replyProto()));
        if (response.hasError()) {
            throw new IllegalStateException("malformed InitializeConnectionResponse");
        }
        return response;
    }
}
