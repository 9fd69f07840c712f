package dev.ffmtrace.jvm;

import dev.ffmtrace.perfetto.protos.BuiltinClock;
import dev.ffmtrace.perfetto.protos.ClockSnapshot;
import dev.ffmtrace.perfetto.protos.CounterDescriptor;
import dev.ffmtrace.tracing.trackevent.TracePacketSink;
import dev.ffmtrace.tracing.util.LongMap;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;
import jdk.jfr.consumer.RecordedEvent;

/**
 * Maps JFR events of one JVM to Perfetto packets on one sequence: the mapping a live
 * session and the offline converter share.
 *
 * <ul>
 * <li><b>Threads:</b> each Java thread's events on a thread track (pid, OS tid, Java
 *     name); a virtual thread's on a track of its own under the process.
 * <li><b>Slices:</b> garbage collections, their pause and concurrent phases nested, on a
 *     track per collector ("GC G1New") under the process; safepoints on "Safepoints";
 *     VM operations, compilations, parks, monitor enters and waits, sleeps and pinned
 *     virtual threads on the thread that had them, their fields as annotations. A
 *     monitor's previous owner (or a wait's notifier) gets an instant where it let go,
 *     with a flow to an instant where the waiter got the monitor, ending its slice.
 * <li><b>Counters:</b> heap used and committed, metaspace used and committed, JVM and
 *     machine CPU load, each thread's CPU load, live Java threads, allocation rate.
 * <li><b>CPU samples:</b> execution samples (and CPU-time samples where the JDK has
 *     them) as {@code PerfSample}s with interned frames ({@code pkg.Class.method}, line,
 *     bytecode index as the pc, JFR's frame type as the mapping).
 * <li><b>Allocations:</b> weighted allocation samples as a heap profile (heap "java", the
 *     allocated class as the leaf frame), written by {@link #finish()}.
 * </ul>
 *
 * Timestamps stay on JFR's clock, CLOCK_REALTIME. Events of other types are counted, not
 * written. An event whose fields are not what this JDK's are (another JDK's recording)
 * is counted as malformed and skipped; nothing is thrown to the caller. One thread calls
 * at a time.
 */
public final class JfrMapping {
    /** The JFR event types this mapping writes: what a live session enables. */
    public static final Set<String> EVENT_TYPES = Set.of("jdk.GarbageCollection", "jdk.GCPhasePause",
            "jdk.GCPhasePauseLevel1", "jdk.GCPhasePauseLevel2", "jdk.GCPhasePauseLevel3", "jdk.GCPhasePauseLevel4",
            "jdk.GCPhaseConcurrent", "jdk.GCPhaseConcurrentLevel1", "jdk.GCPhaseConcurrentLevel2",
            "jdk.SafepointBegin", "jdk.SafepointEnd", "jdk.ExecuteVMOperation", "jdk.Compilation", "jdk.ThreadPark",
            "jdk.ThreadSleep", "jdk.VirtualThreadPinned", "jdk.JavaMonitorEnter", "jdk.JavaMonitorWait",
            "jdk.ExecutionSample", "jdk.CPUTimeSample", "jdk.ObjectAllocationSample", "jdk.GCHeapSummary",
            "jdk.MetaspaceSummary", "jdk.CPULoad", "jdk.ThreadCPULoad", "jdk.JavaThreadStatistics");
    private static final long NO_FLOW = 0;
    /** Event types with a handler at once; each chunk of a recording may bring new type objects. */
    private static final int MAX_KNOWN_TYPES = 1024;

