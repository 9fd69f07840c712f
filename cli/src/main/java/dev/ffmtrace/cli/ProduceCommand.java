package dev.ffmtrace.cli;

import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.producer.DataSourceHandler;
import dev.ffmtrace.tracing.producer.DataSourceInstance;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.trackevent.TraceWriterSink;
import dev.ffmtrace.tracing.trackevent.Track;
import dev.ffmtrace.tracing.trackevent.TrackEventWriter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code record}'s demo threads as a producer process of any tracing service (a real
 * traced, or ffmtrace's): a {@link ProducerConnection} registers the data source
 * {@code track_event}; when the service starts it, the demo threads write into the
 * instance's buffer until the service stops it (after {@code --sessions} stops the
 * command ends) or Ctrl-C.
 */
@Command(name = "produce", mixinStandardHelpOptions = true,
        description = "Run the demo TrackEvent threads as a producer of a tracing service (data source track_event).")
final class ProduceCommand implements Callable<Integer> {
    static final String DATA_SOURCE = "track_event";

    @Option(names = "--producer-socket", paramLabel = "SOCKET",
            description = "The service's producer socket (@NAME for an abstract one, HOST:PORT for TCP); default: "
                    + "PERFETTO_PRODUCER_SOCK_NAME, else Perfetto's default path.")
    String producerSocket;

    @Option(names = "--threads", defaultValue = "2", paramLabel = "N",
            description = "Demo threads per started instance (default ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--sessions", defaultValue = "1", paramLabel = "N",
            description = "End after this many instances were stopped (default ${DEFAULT-VALUE}).")
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
        Demo demo = new Demo(sessions);
        try (StopOnSignal signal = new StopOnSignal();
             ProducerConnection connection = ProducerConnection.connect(
                     ProducerConnection.Options.named(name).withSocket(socket))) {
            connection.registerDataSource(DataSourceDescriptor.named(DATA_SOURCE), demo);
            System.out.println("producer " + name + " on " + socket + ", data source " + DATA_SOURCE
                    + ": waiting for the service to start it (Ctrl-C to stop)");
            while (!signal.awaitStop(100) && demo.stopped.getCount() > 0) {
                Thread.onSpinWait();
            }
            demo.stopAll();
            ProducerConnection.Stats stats = connection.stats();
            System.out.printf("total: wrote %d request slices (each with nested slices, an instant, a flow and a"
                            + " counter); %d events discarded; %d commits dropped; %d service commands rejected;"
                            + " %d connections, %d lost%n",
                    demo.counts.requests().sum(), demo.counts.discardedEvents().sum(), stats.commitsDropped(),
                    stats.commandsRejected(), stats.connections(), stats.disconnections());
            return 0;
        }
    }

    /** The data source: demo threads per started instance; the command ends once {@code --sessions} stopped. */
    private final class Demo implements DataSourceHandler {
        final DemoWorkload.Counts counts = new DemoWorkload.Counts();
        final CountDownLatch stopped;
        private final Map<Long, Run> runs = new HashMap<>();

        Demo(int sessions) {
            stopped = new CountDownLatch(sessions);
        }

        /** One started instance's threads and what they wrote. */
        private record Run(AtomicBoolean stop, List<Thread> workers, DemoWorkload.Counts counts) {
            void stopAndJoin() throws InterruptedException {
                stop.set(true);
                for (Thread worker : workers) {
                    worker.join();
                }
            }
        }

        @Override
        public synchronized void onStart(DataSourceInstance instance) {
            System.out.println("started: " + instance);
            Track process = Track.process((int) ProcessHandle.current().pid(), "ffmtrace produce");
            ConcurrentLinkedQueue<Long> handoffs = new ConcurrentLinkedQueue<>();
            DemoWorkload.WriterSource source = (policy, config) ->
                    new TrackEventWriter(new TraceWriterSink(instance.newTraceWriter(policy),
                            instance::incrementalStateClears), config);
            Run run = new Run(new AtomicBoolean(), new ArrayList<>(), new DemoWorkload.Counts());
            for (int i = 0; i < threads; i++) {
                run.workers().add(Thread.ofPlatform().name("demo worker " + i)
                        .start(new DemoWorkload(i, process, source, source, run.stop(), handoffs, run.counts())));
            }
            runs.put(instance.id(), run);
        }

        @Override
        public void onStop(DataSourceInstance instance, Runnable done) {
            Run run;
            synchronized (this) {
                run = runs.remove(instance.id());
            }
            // The threads finish their packets on a thread of their own: the connection's
            // I/O thread goes on with the service's commands meanwhile.
            Thread.ofPlatform().name("demo stop").start(() -> {
                try {
                    if (run != null) {
                        run.stopAndJoin();
                        report(instance, run.counts());
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                done.run();
                stopped.countDown();
            });
        }

        private synchronized void report(DataSourceInstance instance, DemoWorkload.Counts written) {
            long requests = written.requests().sum();
            long discarded = written.discardedEvents().sum();
            counts.requests().add(requests);
            counts.discardedEvents().add(discarded);
            System.out.printf("stopped: %s: wrote %d request slices, %d events discarded; %d incremental state clears%n",
                    instance, requests, discarded, instance.incrementalStateClears());
        }

        /** Stops the instances still running (Ctrl-C). */
        void stopAll() throws InterruptedException {
            List<Run> left;
            synchronized (this) {
                left = new ArrayList<>(runs.values());
                runs.clear();
            }
            for (Run run : left) {
                run.stopAndJoin();
                synchronized (this) {
                    counts.requests().add(run.counts().requests().sum());
                    counts.discardedEvents().add(run.counts().discardedEvents().sum());
                }
            }
        }
    }
}
