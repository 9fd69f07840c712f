package dev.ffmtrace.tracing.sdk;

import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.service.ProducerPort;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.LongAdder;

/**
 * The process's tracing: {@link #initialize} once with the backends to use, and every
 * {@link DataSource} registered, before or after, is offered on each of them. Nothing here
 * throws for the state of tracing: a backend that cannot start is counted in
 * {@link #backendFailures()}, and a system service that is not there yet is retried, as
 * Perfetto's SDK does.
 */
public final class Tracing {
    private static final List<DataSource<?>> REGISTERED = new CopyOnWriteArrayList<>();
    private static final LongAdder BACKEND_FAILURES = new LongAdder();
    /** Guarded by the class: the backends of the current initialization, none before or after. */
    private static List<Connected> backends = List.of();

    private Tracing() {
    }

    /** One backend: the producer's connection, and for the in-process one the port it reaches the service by. */
    private record Connected(Backend backend, ProducerConnection connection, ProducerPort port, Path directory) {
        void close() {
            connection.close();
            if (port != null) {
                port.close();
                try {
                    Files.deleteIfExists(directory.resolve(SOCKET_NAME));
                    Files.deleteIfExists(directory);
                } catch (IOException e) {
                    // A leftover empty directory in the temporary directory harms nothing.
                }
            }
        }
    }

    private static final String SOCKET_NAME = "producer.sock";

    /**
     * Connects to the backends {@code options} names and offers every registered data
     * source there.
     *
     * @return false, doing nothing, if tracing is initialized already (call {@link #shutdown} first)
     */
    public static synchronized boolean initialize(TracingOptions options) {
        if (!backends.isEmpty()) {
            return false;
        }
        List<Connected> connected = new ArrayList<>();
        if (options.inProcessService() != null) {
            Connected inProcess = inProcess(options);
            if (inProcess != null) {
                connected.add(inProcess);
            }
        }
        if (options.systemBackend()) {
            ProducerConnection.Options connection = producerOptions(options);
            if (options.systemSocket() != null) {
                connection = connection.withSocket(options.systemSocket());
            }
            connected.add(new Connected(Backend.SYSTEM, ProducerConnection.connect(connection), null, null));
        }
        for (Connected backend : connected) {
            for (DataSource<?> dataSource : REGISTERED) {
                offer(backend, dataSource);
            }
        }
        backends = List.copyOf(connected);
        return true;
    }

