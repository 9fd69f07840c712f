package dev.ffmtrace.cli;

import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.sdk.InstanceSetup;
import dev.ffmtrace.tracing.sdk.TrackEvent;
import dev.ffmtrace.tracing.sdk.Tracing;
import dev.ffmtrace.tracing.sdk.TracingOptions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The demo threads ({@link FacadeDemoWorkload}) as a producer process of any tracing
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
        FacadeDemoWorkload.registerCategories();
        Demo demo = new Demo(sessions);
        TrackEvent.addSessionObserver(demo);
        try (StopOnSignal signal = new StopOnSignal()) {
            if (!Tracing.initialize(TracingOptions.named(name).withSystemBackend(socket))) {
                throw new CliFailure("tracing is initialized already in this process", CliFailure.FAILED);
            }
            try {
                System.out.println("producer " + name + " on " + socket + ", data source " + TrackEvent.DATA_SOURCE_NAME
                        + ": waiting for a session to start it (Ctrl-C to stop)");
                while (!signal.awaitStop(100) && demo.stopped.getCount() > 0) {
                    Thread.onSpinWait();
                }
                demo.stopThreads();
            } finally {
                // Stops the instances still running (after Ctrl-C), committing what the threads wrote into them.
                Tracing.shutdown();
            }
        } finally {
            TrackEvent.removeSessionObserver(demo);
        }
        System.out.printf("total: %d requests (request slices with nested slices and an instant, queue slices and"
                        + " depths, debug instants: each event into the sessions that selected its category);"
                        + " sessions stopped: %d%n", demo.requests.sum(), demo.sessionsStopped.sum());
        return 0;
    }

    /** Says each session's start and stop, starts the threads at the first start, counts the stops. */
    private final class Demo implements TrackEvent.SessionObserver {
        final CountDownLatch stopped;
        final LongAdder requests = new LongAdder();
        final LongAdder sessionsStopped = new LongAdder();
        private final AtomicBoolean stop = new AtomicBoolean();
        /** Guarded by this: the threads, none until a session starts. */
        private final List<Thread> workers = new ArrayList<>();

        Demo(int sessions) {
            stopped = new CountDownLatch(sessions);
        }

        @Override
        public void onStart(InstanceSetup instance) {
            System.out.println("started: " + describe(instance));
            startThreads();
        }

        @Override
        public void onStop(InstanceSetup instance) {
            System.out.println("stopped: " + describe(instance));
            sessionsStopped.increment();
            stopped.countDown();
        }

        /** As the producer connection names an instance. */
        private static String describe(InstanceSetup instance) {
            return "data source " + TrackEvent.DATA_SOURCE_NAME + " instance " + instance.instanceId() + " (buffer "
                    + instance.targetBuffer() + ")";
        }

        /** Once: the threads write into every session there is, so a later session needs no threads of its own. */
        private synchronized void startThreads() {
            if (!workers.isEmpty() || stop.get()) {
                return;
            }
            ConcurrentLinkedQueue<Long> handoffs = new ConcurrentLinkedQueue<>();
            for (int i = 0; i < threads; i++) {
                workers.add(Thread.ofPlatform().name("demo worker " + i)
                        .start(new FacadeDemoWorkload(i, stop, handoffs, requests)));
            }
        }

        /** Stops the threads, and keeps a session that starts from now on from starting them. */
        void stopThreads() throws InterruptedException {
            List<Thread> started;
            synchronized (this) {
                stop.set(true);
                started = List.copyOf(workers);
            }
            for (Thread worker : started) {
                worker.join();
            }
        }
    }
}
