package dev.ffmtrace.cli;

import dev.ffmtrace.cli.stress.HostilePeer;
import dev.ffmtrace.memory.UnixAddress;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** The hostile producer process that {@code stress --faults} runs ({@link HostilePeer}); not for users. */
@Command(name = "stress-hostile", hidden = true,
        description = "A hostile producer for stress --faults: attacks its SMB and the service's commit path.")
final class StressHostileCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "SOCKET", description = "The service's producer socket (@NAME or a path).")
    String socket;

    @Option(names = "--seed", defaultValue = "1", paramLabel = "N")
    long seed;

    @Option(names = "--pace-us", defaultValue = "500", paramLabel = "US",
            description = "Microseconds between garbage commits (default ${DEFAULT-VALUE}).")
    long paceMicros;

    @Override
    public Integer call() throws Exception {
        UnixAddress address;
        try {
            address = UnixAddress.parse(socket);
        } catch (IllegalArgumentException e) {
            throw new CliFailure(socket + ": " + e.getMessage(), CliFailure.USAGE);
        }
        System.out.println(new HostilePeer(address, seed, Duration.ofNanos(paceMicros * 1000)).run(() -> {
            System.out.println(HostilePeer.ATTACKED);
            System.out.flush();
        }));
        return 0;
    }
}