    /**
     * The in-process backend: the service's producer port on a socket in a directory only
     * this user can enter, and a producer connection to it, so that a data source runs
     * there exactly as on a system service; only its commits, the hot path, are calls
     * into the service instead of messages.
     */
    private static Connected inProcess(TracingOptions options) {
        Path directory = null;
        ProducerPort port = null;
        try {
            directory = Files.createTempDirectory("ffmtrace-sdk-",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            UnixAddress socket = UnixAddress.path(directory.resolve(SOCKET_NAME));
            port = ProducerPort.listen(options.inProcessService(), socket);
            ProducerConnection connection = ProducerConnection.connect(producerOptions(options)
                    .withSocket(socket).withLocalCommits(options.inProcessService()::localCommitTransport));
            return new Connected(Backend.IN_PROCESS, connection, port, directory);
        } catch (IOException | RuntimeException e) {
            BACKEND_FAILURES.increment();
            if (port != null) {
                port.close();
            }
            if (directory != null) {
                try {
                    Files.deleteIfExists(directory);
                } catch (IOException ignored) {
                    // As in close: an empty directory left behind.
                }
            }
            return null;
        }
    }

    private static ProducerConnection.Options producerOptions(TracingOptions options) {
        return ProducerConnection.Options.named(options.producerName()).withSmbHints(options.smbSizeBytes(), 0);
    }

    /**
     * Waits until every backend is connected and its service has handled the registration
     * of every data source registered so far: for a program that starts a session on its
     * in-process service right after {@link #initialize} and wants the session to find
     * them (registrations travel over the producer IPC, as to any service).
     *
     * @return whether they all did before {@code timeout} passed (false without backends)
     */
    public static boolean awaitRegistrations(Duration timeout) throws InterruptedException {
        List<Connected> current;
        synchronized (Tracing.class) {
            current = backends;
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Connected backend : current) {
            ProducerConnection connection = backend.connection();
            // Connecting queues every registration before anything else can be sent; a Sync
            // queued after them completes once the service has handled them.
            if (!connection.awaitConnected(Duration.ofNanos(deadline - System.nanoTime()))) {
                return false;
            }
            try {
                if (!connection.sync().get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    return false;
                }
            } catch (ExecutionException | TimeoutException e) {
                return false;
            }
        }
        return !current.isEmpty();
    }

    /** Whether {@link #initialize} has connected backends that {@link #shutdown} has not closed. */
    public static synchronized boolean isInitialized() {
        return !backends.isEmpty();
    }

    /**
     * Stops every instance (data sources get their {@code onStop}), commits what their
     * writers hold, and disconnects from every backend. Data sources stay registered, for
     * the next {@link #initialize}.
     */
    public static void shutdown() {
        List<Connected> closing;
        synchronized (Tracing.class) {
            closing = backends;
            backends = List.of();
        }
        for (Connected backend : closing) {
            backend.close();
        }
    }

    /** How long {@link #activateTrigger} keeps a trigger for a backend that is not connected yet. */
    public static final Duration DEFAULT_TRIGGER_TTL = Duration.ofSeconds(10);

    /**
     * Activates the trigger {@code name} on every backend, kept for
     * {@link #DEFAULT_TRIGGER_TTL} where the service is not connected yet: the sessions that
     * listen to it start, stop or snapshot as their {@code trigger_config} says.
     */
    public static void activateTrigger(String name) {
        // A null name is dropped with the others' nulls, never thrown back at the caller.
        activateTriggers(Collections.singletonList(name), DEFAULT_TRIGGER_TTL);
    }

    /**
     * Activates the triggers {@code names} on every backend (Perfetto's
     * {@code Tracing::ActivateTriggers}); a backend whose service is not connected keeps
     * them for {@code timeToLive}. Without backends, nothing hears them.
     */
    public static void activateTriggers(List<String> names, Duration timeToLive) {
        if (names == null || timeToLive == null) {
            return;
        }
        List<String> valid = names.stream().filter(Objects::nonNull).toList();
        List<Connected> current;
        synchronized (Tracing.class) {
            current = backends;
        }
        for (Connected backend : current) {
            backend.connection().activateTriggers(valid, timeToLive);
        }
    }

    /**
     * Why the in-process service last refused this process's producer (it could not make
     * the shared memory buffer, say: the memfd's error), or null: for a program whose
     * {@link #awaitRegistrations} returned false.
     */
    public static String inProcessRefusal() {
        List<Connected> current;
        synchronized (Tracing.class) {
            current = backends;
        }
        return current.stream().filter(backend -> backend.port() != null)
                .map(backend -> backend.port().lastConnectionRefusal()).filter(Objects::nonNull).findFirst()
                .orElse(null);
    }

    /** Backends that could not start (the in-process one's socket, say). */
    public static long backendFailures() {
        return BACKEND_FAILURES.sum();
    }

    static synchronized void register(DataSource<?> dataSource) {
        REGISTERED.add(dataSource);
        for (Connected backend : backends) {
            offer(backend, dataSource);
        }
    }

    static synchronized void unregister(DataSource<?> dataSource) {
        if (REGISTERED.remove(dataSource)) {
            for (Connected backend : backends) {
                backend.connection().unregisterDataSource(dataSource.descriptor().name());
            }
        }
    }

    private static void offer(Connected backend, DataSource<?> dataSource) {
        backend.connection().registerDataSource(dataSource.descriptor(), dataSource.handlerFor(backend.backend()));
    }
}