    private final JvmPacketWriter writer;
    private final long pid;
    private final long realtimeToMonotonicCoarse;
    private final JvmTrack process;
    private final JvmTrack safepoints;
    private final JvmTrack heapUsed;
    private final JvmTrack heapCommitted;
    private final JvmTrack metaspaceUsed;
    private final JvmTrack metaspaceCommitted;
    private final JvmTrack jvmUserCpu;
    private final JvmTrack jvmSystemCpu;
    private final JvmTrack machineCpu;
    private final JvmTrack javaThreads;
    private final JvmTrack allocationRateTrack;
    /** Threads' tracks by Java thread id (negated for a virtual thread; OS id for a thread with none): no boxing, nor hashing of the thread's object. */
    private final LongMap<JvmTrack> threads = new LongMap<>();
    /** Event types met, by identity: each chunk of a recording may bring new type objects. */
    private final Map<JfrEventType, KnownType> knownTypes = new IdentityHashMap<>();
    private final RecordedEventView recorded = new RecordedEventView();
    private JfrEventType lastType;
    private KnownType lastKnown;
    /** Counts of the types {@link #knownTypes} forgot when it was full. */
    private final Map<String, Long> retiredIgnored = new TreeMap<>();
    private final Map<String, Long> retiredMalformed = new TreeMap<>();
    private final Map<String, JvmTrack> collectors = new HashMap<>();
    private final Map<JvmTrack, JvmTrack> threadCpu = new HashMap<>();
    private final CollectionSlices collections;
    private final AllocationProfile allocations = new AllocationProfile();
    private final AllocationRate allocationRate = new AllocationRate();
    private final Args args = new Args();
    private long mapped;
    private long withoutThread;
    private long nextFlow = 1;
    private boolean finished;

    /**
     * @param sink the sequence to write on
     * @param pid the recorded JVM's process id
     * @param processName its name, as the process track shows it
     * @param processUuid the process track's uuid, or 0 for one derived from {@code pid}: a
     *     live session passes the SDK's ({@code TrackEvent.processTrack()}), so that the
     *     JVM's tracks and the application's share their process and virtual threads' tracks
     * @param realtimeToMonotonicCoarse CLOCK_REALTIME minus CLOCK_MONOTONIC_COARSE, for the
     *     heap profile's timestamps (0 where the trace equates the two, as the converter's does)
     */
    public JfrMapping(TracePacketSink sink, long pid, String processName, long processUuid,
                      long realtimeToMonotonicCoarse) {
        this.writer = new JvmPacketWriter(sink);
        this.pid = pid;
        this.realtimeToMonotonicCoarse = realtimeToMonotonicCoarse;
        this.process = JvmTrack.process(processUuid, pid, processName);
        this.collections = new CollectionSlices(writer);
        this.safepoints = JvmTrack.named(process, "Safepoints");
        this.heapUsed = JvmTrack.counter(process, "Heap used", CounterDescriptor.Unit.UNIT_SIZE_BYTES);
        this.heapCommitted = JvmTrack.counter(process, "Heap committed", CounterDescriptor.Unit.UNIT_SIZE_BYTES);
        this.metaspaceUsed = JvmTrack.counter(process, "Metaspace used", CounterDescriptor.Unit.UNIT_SIZE_BYTES);
        this.metaspaceCommitted =
                JvmTrack.counter(process, "Metaspace committed", CounterDescriptor.Unit.UNIT_SIZE_BYTES);
        this.jvmUserCpu = JvmTrack.counter(process, "JVM user CPU %", CounterDescriptor.Unit.UNIT_UNSPECIFIED);
        this.jvmSystemCpu = JvmTrack.counter(process, "JVM system CPU %", CounterDescriptor.Unit.UNIT_UNSPECIFIED);
        this.machineCpu = JvmTrack.counter(process, "Machine CPU %", CounterDescriptor.Unit.UNIT_UNSPECIFIED);
        this.javaThreads = JvmTrack.counter(process, "Java threads", CounterDescriptor.Unit.UNIT_COUNT);
        this.allocationRateTrack =
                JvmTrack.counter(process, "Allocation rate (bytes/s)", CounterDescriptor.Unit.UNIT_SIZE_BYTES);
        writer.describe(process);
    }

    /**
     * Declares the trace's timeline to be CLOCK_REALTIME, JFR's own: for a trace of a
     * recording alone, where no other clock is known. Call before the first event.
     */
    public void declareRealtimeTimeline(long realtime) {
        var snapshot = writer.packet(realtime).setClockSnapshot();
        for (BuiltinClock clock : List.of(BuiltinClock.BUILTIN_CLOCK_REALTIME, BuiltinClock.BUILTIN_CLOCK_BOOTTIME,
                BuiltinClock.BUILTIN_CLOCK_MONOTONIC_COARSE)) {
            ClockSnapshot.Clock entry = snapshot.addClocks();
            entry.setClockId(clock.number());
            entry.setTimestamp(realtime);
        }
        snapshot.setPrimaryTraceClock(BuiltinClock.BUILTIN_CLOCK_REALTIME);
        writer.finish();
    }

