package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.heapprofd.wire.ClientConfiguration;
import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.perfetto.protos.BuiltinClock;
import dev.ffmtrace.perfetto.protos.ClockSnapshot;
import dev.ffmtrace.perfetto.protos.DataSourceConfig;
import dev.ffmtrace.perfetto.protos.HeapprofdConfig;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.protozero.RepeatedScalarIterator;
import dev.ffmtrace.shmring.SharedRingBuffer;
import dev.ffmtrace.tracing.service.DataSource;
import dev.ffmtrace.tracing.service.Producer;
import dev.ffmtrace.tracing.service.ProducerOptions;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * heapprofd as the {@value #NAME} data source of an in-process {@link TracingService}:
 * while a session runs it, a {@link HeapprofdService} listens at the data source's address
 * with the session's {@code heapprofd_config} (sampling interval, heaps or all heaps, pids
 * and process command lines, ring size, block_client); it writes a heap dump of every
 * client so far (see {@code ProfileDumper}) on each flush of the session, every
 * {@code continuous_dump_config.dump_interval_ms}, and at stop, which is the session's
 * last flush; then the service closes and its clients see their socket end.
 *
 * <p>A config with neither {@code pid} nor {@code process_cmdline} profiles every client
 * that connects: connecting to this socket is the client's own choice. A
 * {@code process_cmdline} entry matches the first word of a client's command line, or its
 * base name. Dump timestamps are CLOCK_MONOTONIC_COARSE, as heapprofd's are; each dump
 * starts with a clock snapshot pairing it with BOOTTIME so a reader can place them.
 */
public final class HeapprofdDataSource implements AutoCloseable {
    /** The data source's name, Perfetto's. */
    public static final String NAME = "android.heapprofd";
    /** Perfetto's default ring size, for a config that sets no {@code shmem_size_bytes}. */
    static final long DEFAULT_RING_SIZE = 8L << 20;
    static final long MAX_RING_SIZE = 1L << 30;
    /** Perfetto's default interval, for a config that sets none. */
    static final long DEFAULT_SAMPLING_INTERVAL = 4096;
    /** The shortest continuous-dump interval honoured, as a guard against a config that asks for a dump per millisecond. */
    static final long MIN_DUMP_INTERVAL_MS = 10;

    private final Producer producer;
    private final DataSource dataSource;
    private final UnixAddress address;
    private final int packetBudget;
    private final HeapprofdService.Users users;
    private final ScheduledExecutorService timer;
    private Running running;
    private long dumpsWritten;
    private volatile RuntimeException startFailure;

    /** One session's run: its service, its writer (made at the first dump), what its dumps interned, its timer. */
    private static final class Running {
        final HeapprofdService service;
        final ProfileDumper dumper;
        TraceWriter<TracePacket> writer;
        long clearsSeen;
        ScheduledFuture<?> dumps;

        Running(HeapprofdService service, ProfileDumper dumper) {
            this.service = service;
            this.dumper = dumper;
        }
    }

    private HeapprofdDataSource(TracingService tracing, UnixAddress address, int packetBudget,
                                HeapprofdService.Users users) {
        this.address = address;
        this.users = users;
        this.packetBudget = packetBudget;
        this.producer = tracing.connectProducer(ProducerOptions.of("heapprofd"));
        this.timer = Executors.newSingleThreadScheduledExecutor(runnable ->
                Thread.ofPlatform().daemon().name("heapprofd dumps").unstarted(runnable));
        this.dataSource = producer.registerDataSource(NAME);
        dataSource.onStart(this::start);
        dataSource.onFlush(this::dump);
        dataSource.onStop(done -> {
            stop();
            done.run();
        });
    }

    /**
     * Registers heapprofd with {@code tracing} as a producer of its own offering
     * {@value #NAME}; its clients connect at {@code address} while a session runs it.
     * Register it before starting the sessions that name it.
     */
    public static HeapprofdDataSource register(TracingService tracing, UnixAddress address) {
        return register(tracing, address, HeapprofdService.Users.OWN);
    }

    /** {@link #register(TracingService, UnixAddress)}, its sessions profiling the processes of {@code users}. */
    public static HeapprofdDataSource register(TracingService tracing, UnixAddress address,
                                               HeapprofdService.Users users) {
        return register(tracing, address, ProfileDumper.DEFAULT_PACKET_BUDGET, users);
    }

    static HeapprofdDataSource register(TracingService tracing, UnixAddress address, int packetBudget) {
        return register(tracing, address, packetBudget, HeapprofdService.Users.OWN);
    }

