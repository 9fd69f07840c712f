package dev.ffmtrace.cli;

import dev.ffmtrace.memory.NativeException;
import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.tracing.relay.RelayService;
import dev.ffmtrace.tracing.relay.ThisMachine;
import java.io.UncheckedIOException;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Relays this machine's producers to a tracing service on another machine, as Perfetto's
 * {@code traced_relay}, until SIGINT or SIGTERM.
 */
@Command(name = "relay", mixinStandardHelpOptions = true,
        description = "Relay this machine's producers to a tracing service on another machine, as Perfetto's"
                + " traced_relay: they connect here as to traced, and the host sees them on a machine of their own.")
final class RelayCommand implements Callable<Integer> {
    @Option(names = "--relay-socket", paramLabel = "HOST:PORT",
            description = "The host service's producer socket (default: $PERFETTO_RELAY_SOCK_NAME), e.g."
                    + " 192.168.0.1:20001, where it runs serve or traced with --enable-relay-endpoint.")
    String relaySocket;

    @Option(names = "--producer-socket", paramLabel = "PATH",
            description = "Where this machine's producers connect (default: $PERFETTO_PRODUCER_SOCK_NAME, else "
                    + ServeCommand.DEFAULT_PRODUCER_SOCKET + "); @NAME for Linux's abstract namespace.")
    String producerSocket;

    @Option(names = "--machine-name", paramLabel = "NAME",
            description = "This machine's name, which sessions' machine_name_filter match (default:"
                    + " $PERFETTO_MACHINE_NAME, else uname's sysname). Its id comes from the kernel's boot id.")
    String machineName;

    @Option(names = "--socket-mode", paramLabel = "OCTAL", defaultValue = "0600",
            description = "Permission bits of the producer socket file (default: ${DEFAULT-VALUE}).")
    String socketMode;

    @Override
    public Integer call() throws InterruptedException, CliFailure {
        String host = relaySocket != null ? relaySocket : System.getenv("PERFETTO_RELAY_SOCK_NAME");
        if (host == null || host.isBlank()) {
            throw new CliFailure("no host: give --relay-socket HOST:PORT or set PERFETTO_RELAY_SOCK_NAME",
                    CliFailure.USAGE);
        }
        StreamAddress hostAddress;
        UnixAddress local;
        try {
            hostAddress = StreamAddress.parse(host);
            local = UnixAddress.parse(ServeCommand.socketName(producerSocket, "PERFETTO_PRODUCER_SOCK_NAME",
                    ServeCommand.DEFAULT_PRODUCER_SOCKET));
        } catch (IllegalArgumentException e) {
            throw new CliFailure(e.getMessage(), CliFailure.USAGE);
        }
        RelayService.Options options = RelayService.Options.of(local, hostAddress)
                .withSocketMode(ServeCommand.parseMode(socketMode))
                .withMachineName(machineName != null ? machineName : ThisMachine.name());
        try (StopOnSignal signal = new StopOnSignal()) {
            RelayService relay;
            try {
                relay = RelayService.start(options);
            } catch (NativeException | IllegalArgumentException | UncheckedIOException e) {
                throw new CliFailure("cannot listen on " + local + ": " + e.getMessage(), CliFailure.FAILED);
            }
            try (relay) {
                System.out.println("relaying " + local + " to " + hostAddress + " as machine " + options.machineName());
                System.out.flush();
                signal.awaitStop();
                System.out.println("stopping on a signal");
            }
            System.out.println("stopped");
            System.out.flush();
        }
        return 0;
    }
}