    /** Maps one event; never throws. */
    public void accept(RecordedEvent event) {
        accept(recorded.of(event));
    }

    /** Maps one event, read by whichever reader; never throws. */
    void accept(JfrEventView event) {
        JfrEventType type = event.type();
        KnownType known = type == lastType ? lastKnown : known(type);
        if (known.handler == null || finished) {
            known.ignored++;
            return;
        }
        try {
            known.handler.map(event);
            mapped++;
        } catch (RuntimeException e) {
            known.malformed++;
        }
    }

    /**
     * Writes what waits for the end: the allocation heap profile and the last seconds of
     * allocation rate; then flushes the sink. Further events are ignored.
     */
    public void finish() {
        if (finished) {
            return;
        }
        finished = true;
        collections.finish();
        allocationRate.finish(writer, allocationRateTrack);
        if (!allocations.isEmpty()) {
            allocations.write(writer, pid, realtimeToMonotonicCoarse);
        }
        writer.flush();
    }

    /** What was mapped and what was not, so far. */
    public JfrMappingStats stats() {
        Map<String, Long> ignored = new TreeMap<>(retiredIgnored);
        Map<String, Long> malformed = new TreeMap<>(retiredMalformed);
        knownTypes.values().forEach(known -> known.countInto(ignored, malformed));
        return new JfrMappingStats(mapped, Collections.unmodifiableMap(ignored), Collections.unmodifiableMap(malformed),
                withoutThread, collections.droppedPhases(), allocationRate.lateSamples());
    }

    /** What maps events of one type; made once per type, which spares each event the work on names. */
    @FunctionalInterface
    private interface Handler {
        void map(JfrEventView event);
    }

    /** An event type met: its handler (null: not written), and its events ignored and malformed. */
    private static final class KnownType {
        final String name;
        final Handler handler;
        long ignored;
        long malformed;

        KnownType(String name, Handler handler) {
            this.name = name;
            this.handler = handler;
        }

        void countInto(Map<String, Long> ignoredByName, Map<String, Long> malformedByName) {
            if (ignored > 0) {
                ignoredByName.merge(name, ignored, Long::sum);
            }
            if (malformed > 0) {
                malformedByName.merge(name, malformed, Long::sum);
            }
        }
    }

    /** {@code type}, with its handler made on first sight. */
    private KnownType known(JfrEventType type) {
        KnownType known = knownTypes.get(type);
        if (known == null) {
            if (knownTypes.size() == MAX_KNOWN_TYPES) {
                knownTypes.values().forEach(old -> old.countInto(retiredIgnored, retiredMalformed));
                knownTypes.clear();
            }
            known = new KnownType(type.name(), newHandler(type));
            knownTypes.put(type, known);
        }
        lastType = type;
        lastKnown = known;
        return known;
    }

