package dev.ffmtrace.cli.stress;

import dev.ffmtrace.ipc.BoundService;
import dev.ffmtrace.ipc.IpcClient;
import dev.ffmtrace.ipc.IpcHost;
import dev.ffmtrace.memory.StreamAddress;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.perfetto.protos.InitializeConnectionRequest;
import dev.ffmtrace.perfetto.protos.RegisterDataSourceRequest;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.ProtoDecoder;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.consumer.ConsumerConnection;
import dev.ffmtrace.tracing.service.ipc.ConsumerPort;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The clients of {@code stress --hostile-clients} (issue #27's long form): a consumer port
 * on the run's service, and for the whole run, round after round, the attacks the daemon
 * must survive beside normal clients: a producer that never takes a command, registering
 * a data source and 20 with 1,000-byte names; a session of that data source, whose
 * flushes and stop wait for it as long as they may, left by its consumer; a consumer that
 * asks for the state 20 times and never reads a reply ({@code perfetto_ipc_tool}), one of
 * them there all run long; 50 consumers that connect, ask and leave. Meanwhile normal consumers run sessions one after
 * another, each of which must end by its duration and be read back with its stats: the
 * run fails on any that does not.
 */
public final class HostileClients implements AutoCloseable {
    /** The data source of the producer that never takes a command. */
    static final String DEAF_SOURCE = "ffmtrace.stress.deaf";
    /** A hang detector for what a normal consumer waits for; far above what a loaded machine takes. */
    private static final long TIMEOUT_MS = 60_000;
    private static final int CROWD = 50;

    /** What the clients did: rounds of attacks, normal sessions read back, the ones that failed, and why. */
    public record Result(int rounds, int sessions, List<String> failures, long sendTimeouts) {
        public boolean ok() {
            return failures.isEmpty() && sessions > 0;
        }
    }

    private final IpcHost consumerHost;
    private final ConsumerPort consumerPort;
    private final StreamAddress producerAddress;
    private final Path ipcTool;
    private final AtomicBoolean stop = new AtomicBoolean();
    private final List<String> failures = new ArrayList<>();
    private final CompletableFuture<Integer> attacks;
    private final CompletableFuture<Integer> sessions;

    private HostileClients(TracingService service, StreamAddress producerAddress, Path ipcTool) {
        this.consumerPort = new ConsumerPort(service, "ffmtrace stress");
        this.consumerHost = IpcHost.listen(UnixAddress.abstractName(
                "ffmtrace-stress-consumers-" + ProcessHandle.current().pid() + "-" + System.nanoTime()));
        consumerHost.exposeService(consumerPort.descriptor());
        this.producerAddress = producerAddress;
        this.ipcTool = ipcTool;
        this.attacks = CompletableFuture.supplyAsync(this::attackRounds,
                task -> Thread.ofPlatform().name("stress hostile clients").start(task));
        this.sessions = CompletableFuture.supplyAsync(this::normalSessions,
                task -> Thread.ofPlatform().name("stress normal consumers").start(task));
    }

    /** Starts the clients against {@code service}, whose producer port is at {@code producerAddress}. */
    static HostileClients start(TracingService service, StreamAddress producerAddress, Path ipcTool) {
        return new HostileClients(service, producerAddress, ipcTool);
    }

    /** Ends the rounds, waits for the clients' last round and session, and says how they went. */
    Result finish() {
        stop.set(true);
        int rounds = attacks.join();
        int read = sessions.join();
        synchronized (failures) {
            return new Result(rounds, read, List.copyOf(failures), consumerHost.sendTimeouts());
        }
    }

    @Override
    public void close() {
        stop.set(true);
        consumerHost.close();
        consumerPort.close();
    }

    private void fail(String what) {
        synchronized (failures) {
            failures.add(what);
        }
    }

    private int attackRounds() {
        int rounds = 0;
        // One deaf consumer stays all run: the service must give up on it (its send timeout).
        Process lasting = null;
        try {
            lasting = deafConsumer();
            // One round at least, however soon the run ends.
            do {
                attackRound();
                rounds++;
            } while (!stop.get());
        } catch (Exception e) {
            fail("attack round " + (rounds + 1) + ": " + e);
        } finally {
            if (lasting != null) {
                lasting.destroyForcibly();
            }
        }
        return rounds;
    }

    /** A consumer that asks for the service's state 20 times and never reads a reply, until it is destroyed. */
    private Process deafConsumer() throws IOException {
        List<String> command = new ArrayList<>(List.of(ipcTool.toString(), "call", consumerHost.address().toString(),
                "ConsumerPort"));
        for (int i = 0; i < 20; i++) {
            command.addAll(List.of("!QueryServiceState", ""));
        }
        return new ProcessBuilder(command).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .redirectError(ProcessBuilder.Redirect.DISCARD).start();
    }

    /** One round: every attacker connects and misbehaves, then all leave at once. */
    private void attackRound() throws Exception {
        List<AutoCloseable> attackers = new ArrayList<>();
        try {
            IpcClient producer = IpcClient.connect(producerAddress);
            attackers.add(producer);
            BoundService port = producer.bindService("ProducerPort").get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            HeapBuffered<InitializeConnectionRequest> init = new HeapBuffered<>(InitializeConnectionRequest.FACTORY);
            init.get().setProducerName("ffmtrace-stress-deaf");
            producer.invoke(port, "InitializeConnection", init.toByteArray()).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            for (int i = 0; i <= 20; i++) {
                HeapBuffered<RegisterDataSourceRequest> register = new HeapBuffered<>(RegisterDataSourceRequest.FACTORY);
                register.get().setDataSourceDescriptor().setName(i == 0 ? DEAF_SOURCE : i + "w".repeat(1000));
                producer.invoke(port, "RegisterDataSource", register.toByteArray()).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            }

            ConsumerConnection owner = ConsumerConnection.connect(consumerHost.address(), TIMEOUT_MS);
            attackers.add(owner);
            HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
            config.get().addBuffers().setSizeKb(64);
            config.get().addDataSources().setConfig().setName(DEAF_SOURCE);
            config.get().setDurationMs(200);
            config.get().setFlushTimeoutMs(60_000);
            config.get().setDataSourceStopTimeoutMs(60_000);
            owner.enableTracing(config.toByteArray(), -1);

            Process deafConsumer = deafConsumer();
            attackers.add(deafConsumer::destroyForcibly);

            for (int i = 0; i < CROWD && !stop.get(); i++) {
                try (ConsumerConnection passer = ConsumerConnection.connect(consumerHost.address(), TIMEOUT_MS)) {
                    if (passer.queryServiceState(TIMEOUT_MS) == null) {
                        fail("a consumer of the crowd got no QueryServiceState reply");
                    }
                }
            }
        } finally {
            for (AutoCloseable attacker : attackers.reversed()) {
                attacker.close();
            }
        }
    }

    private int normalSessions() {
        int read = 0;
        // One session at least, however soon the run ends.
        do {
            try (ConsumerConnection consumer = ConsumerConnection.connect(consumerHost.address(), TIMEOUT_MS)) {
                HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
                config.get().addBuffers().setSizeKb(256);
                config.get().setDurationMs(100);
                ConsumerConnection.TracingDisabled disabled =
                        consumer.enableTracing(config.toByteArray(), -1).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
                if (!disabled.ok()) {
                    fail("a normal session failed: " + disabled.error());
                    continue;
                }
                byte[] trace = consumer.readBuffers(TIMEOUT_MS);
                if (trace == null || !hasTraceStats(trace)) {
                    fail("a normal session's trace has no stats");
                    continue;
                }
                if (!consumer.freeBuffers(TIMEOUT_MS)) {
                    fail("a normal session's FreeBuffers failed");
                    continue;
                }
                read++;
            } catch (Exception e) {
                fail("a normal session: " + e);
            }
        } while (!stop.get());
        return read;
    }

    private static boolean hasTraceStats(byte[] trace) {
        ProtoDecoder packets = new ProtoDecoder().reset(MemorySegment.ofArray(trace));
        ProtoDecoder packet = new ProtoDecoder();
        while (packets.nextWithId(Trace.PACKET_FIELD_NUMBER)) {
            if (packet.reset(packets.field()).nextWithId(TracePacket.TRACE_STATS_FIELD_NUMBER)) {
                return true;
            }
        }
        return false;
    }
}
