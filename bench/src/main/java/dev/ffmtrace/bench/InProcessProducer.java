package dev.ffmtrace.bench;

import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.producer.internal.DataSourceInstance;
import dev.ffmtrace.tracing.service.ProducerPort;
import dev.ffmtrace.tracing.service.TracingService;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A producer of an in-process service, made as the SDK's in-process backend makes one: a
 * {@link ProducerConnection} to a producer port of the service's on a private abstract
 * socket, its writers committing into the service on their own threads. For benchmarks
 * that set up a session and time what its writers or its readback cost.
 */
final class InProcessProducer implements AutoCloseable {
    private static final long TIMEOUT_SECONDS = 10;

    private final ProducerPort port;
    private final ProducerConnection connection;

    private InProcessProducer(ProducerPort port, ProducerConnection connection) {
        this.port = port;
        this.connection = connection;
    }

    /** Connects producer {@code name} with an SMB of {@code smbSize} bytes to {@code service}. */
    static InProcessProducer connect(TracingService service, String name, int smbSize) throws InterruptedException {
        ProducerPort port = ProducerPort.listen(service, UnixAddress.abstractName(
                "ffmtrace-bench-" + name + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime()));
        ProducerConnection connection = ProducerConnection.connect(ProducerConnection.Options.named(name)
                .withSocket(port.address()).withSmbHints(smbSize, 0).withLocalCommits(service::localCommitTransport));
        if (!connection.awaitConnected(Duration.ofSeconds(TIMEOUT_SECONDS))) {
            connection.close();
            port.close();
            throw new IllegalStateException("the producer did not connect to the service");
        }
        return new InProcessProducer(port, connection);
    }

    /**
     * Registers data source {@code name}; the future completes with its instance once a
     * session starts it. Returns after the service has taken the registration, so a
     * session started then finds it.
     */
    CompletableFuture<DataSourceInstance> register(String name) throws Exception {
        CompletableFuture<DataSourceInstance> started = new CompletableFuture<>();
        connection.registerDataSource(DataSourceDescriptor.named(name), started::complete);
        if (!connection.sync().get(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the service did not take data source " + name);
        }
        return started;
    }

    /** The instance {@code started} completes with, waited for. */
    static DataSourceInstance await(CompletableFuture<DataSourceInstance> started) throws Exception {
        return started.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
    }

    @Override
    public void close() {
        connection.close();
        port.close();
    }
}