    private Handler newHandler(JfrEventType type) {
        return switch (type.name()) {
            case "jdk.GarbageCollection" -> collection(type);
            case "jdk.GCPhasePause", "jdk.GCPhaseConcurrent" -> phase(type, 1);
            case "jdk.GCPhasePauseLevel1", "jdk.GCPhaseConcurrentLevel1" -> phase(type, 2);
            case "jdk.GCPhasePauseLevel2", "jdk.GCPhaseConcurrentLevel2" -> phase(type, 3);
            case "jdk.GCPhasePauseLevel3" -> phase(type, 4);
            case "jdk.GCPhasePauseLevel4" -> phase(type, 5);
            case "jdk.SafepointBegin", "jdk.SafepointEnd" -> {
                EventFields fields = EventFields.of(type, "safepointId");
                String label = type.label();
                yield event -> slice(event, safepoints, label, fields.addTo(event, args.clear()));
            }
            case "jdk.ExecuteVMOperation" -> {
                int operation = type.field("operation");
                EventFields fields = EventFields.of(type, "safepoint", "blocking", "caller", "safepointId");
                yield onThread(type, event -> event.stringValue(operation), fields);
            }
            case "jdk.Compilation" -> {
                int method = type.field("method");
                yield onThread(type, event -> "Compilation " + orUnknown(event.methodName(method)),
                        EventFields.of(type, "compileId", "compiler", "compileLevel", "succeded", "isOsr", "codeSize",
                                "inlinedBytes"));
            }
            case "jdk.ThreadPark" -> onThread(type, event -> "Thread park",
                    EventFields.of(type, "parkedClass", "timeout", "until"));
            case "jdk.ThreadSleep" -> onThread(type, event -> "Thread sleep", EventFields.of(type, "time"));
            case "jdk.VirtualThreadPinned" -> onThread(type, event -> "Virtual thread pinned", EventFields.of(type));
            case "jdk.JavaMonitorEnter" ->
                    handOver(type, "Monitor enter", "previousOwner", "Monitor acquired", "Monitor released");
            case "jdk.JavaMonitorWait" -> handOver(type, "Monitor wait", "notifier", "Monitor notified", "Notify");
            case "jdk.ExecutionSample" -> {
                int thread = type.field("sampledThread");
                int stack = type.field("stackTrace");
                yield event -> sample(event, event.thread(thread), stack);
            }
            case "jdk.CPUTimeSample" -> {
                int failed = type.field("failed");
                int thread = type.field("eventThread");
                int stack = type.field("stackTrace");
                yield event -> {
                    if (!event.booleanValue(failed)) {
                        sample(event, event.thread(thread), stack);
                    }
                };
            }
            case "jdk.ObjectAllocationSample" -> allocation(type);
            case "jdk.GCHeapSummary" ->
                    usedAndCommitted(type, "heapUsed", heapUsed, "heapSpace.committedSize", heapCommitted);
            case "jdk.MetaspaceSummary" ->
                    usedAndCommitted(type, "metaspace.used", metaspaceUsed, "metaspace.committed", metaspaceCommitted);
            case "jdk.CPULoad" -> {
                int user = type.field("jvmUser");
                int system = type.field("jvmSystem");
                int machine = type.field("machineTotal");
                yield event -> {
                    long at = event.startNanos();
                    writer.counter(at, jvmUserCpu, 100.0 * event.doubleValue(user));
                    writer.counter(at, jvmSystemCpu, 100.0 * event.doubleValue(system));
                    writer.counter(at, machineCpu, 100.0 * event.doubleValue(machine));
                };
            }
            case "jdk.ThreadCPULoad" -> threadCpu(type);
            case "jdk.JavaThreadStatistics" -> {
                int active = type.field("activeCount");
                yield event -> writer.counter(event.startNanos(), javaThreads, event.longValue(active));
            }
            default -> null;
        };
    }

    /** Two counters from one event: bytes used and committed. */
    private Handler usedAndCommitted(JfrEventType type, String usedField, JvmTrack used, String committedField,
                                     JvmTrack committed) {
        int usedAt = type.field(usedField);
        int committedAt = type.field(committedField);
        return event -> {
            long at = event.startNanos();
            writer.counter(at, used, event.longValue(usedAt));
            writer.counter(at, committed, event.longValue(committedAt));
        };
    }

    private Handler collection(JfrEventType type) {
        int name = type.field("name");
        int gcId = type.field("gcId");
        EventFields fields = EventFields.of(type, "gcId", "cause", "sumOfPauses", "longestPause");
        return event -> {
            String collector = event.stringValue(name);
            JvmTrack track = collectors.computeIfAbsent(collector, n -> JvmTrack.named(process, "GC " + n));
            collections.collection(event.longValue(gcId), track, collector, event.startNanos(), event.endNanos(),
                    fields.addTo(event, args.clear()));
        };
    }

    private Handler phase(JfrEventType type, int level) {
        int gcId = type.field("gcId");
        int name = type.field("name");
        return event -> collections.phase(event.longValue(gcId), level, event.stringValue(name), event.startNanos(),
                event.endNanos());
    }

    /** A slice named {@code name} on the thread that had the event, with {@code fields} as annotations. */
    private Handler onThread(JfrEventType type, Function<JfrEventView, String> name, EventFields fields) {
        int threadField = type.field("eventThread");
        return event -> {
            JvmTrack track = threadField < 0 ? null : threadTrack(event.thread(threadField));
            if (track == null) {
                withoutThread++;
                return;
            }
            slice(event, track, name.apply(event), fields.addTo(event, args.clear()));
        };
    }

