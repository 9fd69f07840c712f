package dev.ffmtrace.cli;

import dev.ffmtrace.ipc.IpcHost;
import dev.ffmtrace.memory.NativeException;
import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.memory.TcpAddress;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.tracing.service.CommitPathWarmUp;
import dev.ffmtrace.tracing.service.ProducerPort;
import dev.ffmtrace.tracing.service.RelayPort;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.ipc.ConsumerPort;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Runs the tracing service as a daemon, as Perfetto's {@code traced}: its ports on Unix
 * sockets (the producer port on TCP too, for relays and producers of other machines),
 * until SIGINT or SIGTERM, which close them (removing the socket files) and end the
 * sessions still running.
 */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = "Run the tracing service as a daemon, with Perfetto's producer and consumer ports on Unix sockets"
                + " (and the producer port on TCP where asked).")
final class ServeCommand implements Callable<Integer> {
    /** Not Perfetto's /run/perfetto/traced-consumer.sock or /tmp/perfetto-consumer: a system traced keeps those. */
    static final String DEFAULT_CONSUMER_SOCKET = "/tmp/ffmtrace-consumer";
    /** Not Perfetto's /run/perfetto/traced-producer.sock or /tmp/perfetto-producer either. */
    static final String DEFAULT_PRODUCER_SOCKET = "/tmp/ffmtrace-producer";
    /** What QueryServiceState reports. */
    static final String VERSION = "ffmtrace 0.1.0";
    /** stat(2)'s file type bits and the type of a socket. */
    private static final int S_IFMT = 0170000;
    private static final int S_IFSOCK = 0140000;

    @Option(names = "--consumer-socket", paramLabel = "PATH",
            description = "The consumer socket (default: $PERFETTO_CONSUMER_SOCK_NAME, else " + DEFAULT_CONSUMER_SOCKET
                    + "); @NAME for Linux's abstract namespace.")
    String consumerSocket;

    @Option(names = "--producer-socket", paramLabel = "ADDRESS[,ADDRESS...]",
            description = "The producer sockets, as Perfetto lists them (default: $PERFETTO_PRODUCER_SOCK_NAME, else "
                    + DEFAULT_PRODUCER_SOCKET + "): a path, @NAME for Linux's abstract namespace, or HOST:PORT"
                    + " ([V6]:PORT) for TCP, where producers of other machines and relays connect and send their"
                    + " chunks over the socket (port 0: the kernel picks one, printed). A TCP address is reachable"
                    + " by whoever can reach that interface: 127.0.0.1 keeps it to this machine.")
    String producerSocket;

    @Option(names = "--enable-relay-endpoint",
            description = "Serve relays (traced_relay, ffmtrace relay) on the producer sockets too, as traced's flag"
                    + " of that name: their machines' system info and clocks go into every trace.")
    boolean relayEndpoint;

    @Option(names = "--socket-mode", paramLabel = "OCTAL", defaultValue = "0600",
            description = "Permission bits of both socket files (default: ${DEFAULT-VALUE}, the owner's only; "
                    + "0666 lets every local user in, as Android's traced). No effect on @NAME sockets.")
    String socketMode;

    @Option(names = "--no-warm-up",
            description = "Serve at once, without first running the producer port's commit path hot on traces of"
                    + " its own until the JIT has compiled it (4 to 6 rounds of about 3,400 commits, about 1 s on a 2-core VM).")
    boolean noWarmUp;