    private static HeapprofdDataSource register(TracingService tracing, UnixAddress address, int packetBudget,
                                                HeapprofdService.Users users) {
        Objects.requireNonNull(tracing, "tracing");
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(users, "users");
        return new HeapprofdDataSource(tracing, address, packetBudget, users);
    }

    /** Where clients connect while a session runs the data source. */
    public UnixAddress address() {
        return address;
    }

    /** The service of the running session; null when none runs. */
    public synchronized HeapprofdService service() {
        return running == null ? null : running.service;
    }

    /** The dumps written so far, of every session: at intervals, flushes and stops. */
    public synchronized long dumpsWritten() {
        return dumpsWritten;
    }

    /** Why the last session could not start the service (e.g. the address was taken); null if it could. */
    public RuntimeException startFailure() {
        return startFailure;
    }

    private synchronized void start(byte[] config) {
        stop();
        HeapprofdConfig.Decoder heapprofd = new HeapprofdConfig.Decoder();
        DataSourceConfig.Decoder source = new DataSourceConfig.Decoder();
        source.reset(MemorySegment.ofArray(config));
        if (!source.heapprofdConfig(heapprofd)) {
            heapprofd.reset(MemorySegment.ofArray(new byte[0]));
        }
        HeapprofdService service;
        try {
            service = HeapprofdService.start(address, clientConfiguration(heapprofd),
                    ringSize(heapprofd.shmemSizeBytes()), filter(heapprofd), users);
            startFailure = null;
        } catch (RuntimeException e) {
            // Thrown into the session's start otherwise: the session runs, without heap profiles.
            startFailure = e;
            return;
        }
        Running run = new Running(service, new ProfileDumper(packetBudget, ProfileDumper.DEFAULT_MAX_INTERNED));
        running = run;
        HeapprofdConfig.ContinuousDumpConfig.Decoder continuous = new HeapprofdConfig.ContinuousDumpConfig.Decoder();
        if (heapprofd.continuousDumpConfig(continuous) && continuous.dumpIntervalMs() != 0) {
            long interval = Math.max(MIN_DUMP_INTERVAL_MS, Integer.toUnsignedLong(continuous.dumpIntervalMs()));
            long phase = Integer.toUnsignedLong(continuous.dumpPhaseMs());
            run.dumps = timer.scheduleAtFixedRate(() -> dumpIfRunning(run), phase == 0 ? interval : phase, interval,
                    TimeUnit.MILLISECONDS);
        }
    }

    /** The configuration clients get, from the session's config, with Perfetto's defaults where it sets nothing. */
    static ClientConfiguration clientConfiguration(HeapprofdConfig.Decoder config) {
        long interval = config.samplingIntervalBytes() != 0 ? config.samplingIntervalBytes() : DEFAULT_SAMPLING_INTERVAL;
        List<Long> intervals = new ArrayList<>();
        RepeatedScalarIterator scalars = config.heapSamplingIntervals(new RepeatedScalarIterator());
        while (scalars.next()) {
            intervals.add(scalars.value());
        }
        List<ClientConfiguration.Heap> heaps = new ArrayList<>();
        RepeatedFieldIterator names = config.heaps(new RepeatedFieldIterator());
        while (names.next() && heaps.size() < ClientConfiguration.MAX_HEAPS) {
            long heapInterval = heaps.size() < intervals.size() && intervals.get(heaps.size()) != 0
                    ? intervals.get(heaps.size()) : interval;
            try {
                heaps.add(new ClientConfiguration.Heap(names.field().asString(), heapInterval));
            } catch (IllegalArgumentException e) {
                // A name no client could send (empty, too long, with a NUL): no heap matches it.
            }
        }
        if (heaps.isEmpty() && !config.allHeaps()) {
            heaps.add(new ClientConfiguration.Heap(ClientConnection.DEFAULT_HEAP_NAME, interval));
        }
        return new ClientConfiguration(interval, Integer.toUnsignedLong(config.blockClientTimeoutUs()),
                config.adaptiveSamplingShmemThreshold(), config.adaptiveSamplingMaxSamplingIntervalBytes(), heaps,
                config.blockClient(), config.disableForkTeardown(), config.disableVforkDetection(), config.allHeaps());
    }

    /** {@code shmem_size_bytes} rounded up to a power of two a ring can have, between a page and 1 GiB. */
    static long ringSize(long shmemSizeBytes) {
        if (shmemSizeBytes == 0) {
            return DEFAULT_RING_SIZE;
        }
        long size = Math.max(Os.pageSize(), Math.min(MAX_RING_SIZE, shmemSizeBytes));
        return Long.bitCount(size) == 1 ? size : Long.highestOneBit(size) << 1;
    }