    /**
     * A wait for a monitor that another thread held ({@code ownerField}): a slice on the
     * waiter, ending with an instant where it got the monitor, and a flow to that instant
     * from one on the owner where it let go. The trace processor points a flow from the
     * earlier-starting slice, so the flow joins the two instants, not the waiter's slice.
     */
    private Handler handOver(JfrEventType type, String name, String ownerField, String acquired, String released) {
        int thread = type.field("eventThread");
        int monitor = type.field("monitorClass");
        int ownerThread = type.field(ownerField);
        EventFields fields = EventFields.of(type, ownerField, "timeout", "timedOut");
        return event -> {
            JvmTrack track = threadTrack(event.thread(thread));
            if (track == null) {
                withoutThread++;
                return;
            }
            String monitorClass = orUnknown(event.className(monitor));
            long start = event.startNanos();
            long end = event.endNanos();
            JvmTrack owner = threadTrack(event.thread(ownerThread));
            writer.begin(start, track, name, fields.addTo(event, args.clear()).add("monitorClass", monitorClass));
            if (owner != null) {
                long flow = nextFlow++;
                // The owner let go before the waiter got in; at the end, the waiter's instant
                // comes before its slice's end, so it nests inside the slice.
                writer.instant(end - 1, owner, released, args.clear().add("monitorClass", monitorClass), flow,
                        NO_FLOW);
                writer.instant(end, track, acquired, args.clear(), NO_FLOW, flow);
            }
            writer.end(end, track);
        };
    }

    private void slice(JfrEventView event, JvmTrack track, String name, Args args) {
        writer.begin(event.startNanos(), track, name, args);
        writer.end(event.endNanos(), track);
    }

    private void sample(JfrEventView event, JfrThread thread, int stackField) {
        List<JavaFrame> stack = event.stack(stackField);
        JvmTrack track = threadTrack(thread);
        // A virtual thread's track is not a thread's: its samples have no tid to go to.
        if (track == null || stack == null || track.kind() != JvmTrack.Kind.THREAD) {
            withoutThread++;
            return;
        }
        writer.sample(event.startNanos(), pid, track.tid(), stack);
    }

    private Handler allocation(JfrEventType type) {
        int weightField = type.field("weight");
        int stackField = type.field("stackTrace");
        int objectClass = type.field("objectClass");
        return event -> {
            long at = event.startNanos();
            long weight = event.longValue(weightField);
            allocationRate.add(at, weight, writer, allocationRateTrack);
            List<JavaFrame> stack = event.stack(stackField);
            List<JavaFrame> frames = stack == null ? new ArrayList<>(1) : new ArrayList<>(stack);
            frames.add(JavaFrame.allocated(orUnknown(event.className(objectClass))));
            allocations.add(at, frames, weight);
        };
    }

    private Handler threadCpu(JfrEventType type) {
        int threadField = type.field("eventThread");
        int user = type.field("user");
        int system = type.field("system");
        return event -> {
            JvmTrack thread = threadTrack(event.thread(threadField));
            if (thread == null) {
                withoutThread++;
                return;
            }
            JvmTrack counter = threadCpu.computeIfAbsent(thread,
                    t -> JvmTrack.counter(t, "CPU %", CounterDescriptor.Unit.UNIT_UNSPECIFIED));
            writer.counter(event.startNanos(), counter,
                    100.0 * ((float) event.doubleValue(user) + (float) event.doubleValue(system)));
        };
    }

    /** The track of {@code thread}: its own, made on first sight; null for none. */
    private JvmTrack threadTrack(JfrThread thread) {
        if (thread == null) {
            return null;
        }
        long javaId = thread.javaThreadId();
        boolean virtual = thread.virtual();
        long key = virtual ? -javaId : javaId >= 0 ? javaId : (1L << 62) | thread.osThreadId();
        JvmTrack track = threads.get(key);
        if (track == null) {
            String name = thread.displayName();
            if (virtual) {
                track = JvmTrack.virtualThread(process, javaId,
                        name == null || name.isEmpty() ? "virtual thread " + javaId : name);
            } else {
                track = JvmTrack.thread(process, key, thread.osThreadId(), name == null ? "" : name);
            }
            threads.put(key, track);
        }
        return track;
    }

    private static String orUnknown(String name) {
        return name == null ? "[unknown]" : name;
    }

    /** Nanoseconds since the epoch: JFR's timestamps are CLOCK_REALTIME. */
    static long nanos(Instant instant) {
        return instant.getEpochSecond() * 1_000_000_000L + instant.getNano();
    }
}
