package dev.ffmtrace.cli;

import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.sdk.InstanceSetup;
import dev.ffmtrace.tracing.sdk.TrackEvent;
import dev.ffmtrace.tracing.sdk.Tracing;
import dev.ffmtrace.tracing.sdk.TracingOptions;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.LongAdder;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The demo threads ({@link DemoWorkload}) as a producer process of any tracing
 * service (a real traced, or ffmtrace's), through the SDK: {@link Tracing} with the
 * system backend registers the data source {@code track_event}; once a session starts it
 * the threads write their three categories, each event into every session that selects
 * its category, until {@code --sessions} sessions have stopped it, or Ctrl-C.
 */
@Command(name = "produce", mixinStandardHelpOptions = true,
        description = "Run the demo TrackEvent threads (categories requests, queue and demo.debug) as a producer of a"
                + " tracing service (data source track_event).")
final class ProduceCommand implements Callable<Integer> {
    @Option(names = "--producer-socket", paramLabel = "SOCKET",
            description = "The service's producer socket (@NAME for an abstract one, HOST:PORT for TCP); default: "
                    + "PERFETTO_PRODUCER_SOCK_NAME, else Perfetto's default path.")
    String producerSocket;

    @Option(names = "--threads", defaultValue = "2", paramLabel = "N",
            description = "Demo threads (default ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--sessions", defaultValue = "1", paramLabel = "N",
            description = "End after this many sessions stopped track_event (default ${DEFAULT-VALUE}).")
    int sessions;

    @Option(names = "--name", defaultValue = "ffmtrace-produce", paramLabel = "NAME",
            description = "The producer's name (default ${DEFAULT-VALUE}).")
    String name;

    @Override
    public Integer call() throws Exception {
        if (threads < 1) {
            throw new CliFailure("--threads must be at least 1", CliFailure.USAGE);
        }
        StreamAddress socket;
        try {
            socket = producerSocket == null ? ProducerConnection.defaultProducerSocket()
                    : ProducerConnection.socketAddress(producerSocket);
        } catch (IllegalArgumentException e) {
            throw new CliFailure("--producer-socket " + producerSocket + ": " + e.getMessage(), CliFailure.USAGE);
        }
        if (sessions < 1) {
            throw new CliFailure("--sessions must be at least 1", CliFailure.USAGE);
        }
        DemoWorkload.registerCategories();
        Demo demo = new Demo(sessions);
        TrackEvent.addSessionObserver(demo);
        try (StopOnSignal signal = new StopOnSignal()) {
            demo.threads.start(threads);
            if (!Tracing.initialize(TracingOptions.named(name).withSystemBackend(socket))) {
                throw new CliFailure("tracing is initialized already in this process", CliFailure.FAILED);
            }
            try {
                System.out.println("producer " + name + " on " + socket + ", data source " + TrackEvent.DATA_SOURCE_NAME
                        + ": waiting for a session to start it (Ctrl-C to stop)");
                while (!signal.awaitStop(100) && demo.stopped.getCount() > 0) {
                    Thread.onSpinWait();
                }
                demo.threads.stop();
            } finally {
                // Stops the instances still running (after Ctrl-C), committing what the threads wrote into them.
                Tracing.shutdown();
            }
        } finally {
            TrackEvent.removeSessionObserver(demo);
            demo.threads.stop();
        }
        System.out.printf("total: %d requests (request slices with nested slices and an instant, queue slices and"
                        + " depths, debug instants: each event into the sessions that selected its category);"
                        + " sessions stopped: %d%n", demo.threads.requests(), demo.sessionsStopped.sum());
        return 0;
    }

    /** Says each session's start and stop, lets the threads go at the first start, counts the stops. */
    private static final class Demo implements TrackEvent.SessionObserver {
        final DemoThreads threads = new DemoThreads();
        final CountDownLatch stopped;
        final LongAdder sessionsStopped = new LongAdder();

        Demo(int sessions) {
            stopped = new CountDownLatch(sessions);
        }

        @Override
        public void onStart(InstanceSetup instance) {
            System.out.println("started: " + describe(instance));
            // The threads write into every session there is, so a later session needs no threads of its own.
            threads.go();
        }

        @Override
        public void onStop(TrackEvent.SessionStop stop) {
            System.out.println("stopped: " + describe(stop.instance()));
            sessionsStopped.increment();
            stopped.countDown();
        }

        /** As the producer connection names an instance. */
        private static String describe(InstanceSetup instance) {
            return "data source " + TrackEvent.DATA_SOURCE_NAME + " instance " + instance.instanceId() + " (buffer "
                    + instance.targetBuffer() + ")";
        }
    }
}