    static HeapprofdService.ClientFilter filter(HeapprofdConfig.Decoder config) {
        Set<Long> pids = new HashSet<>();
        RepeatedScalarIterator scalars = config.pid(new RepeatedScalarIterator());
        while (scalars.next()) {
            pids.add(scalars.value());
        }
        Set<String> cmdlines = new HashSet<>();
        RepeatedFieldIterator names = config.processCmdline(new RepeatedFieldIterator());
        while (names.next()) {
            cmdlines.add(names.field().asString());
        }
        if (config.all() || (pids.isEmpty() && cmdlines.isEmpty())) {
            return (pid, cmdline) -> true;
        }
        return (pid, cmdline) -> pids.contains((long) pid) || cmdlines.contains(cmdline)
                || cmdlines.contains(cmdline.substring(cmdline.lastIndexOf('/') + 1));
    }

    private void dumpIfRunning(Running run) {
        synchronized (this) {
            if (running == run) {
                dump();
            }
        }
    }

    /** Writes a dump of every client of the running session; nothing when none runs. */
    private synchronized void dump() {
        Running run = running;
        if (run == null) {
            return;
        }
        if (run.writer == null) {
            run.writer = dataSource.newTraceWriter(BufferExhaustedPolicy.DROP);
            run.clearsSeen = dataSource.incrementalStateClears();
        }
        if (dataSource.incrementalStateClears() != run.clearsSeen) {
            // The buffer lost packets, perhaps ones that defined ids: define them all again.
            run.clearsSeen = dataSource.incrementalStateClears();
            run.dumper.clearIncrementalState();
        }
        long monotonicCoarse = Os.clockNanos(Os.CLOCK_MONOTONIC_COARSE);
        long boottime = Os.clockNanos(Os.CLOCK_BOOTTIME);
        writeClockSnapshot(run.writer, monotonicCoarse, boottime);
        run.dumper.dump(run.writer, heaps(run.service), monotonicCoarse, boottime);
        run.writer.flush();
        dumpsWritten++;
    }

    private static void writeClockSnapshot(TraceWriter<TracePacket> writer, long monotonicCoarse, long boottime) {
        TracePacket packet = writer.newTracePacket();
        packet.setTimestamp(boottime);
        ClockSnapshot snapshot = packet.setClockSnapshot();
        ClockSnapshot.Clock coarse = snapshot.addClocks();
        coarse.setClockId(BuiltinClock.BUILTIN_CLOCK_MONOTONIC_COARSE.number());
        coarse.setTimestamp(monotonicCoarse);
        ClockSnapshot.Clock boot = snapshot.addClocks();
        boot.setClockId(BuiltinClock.BUILTIN_CLOCK_BOOTTIME.number());
        boot.setTimestamp(boottime);
        writer.finishTracePacket();
    }

    /** Every heap of every client of {@code service}, clients in the order they connected, heaps by id. */
    static List<ProfileDumper.Heap> heaps(HeapprofdService service) {
        List<ProfileDumper.Heap> heaps = new ArrayList<>();
        ClientConfiguration configuration = service.configuration();
        for (ClientConnection client : service.clients()) {
            SharedRingBuffer.Stats ring = client.ringStats();
            ProfileDumper.Stats stats = new ProfileDumper.Stats(client.unwindingErrors(), client.nativeStacks(),
                    client.mapsReparses(), ring == null ? 0 : ring.clientSpinlockBlockedUs(),
                    // As Perfetto's: overran when the client gave up waiting for room, corrupt when a write or read was.
                    ring != null && ring.errorState() == SharedRingBuffer.ErrorState.HIT_TIMEOUT.code(),
                    client.ringCorrupt() || (ring != null && ring.numWritesCorrupt() > 0), client.isClosed());
            PerfMap jitNames = client.jitSymbols.current();
            for (Map.Entry<Integer, HeapBooks> heap : new TreeMap<>(client.heaps).entrySet()) {
                String name = client.heapName(heap.getKey());
                heaps.add(new ProfileDumper.Heap(client.pid, client.name, name, configuration.samplingInterval(name),
                        heap.getValue().samples(jitNames::named), stats));
            }
        }
        return heaps;
    }

    /** Stops the running session's continuous dumps and closes its service; its writer is closed. */
    private synchronized void stop() {
        Running run = running;
        if (run == null) {
            return;
        }
        running = null;
        if (run.dumps != null) {
            run.dumps.cancel(false);
        }
        run.service.close();
        if (run.writer != null) {
            run.writer.close();
        }
    }

    /** Stops what runs and withdraws the producer. */
    @Override
    public void close() {
        stop();
        timer.shutdownNow();
        producer.close();
    }
}
