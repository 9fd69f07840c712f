package dev.ffmtrace.cli;

import dev.ffmtrace.ipc.IpcHost;
import dev.ffmtrace.ipc.ServiceDescriptor;
import dev.ffmtrace.memory.NativeException;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.UnixSocket;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.ipc.ConsumerConnection;
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
        description = "Run the tracing service as a daemon, with Perfetto's consumer port on a Unix socket.")
final class ServeCommand implements Callable<Integer> {
    /** Not Perfetto's /run/perfetto/traced-consumer.sock or /tmp/perfetto-consumer: a system traced keeps those. */
    static final String DEFAULT_CONSUMER_SOCKET = "/tmp/ffmtrace-consumer";
    /** What QueryServiceState reports. */
    static final String VERSION = "ffmtrace 0.1.0";

    @Option(names = "--consumer-socket", paramLabel = "PATH",
            description = "The consumer socket (default: $PERFETTO_CONSUMER_SOCK_NAME, else " + DEFAULT_CONSUMER_SOCKET
                    + "); @NAME for Linux's abstract namespace.")
    String consumerSocket;

    @Override
    public Integer call() throws InterruptedException, CliFailure {
        UnixAddress consumerAddress = ConsumerConnection.address(
                socketName(consumerSocket, "PERFETTO_CONSUMER_SOCK_NAME", DEFAULT_CONSUMER_SOCKET));
        List<IpcHost> hosts = new ArrayList<>();
        try (StopOnSignal signal = new StopOnSignal();
             TracingService service = new TracingService();
             ConsumerPort consumerPort = new ConsumerPort(service, VERSION)) {
            try {
                hosts.add(listen("--consumer-socket", consumerAddress, consumerPort.descriptor()));
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
     * Listens on {@code address} with {@code service} exposed. A socket file that nobody
     * listens on any more (a service killed before it could remove it) is replaced; one
     * a live service listens on is an error.
     */
    private static IpcHost listen(String option, UnixAddress address, ServiceDescriptor service) throws CliFailure {
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
        host.exposeService(service);
        return host;
    }
}