    @Override
    public Integer call() throws InterruptedException, CliFailure {
        UnixAddress consumerAddress = UnixAddress.parse(
                socketName(consumerSocket, "PERFETTO_CONSUMER_SOCK_NAME", DEFAULT_CONSUMER_SOCKET));
        List<StreamAddress> producerAddresses = producerAddresses(
                socketName(producerSocket, "PERFETTO_PRODUCER_SOCK_NAME", DEFAULT_PRODUCER_SOCKET));
        int mode = parseMode(socketMode);
        // Refused before the warm-up's seconds, not after them; listening checks again.
        clearSocketPath("--consumer-socket", consumerAddress);
        for (StreamAddress address : producerAddresses) {
            if (address instanceof UnixAddress unix) {
                clearSocketPath("--producer-socket", unix);
            }
        }
        if (!noWarmUp) {
            long start = System.nanoTime();
            CommitPathWarmUp.Rounds warmUp = CommitPathWarmUp.runUntilSettled(CommitPathWarmUp.MAX_ROUNDS,
                    CommitPathWarmUp.DEFAULT_ITERATIONS);
            System.out.printf("warm-up: %d chunks committed (%d patches) in %d rounds, %d ms; %s%n",
                    warmUp.counts().chunksMoved(), warmUp.counts().patchesApplied(), warmUp.rounds(),
                    (System.nanoTime() - start) / 1_000_000,
                    warmUp.jitSettled() ? "the JIT settled" : "the JIT did not settle");
        }
        List<IpcHost> hosts = new ArrayList<>();
        try (StopOnSignal signal = new StopOnSignal()) {
            try (TracingService service = new TracingService();
                 ConsumerPort consumerPort = new ConsumerPort(service, VERSION)) {
                try {
                    IpcHost consumerHost = listen("--consumer-socket", consumerAddress, mode);
                    hosts.add(consumerHost);
                    consumerHost.exposeService(consumerPort.descriptor());
                    for (StreamAddress address : producerAddresses) {
                        IpcHost producerHost = listen("--producer-socket", address, mode);
                        hosts.add(producerHost);
                        ProducerPort.expose(service, producerHost);
                        if (relayEndpoint) {
                            RelayPort.expose(service, producerHost);
                        }
                        System.out.println("producer socket: " + producerHost.address()
                                + (address instanceof TcpAddress tcp && !tcp.isLoopback()
                                        ? " (TCP, reachable from other machines)" : ""));
                    }
                    System.out.println("consumer socket: " + consumerAddress);
                    System.out.flush();
                    // Serving: the hosts' threads do the work until a signal.
                    signal.awaitStop();
                    System.out.println("stopping on a signal");
                } finally {
                    // The sockets go first, so that no request comes in while the sessions end;
                    // the producers' first, so that no session's last flush or stop waits for
                    // a producer that will never answer (one that is gone has answered).
                    hosts.reversed().forEach(IpcHost::close);
                }
            }
            // While the shutdown hook still waits: once it returns, the JVM ends at once.
            System.out.println("stopped");
            System.out.flush();
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

    /** A comma-separated list of socket addresses, as Perfetto's {@code PERFETTO_PRODUCER_SOCK_NAME} holds them. */
    static List<StreamAddress> producerAddresses(String list) throws CliFailure {
        List<StreamAddress> addresses = new ArrayList<>();
        for (String entry : list.split(",")) {
            if (entry.isBlank()) {
                // traced skips empty entries too: "/tmp/p," is one socket.
                continue;
            }
            try {
                addresses.add(StreamAddress.parse(entry.strip()));
            } catch (IllegalArgumentException e) {
                throw new CliFailure("--producer-socket " + list + ": " + e.getMessage(), CliFailure.USAGE);
            }
        }
        if (addresses.isEmpty()) {
            throw new CliFailure("--producer-socket \"" + list + "\": no address", CliFailure.USAGE);
        }
        if (addresses.size() != addresses.stream().distinct().count()) {
            throw new CliFailure("--producer-socket " + list + ": an address is listed twice", CliFailure.USAGE);
        }
        return addresses;
    }

    /** {@code --socket-mode}: octal permission bits within 0777. */
    static int parseMode(String octal) throws CliFailure {
        if (!octal.matches("0?[0-7]{1,3}")) {
            throw new CliFailure("--socket-mode " + octal + ": not octal permission bits such as 0600 or 0660",
                    CliFailure.USAGE);
        }
        return Integer.parseInt(octal, 8);
    }

    /**
     * Listens on {@code address}, its socket file with permission bits {@code mode}. What
     * is at the path already must be a socket nobody accepts on any more (a service killed
     * before it could remove it), which is replaced; anything else is left alone and
     * refused: a file that is not a socket (a usage error), a socket a live service
     * accepts on, or one whose state cannot be told.
     */
    private static IpcHost listen(String option, StreamAddress address, int mode) throws CliFailure {
        if (address instanceof UnixAddress unix) {
            clearSocketPath(option, unix);
        }
        try {
            return IpcHost.listen(address, mode);
        } catch (NativeException | IllegalArgumentException | UncheckedIOException e) {
            throw new CliFailure(option + " " + address + ": cannot listen: " + e.getMessage(), CliFailure.FAILED);
        }
    }

    /** Removes a stale socket file at a path address; refuses a file that is not a socket, or one served. */
    private static void clearSocketPath(String option, UnixAddress address) throws CliFailure {
        if (!address.isAbstract()) {
            removeStaleSocket(option, address);
        }
    }

    private static void removeStaleSocket(String option, UnixAddress address) throws CliFailure {
        Path path = Path.of(address.name());
        int fileMode;
        try {
            // Not following a link: a link is not a socket, whatever it points at.
            fileMode = (Integer) Files.getAttribute(path, "unix:mode", LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            return;
        } catch (IOException e) {
            throw new CliFailure(option + " " + address + ": " + ErrorReporter.reason(e), CliFailure.FAILED);
        }
        if ((fileMode & S_IFMT) != S_IFSOCK) {
            throw new CliFailure(option + " " + address + ": exists and is not a socket; not replacing it",
                    CliFailure.USAGE);
        }
        try {
            StreamSocket.connect(address).close();
            throw new CliFailure(option + " " + address + ": another service listens on it", CliFailure.FAILED);
        } catch (NativeException e) {
            if (!"ECONNREFUSED".equals(e.errnoName())) {
                // EACCES and the like: whoever owns it may still be using it.
                throw new CliFailure(option + " " + address + ": cannot tell whether a service listens on it: "
                        + e.getMessage(), CliFailure.FAILED);
            }
        }
        try {
            Files.deleteIfExists(path);
        } catch (IOException removal) {
            throw new CliFailure(option + " " + address + ": cannot remove the stale socket: "
                    + ErrorReporter.reason(removal), CliFailure.FAILED);
        }
    }
}
