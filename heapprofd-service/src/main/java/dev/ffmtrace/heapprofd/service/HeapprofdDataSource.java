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
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.sdk.DataSource;
import dev.ffmtrace.tracing.sdk.DataSourceCallbacks;
import dev.ffmtrace.tracing.sdk.InstanceSetup;
import dev.ffmtrace.tracing.sdk.Tracing;
import dev.ffmtrace.tracing.trackevent.TracePacketSink;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;

/**
 * heapprofd as the {@value #NAME} data source of the SDK ({@link DataSource}), on every
 * backend {@link Tracing} has: an in-process {@code TracingService}, or the system's
 * service ({@code traced}, {@code ffmtrace serve}) as a producer of its own. While a
 * session runs it, a {@link HeapprofdService} listens at the data source's address with
 * the session's {@code heapprofd_config} (sampling interval, heaps or all heaps, pids and
 * process command lines, ring size, block_client); it writes a heap dump of every client
 * so far (see {@code ProfileDumper}) on each flush of the session, every
 * {@code continuous_dump_config.dump_interval_ms}, and at stop, which is the session's
 * last flush; then the service closes and its clients see their socket end. One session
 * at a time: the address is one socket.
 *
 * <p>A config with neither {@code pid} nor {@code process_cmdline} profiles every client
 * that connects: connecting to this socket is the client's own choice. A
 * {@code process_cmdline} entry matches the first word of a client's command line, or its
 * base name. Dump timestamps are CLOCK_MONOTONIC_COARSE, as heapprofd's are; each dump
 * starts with a clock snapshot pairing it with BOOTTIME so a reader can place them.
 *
 * <p>Every dump is written by one thread of the data source's own, so that a session's
 * dumps are one packet sequence whose interned ids each dump refers to.
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

    private final DataSource<Instance> dataSource;
    private final UnixAddress address;
    private final int packetBudget;
    private final HeapprofdService.Users users;
    /** The one thread that writes dumps, and runs the continuous ones. */
    private final ScheduledExecutorService dumper;
    /** Guarded by this: the instance whose service listens, or null. */
    private Instance running;
    private final AtomicLong dumpsWritten = new AtomicLong();
    private volatile RuntimeException startFailure;

    /** One session's instance: its place, its config, and once started its service, dumper and timer. */
    private static final class Instance {
        final int index;
        final HeapprofdConfig.Decoder config;
        HeapprofdService service;
        ProfileDumper dumper;
        /** The sequence's incremental-state epoch the dumper's interned ids were written in. */
        long epochSeen = -1;
        /** What the last dump showed ({@link #changes}), or null before the first. */
        List<Long> dumped;
        ScheduledFuture<?> dumps;

        Instance(int index, HeapprofdConfig.Decoder config) {
            this.index = index;
            this.config = config;
        }
    }

    private HeapprofdDataSource(UnixAddress address, int packetBudget, HeapprofdService.Users users) {
        this.address = address;
        this.users = users;
        this.packetBudget = packetBudget;
        this.dumper = Executors.newSingleThreadScheduledExecutor(runnable ->
                Thread.ofPlatform().daemon().name("heapprofd dumps").unstarted(runnable));
        this.dataSource = DataSource.register(DataSourceDescriptor.named(NAME), new Callbacks());
    }

    /**
     * Registers heapprofd with the SDK's backends (those {@link Tracing} has, and will
     * have) as data source {@value #NAME}; its clients connect at {@code address} while a
     * session runs it. {@link #close} withdraws it.
     */
    public static HeapprofdDataSource register(UnixAddress address) {
        return register(address, HeapprofdService.Users.OWN);
    }

    /** {@link #register(UnixAddress)}, its sessions profiling the processes of {@code users}. */
    public static HeapprofdDataSource register(UnixAddress address, HeapprofdService.Users users) {
        return register(address, ProfileDumper.DEFAULT_PACKET_BUDGET, users);
    }

    static HeapprofdDataSource register(UnixAddress address, int packetBudget) {
        return register(address, packetBudget, HeapprofdService.Users.OWN);
    }

    private static HeapprofdDataSource register(UnixAddress address, int packetBudget, HeapprofdService.Users users) {
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(users, "users");
        return new HeapprofdDataSource(address, packetBudget, users);
    }

    /** Where clients connect while a session runs the data source. */
    public UnixAddress address() {
        return address;
    }

    /** The service of the running session; null when none runs. */
    public synchronized HeapprofdService service() {
        return running == null ? null : running.service;
    }

    /**
     * Waits until a session started the data source (the SDK starts it as its backend
     * hears of the session) or the start failed ({@link #startFailure()}); returns the
     * running service, or null if none runs when {@code timeout} passed or the start failed.
     */
    public synchronized HeapprofdService awaitService(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (running == null && startFailure == null) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return null;
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
        return service();
    }

    /** The dumps written so far, of every session: at intervals, flushes and stops. */
    public long dumpsWritten() {
        return dumpsWritten.get();
    }

    /** Why the last session could not start the service (e.g. the address was taken); null if it could. */
    public RuntimeException startFailure() {
        return startFailure;
    }

    /** The SDK's calls, on the backend's connection thread. */
    private final class Callbacks implements DataSourceCallbacks<Instance> {
        @Override
        public Instance onSetup(InstanceSetup setup) {
            HeapprofdConfig.Decoder heapprofd = new HeapprofdConfig.Decoder();
            DataSourceConfig.Decoder source = new DataSourceConfig.Decoder();
            source.reset(MemorySegment.ofArray(setup.config()));
            if (!source.heapprofdConfig(heapprofd)) {
                heapprofd.reset(MemorySegment.ofArray(new byte[0]));
            }
            return new Instance(setup.index(), heapprofd);
        }

        @Override
        public void onStart(Instance instance) {
            start(instance);
        }

        @Override
        public void onFlush(Instance instance) {
            // The flush is answered once the dump is committed.
            try {
                dumper.submit(() -> dump(instance, true)).get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException | RejectedExecutionException e) {
                // Closed, or the dump failed: the flush is answered all the same.
            }
        }

        @Override
        public void onStop(Instance instance, Runnable done) {
            try {
                dumper.execute(() -> {
                    try {
                        // As Perfetto's heapprofd, a last dump at the stop; not a copy of the one the
                        // session's last flush wrote just before, if nothing changed since.
                        dump(instance, false);
                    } finally {
                        stop(instance);
                        done.run();
                    }
                });
            } catch (RejectedExecutionException closed) {
                stop(instance);
                done.run();
            }
        }
    }

    private void start(Instance instance) {
        HeapprofdService service;
        try {
            service = HeapprofdService.start(address, clientConfiguration(instance.config),
                    ringSize(instance.config.shmemSizeBytes()), filter(instance.config), users);
        } catch (RuntimeException e) {
            // The session runs, without heap profiles.
            synchronized (this) {
                startFailure = e;
                notifyAll();
            }
            return;
        }
        instance.service = service;
        instance.dumper = new ProfileDumper(packetBudget, ProfileDumper.DEFAULT_MAX_INTERNED);
        HeapprofdConfig.ContinuousDumpConfig.Decoder continuous = new HeapprofdConfig.ContinuousDumpConfig.Decoder();
        if (instance.config.continuousDumpConfig(continuous) && continuous.dumpIntervalMs() != 0) {
            long interval = Math.max(MIN_DUMP_INTERVAL_MS, Integer.toUnsignedLong(continuous.dumpIntervalMs()));
            long phase = Integer.toUnsignedLong(continuous.dumpPhaseMs());
            instance.dumps = dumper.scheduleAtFixedRate(() -> dump(instance, true), phase == 0 ? interval : phase,
                    interval, TimeUnit.MILLISECONDS);
        }
        synchronized (this) {
            running = instance;
            startFailure = null;
            notifyAll();
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

    /**
     * On the dumper's thread: a dump of every client of {@code instance}'s service; nothing
     * if it has none, or, unless {@code always}, if nothing changed since the last dump.
     */
    private void dump(Instance instance, boolean always) {
        if (instance.service == null) {
            return;
        }
        List<Long> changes = changes(instance.service);
        if (!always && changes.equals(instance.dumped)) {
            return;
        }
        instance.dumped = changes;
        dataSource.traceInstance(instance.index, context -> {
            TracePacketSink sink = context.sequenceState(created -> created);
            long epoch = sink.incrementalStateEpoch();
            if (epoch != instance.epochSeen) {
                // The buffer lost packets, perhaps ones that defined ids: define them all again.
                instance.epochSeen = epoch;
                instance.dumper.clearIncrementalState();
            }
            long monotonicCoarse = Os.clockNanos(Os.CLOCK_MONOTONIC_COARSE);
            long boottime = Os.clockNanos(Os.CLOCK_BOOTTIME);
            writeClockSnapshot(sink, monotonicCoarse, boottime);
            instance.dumper.dump(sink, heaps(instance.service), monotonicCoarse, boottime);
            sink.flush();
            dumpsWritten.incrementAndGet();
        });
    }

    /** What a dump shows changes with: the records booked, the clients that connected, those gone. */
    private static List<Long> changes(HeapprofdService service) {
        long gone = service.clients().stream().filter(ClientConnection::isClosed).count();
        return List.of(service.totals().records(), (long) service.clientCount(), gone);
    }

    private static void writeClockSnapshot(TracePacketSink writer, long monotonicCoarse, long boottime) {
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
            UnaryOperator<Frame> names = client.frameNames();
            for (Map.Entry<Integer, HeapBooks> heap : new TreeMap<>(client.heaps).entrySet()) {
                String name = client.heapName(heap.getKey());
                heaps.add(new ProfileDumper.Heap(client.pid, client.name, name, configuration.samplingInterval(name),
                        heap.getValue().samples(names), stats));
            }
        }
        return heaps;
    }

    /** On the dumper's thread, or once it is closed: stops the instance's continuous dumps and closes its service. */
    private void stop(Instance instance) {
        if (instance.dumps != null) {
            instance.dumps.cancel(false);
        }
        if (instance.service != null) {
            instance.service.close();
        }
        synchronized (this) {
            if (running == instance) {
                running = null;
            }
        }
    }

    /** Withdraws the data source, stops what runs, and ends the dumper's thread. */
    @Override
    public void close() {
        dataSource.unregister();
        dumper.shutdownNow();
        Instance last;
        synchronized (this) {
            last = running;
        }
        if (last != null) {
            stop(last);
        }
    }
}
