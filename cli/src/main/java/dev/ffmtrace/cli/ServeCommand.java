package dev.ffmtrace.cli;

import dev.ffmtrace.ipc.IpcHost;
import dev.ffmtrace.memory.NativeException;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.UnixSocket;
import dev.ffmtrace.tracing.service.CommitPathWarmUp;
import dev.ffmtrace.tracing.service.ProducerPort;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.ipc.ConsumerPort;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Runs the tracing service as a daemon, as Perfetto's {@code traced}: its ports on Unix
 * sockets, until SIGINT or SIGTERM, which close them (removing the socket files) and end
 * the sessions still running.
 */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = "Run the tracing service as a daemon, with Perfetto's producer and consumer ports on Unix sockets.")
final class ServeCommand implements Callable<Integer> {
    /** Not Perfetto's /run/perfetto/traced-consumer.sock or /tmp/perfetto-consumer: a system traced keeps those. */
    static final String DEFAULT_CONSUMER_SOCKET = "/tmp/ffmtrace-consumer";
    /** Not Perfetto's /run/perfetto/traced-producer.sock or /tmp/perfetto-producer either. */
    static final String DEFAULT_PRODUCER_SOCKET = "/tmp/ffmtrace-producer";
    /** What QueryServiceState reports. */
    static final String VERSION = "ffmtrace 0.1.0";

    @Option(names = "--consumer-socket", paramLabel = "PATH",
            description = "The consumer socket (default: $PERFETTO_CONSUMER_SOCK_NAME, else " + DEFAULT_CONSUMER_SOCKET
                    + "); @NAME for Linux's abstract namespace.")
    String consumerSocket;

    @Option(names = "--producer-socket", paramLabel = "PATH",
            description = "The producer socket (default: $PERFETTO_PRODUCER_SOCK_NAME, else " + DEFAULT_PRODUCER_SOCKET
                    + "); @NAME for Linux's abstract namespace.")
    String producerSocket;

    @Option(names = "--no-warm-up",
            description = "Serve at once, without first running the producer port's commit path hot on a trace of"
                    + " its own (15,000 commits, about a second).")
    boolean noWarmUp;

    @Override
    public Integer call() throws InterruptedException, CliFailure {
        UnixAddress consumerAddress = UnixAddress.parse(
                socketName(consumerSocket, "PERFETTO_CONSUMER_SOCK_NAME", DEFAULT_CONSUMER_SOCKET));
        UnixAddress producerAddress = UnixAddress.parse(
                socketName(producerSocket, "PERFETTO_PRODUCER_SOCK_NAME", DEFAULT_PRODUCER_SOCKET));
        if (!noWarmUp) {
            long start = System.nanoTime();
            CommitPathWarmUp.Result warmUp = CommitPathWarmUp.run(CommitPathWarmUp.DEFAULT_ITERATIONS);
            System.out.printf("warm-up: %d chunks committed in %d ms%n", warmUp.chunksMoved(),
                    (System.nanoTime() - start) / 1_000_000);
        }
        List<IpcHost> hosts = new ArrayList<>();
        try (StopOnSignal signal = new StopOnSignal();
             TracingService service = new TracingService();
             ConsumerPort consumerPort = new ConsumerPort(service, VERSION)) {
            try {
                IpcHost consumerHost = listen("--consumer-socket", consumerAddress);
                hosts.add(consumerHost);
                consumerHost.exposeService(consumerPort.descriptor());
                IpcHost producerHost = listen("--producer-socket", producerAddress);
                hosts.add(producerHost);
                ProducerPort.expose(service, producerHost);
                System.out.println("producer socket: " + producerAddress);
                System.out.println("consumer socket: " + consumerAddress);
                System.out.flush();
                while (!signal.awaitStop(1000)) {
                    // Serving: the hosts' threads do the work.
                }
                System.out.println("stopping on a signal");
            } finally {
                // The sockets go first, so that no request comes in while the sessions end.
                hosts.forEach(IpcHost::close);
            }
        }
        return 0;
    }

    /** The option's value, else the environment variable's as Perfetto reads it, else the default. */
    static String socketName(String option, String environmentVariable, String fallback) {
        if (option != null) {
            return option;
        }
        String fromEnvironment = System.getenv(environmentVariable);
        return fromEnvironment != null ? fromEnvironment : fallback;
    }

    /**
     * Listens on {@code address}. A socket file that nobody
     * listens on any more (a service killed before it could remove it) is replaced; one
     * a live service listens on is an error.
     */
    private static IpcHost listen(String option, UnixAddress address) throws CliFailure {
        if (!address.isAbstract()) {
            Path path = Path.of(address.name());
            if (Files.exists(path) && !Files.isDirectory(path)) {
                try {
                    UnixSocket.connect(address).close();
                    throw new CliFailure(option + " " + address + ": another service listens on it", CliFailure.FAILED);
                } catch (NativeException e) {
                    try {
                        Files.deleteIfExists(path);
                    } catch (IOException removal) {
                        throw new CliFailure(option + " " + address + ": cannot remove the stale socket: "
                                + ErrorReporter.reason(removal), CliFailure.FAILED);
                    }
                }
            }
        }
        IpcHost host;
        try {
            host = IpcHost.listen(address);
        } catch (NativeException | IllegalArgumentException e) {
            throw new CliFailure(option + " " + address + ": cannot listen: " + e.getMessage(), CliFailure.FAILED);
        }
        return host;
    }
}
