package dev.ffmtrace.tracing.sdk;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.trackevent.Category;
import dev.ffmtrace.tracing.trackevent.CategorySelection;
import dev.ffmtrace.tracing.trackevent.InternedName;
import dev.ffmtrace.tracing.trackevent.TraceWriterSink;
import dev.ffmtrace.tracing.trackevent.Track;
import dev.ffmtrace.tracing.trackevent.TrackEventWriter;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;

/**
 * Perfetto's {@code TRACE_EVENT} for Java: slices, instants and counters from any thread,
 * into every session that records their category, through the {@code track_event} data
 * source on every backend {@link Tracing} runs.
 *
 * <pre>{@code
 * static final Category RPC = new Category("rpc");
 * ...
 * try (var _ = TrackEvent.slice(RPC, "handle request")) {
 *     TrackEvent.instant(RPC, "cache miss");
 * }
 * }</pre>
 *
 * <p>Each session chooses its categories with its {@code track_event_config}, as
 * Perfetto's SDK decides ({@link CategorySelection}: "slow" and "debug" tags off unless
 * asked for); an event goes into each session that records its category, and one whose
 * category no session records costs a load and a branch. A category is decided when the
 * SDK first meets it; {@link #register} decides some ahead, which a group's tagged members
 * need to be judged by their tags.
 *
 * <p>A platform thread's events go on its thread track (pid, tid, name), written with the
 * process track once per sequence and again after incremental state is cleared. A virtual
 * thread's go on a track of its own, a child of the process track, whichever carrier
 * runs it, each event through one of the few writers the thread borrows from (a slice's
 * end may go through another writer than its begin; the trace processor nests a track's
 * slices by time). Nothing here throws into the application, but a scope closed out of
 * order does.
 *
 * <p>It is over 600 lines because it is the facade's whole public surface, as Perfetto's
 * {@code TRACE_EVENT} macros are: about twenty small static entry points over one begin,
 * one write and one end path (each in two forms: a platform thread's own writers, looked
 * up once per set of sessions, and the writers a virtual thread borrows per event), the
 * per-thread scopes that keep a slice allocation-free, and
 * the session observer with its held stop, nested as Perfetto nests them
 * ({@code TrackEvent.SessionObserver}, {@code TrackEvent.SessionStop}) because they
 * share the sessions' state this class guards.
 */
public final class TrackEvent {
    /** The data source's name, as sessions select it. */
    public static final String DATA_SOURCE_NAME = "track_event";

    private static final Track PROCESS = Track.process(Os.pid(), processName());
    private static final Object LOCK = new Object();
    /** Guarded by LOCK: the selection of the session of each running instance, by place. */
    private static final CategorySelection[] SELECTIONS = new CategorySelection[DataSource.MAX_INSTANCES];
    /** Guarded by LOCK: every category decided so far, and the plain ones by name (for groups). */
    private static final Map<Category, Boolean> DECIDED = new HashMap<>();
    private static final Map<String, Category> BY_NAME = new HashMap<>();
    private static final LongAdder MALFORMED_PATTERNS = new LongAdder();
    private static final LongAdder UNMATCHED_ENDS = new LongAdder();
    private static final ConcurrentHashMap<String, Track> COUNTER_TRACKS = new ConcurrentHashMap<>();
    private static final List<SessionObserver> OBSERVERS = new CopyOnWriteArrayList<>();
    private static final ThreadLocal<Scopes> SCOPES = ThreadLocal.withInitial(Scopes::new);
    private static final DataSource<Integer> SOURCE = DataSource.register(DataSourceDescriptor.named(DATA_SOURCE_NAME),
            new Sessions(), BufferExhaustedPolicy.DROP);

    private TrackEvent() {
    }

    /** Decides these categories now, for the running sessions and those to come. */
    public static void register(Category... categories) {
        synchronized (LOCK) {
            for (Category category : categories) {
                decide(category);
            }
        }
    }

    /** Patterns of sessions' configs that are not Perfetto's syntax (see {@link CategorySelection#malformedPatterns()}). */
    public static long malformedPatterns() {
        return MALFORMED_PATTERNS.sum();
    }

    /**
     * Begins a slice on this thread's track, named by a string made at run time, ended by
     * closing the scope (try-with-resources).
     *
     * @throws IllegalStateException from {@link Scope#close()} if scopes are closed out of order
     */
    public static Scope slice(Category category, String name) {
        int mask = category.sessionMask();
        return mask == 0 ? Scope.NONE : SCOPES.get().begin(category, null, name, null, null, 0, 0, 0, mask);
    }

    /** A slice on this thread's track named by a constant: interned, so each event refers to it by id. */
    public static Scope slice(Category category, InternedName name) {
        int mask = category.sessionMask();
        return mask == 0 ? Scope.NONE : SCOPES.get().begin(category, null, null, name, null, 0, 0, 0, mask);
    }

    /** A slice on {@code track}, a track of the application's (see {@link Track#named}). */
    public static Scope slice(Category category, Track track, String name) {
        int mask = category.sessionMask();
        return mask == 0 ? Scope.NONE : SCOPES.get().begin(category, track, name, null, null, 0, 0, 0, mask);
    }

    /** A slice with one debug annotation, {@code argument} = {@code value}. */
    public static Scope slice(Category category, InternedName name, InternedName argument, long value) {
        int mask = category.sessionMask();
        return mask == 0 ? Scope.NONE : SCOPES.get().begin(category, null, null, name, argument, value, 0, 0, mask);
    }

    /**
     * A slice that starts flow {@code flowId} and ends flow {@code terminatingFlowId} (0:
     * none), linking it to slices of other threads or processes that name the same flows.
     */
    public static Scope slice(Category category, InternedName name, long flowId, long terminatingFlowId) {
        int mask = category.sessionMask();
        return mask == 0 ? Scope.NONE
                : SCOPES.get().begin(category, null, null, name, null, 0, flowId, terminatingFlowId, mask);
    }

    /**
     * Begins a slice on this thread's track that {@link #end()} ends (Perfetto's
     * TRACE_EVENT_BEGIN and TRACE_EVENT_END), for a slice whose end is not in the same
     * block. Begins and ends pair per thread, innermost first, together with the scopes of
     * {@link #slice}, whether or not a session records the category: an end ends what the
     * thread's last begin began.
     */
    public static void begin(Category category, String name) {
        SCOPES.get().beginUnscoped(category, name, null, category.sessionMask());
    }

    /** {@link #begin(Category, String)} with a constant (interned) name. */
    public static void begin(Category category, InternedName name) {
        SCOPES.get().beginUnscoped(category, null, name, category.sessionMask());
    }

    /**
     * Ends the slice this thread's last {@link #begin} began. An end with no begin open is
     * ignored and counted in {@link #unmatchedEnds()}; one while a {@link #slice} scope is
     * the innermost throws, as closing that scope out of order would.
     *
     * @throws IllegalStateException if the innermost open slice is a scope's
     */
    public static void end() {
        Scopes scopes = SCOPES.get();
        Scope top = scopes.innermost();
        if (top == null) {
            UNMATCHED_ENDS.increment();
            return;
        }
        if (!top.unscoped) {
            throw new IllegalStateException("TrackEvent.end() while a slice scope is the innermost open slice:"
                    + " close the scope first");
        }
        top.close();
    }

    /** {@link #end()} calls that found no {@link #begin} open on their thread. */
    public static long unmatchedEnds() {
        return UNMATCHED_ENDS.sum();
    }

    /** An instant event on this thread's track. */
    public static void instant(Category category, String name) {
        int mask = category.sessionMask();
        if (mask != 0) {
            write(Event.INSTANT, category, null, name, null, 0, 0, decided(category, mask));
        }
    }

    /** An instant event named by a constant. */
    public static void instant(Category category, InternedName name) {
        int mask = category.sessionMask();
        if (mask != 0) {
            write(Event.INSTANT, category, null, null, name, 0, 0, decided(category, mask));
        }
    }

    /** An instant event on {@code track}, a track of the application's. */
    public static void instant(Category category, Track track, String name) {
        int mask = category.sessionMask();
        if (mask != 0) {
            write(Event.INSTANT, category, track, name, null, 0, 0, decided(category, mask));
        }
    }

    /** A value on the process's counter track named {@code counter}. */
    public static void counter(Category category, String counter, long value) {
        int mask = category.sessionMask();
        if (mask != 0) {
            write(Event.COUNTER, category, counterTrack(counter), null, null, value, 0, decided(category, mask));
        }
    }

    /** A value on {@code track}, a counter track (see {@link Track#counter}). */
    public static void counter(Category category, Track track, long value) {
        int mask = category.sessionMask();
        if (mask != 0) {
            write(Event.COUNTER, category, track, null, null, value, 0, decided(category, mask));
        }
    }

    /** A floating-point value on the process's counter track named {@code counter}. */
    public static void counter(Category category, String counter, double value) {
        int mask = category.sessionMask();
        if (mask != 0) {
            write(Event.DOUBLE_COUNTER, category, counterTrack(counter), null, null, 0, value, decided(category, mask));
        }
    }

    /** How many sessions run track_event here now, on every backend: 0 until one starts it. */
    public static int sessionCount() {
        return SOURCE.started().length;
    }

    /**
     * Waits until at least {@code count} sessions run track_event here (a program that
     * must not miss its first events waits for the session that records them). At least:
     * a count of 0 is met at once; a program hears sessions stop through a
     * {@link SessionObserver}.
     *
     * @return whether they do, false if {@code timeout} passed first
     */
    public static boolean awaitSessions(int count, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (LOCK) {
            while (sessionCount() < count) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(LOCK, left);
            }
            return true;
        }
    }

    /**
     * What a program hears of track_event's sessions, as Perfetto's
     * {@code TrackEventSessionObserver}: each instance's start, once the categories are
     * decided for it, and its stop, while the session still records (events written from
     * {@code onStop} go in). Called on the backend's connection thread: an observer must
     * not wait there for threads that trace (it holds the stop instead, see
     * {@link SessionStop}); what it throws is ignored.
     */
    public interface SessionObserver {
        /** A session started track_event: events of the categories it selects go into it from now on. */
        default void onStart(InstanceSetup instance) {
        }

        /**
         * A session stops track_event: it records until this returns, or, if this called
         * {@link SessionStop#handleStopAsynchronously()}, until the action that returned has run.
         */
        default void onStop(SessionStop stop) {
        }
    }

    /**
     * An instance of track_event that stops, as Perfetto's {@code StopArgs}: an observer that
     * must wait for the application's threads (their last events) holds the stop, waits on a
     * thread of its own, and runs the action it got when they are done.
     */
    public static final class SessionStop {
        private final InstanceSetup instance;
        /** One for {@code onStop} itself, one per asynchronous handling; the stop completes at 0. */
        private final AtomicInteger holds = new AtomicInteger(1);
        private final Runnable complete;

        SessionStop(InstanceSetup instance, Runnable complete) {
            this.instance = instance;
            this.complete = complete;
        }

        /** The instance that stops. */
        public InstanceSetup instance() {
            return instance;
        }

        /**
         * Holds the stop: the session records until the returned action runs (once, from
         * any thread; later runs do nothing). Call it inside {@code onStop}; called after the
         * stop completed, it holds nothing.
         */
        public Runnable handleStopAsynchronously() {
            for (int now = holds.get(); now > 0; now = holds.get()) {
                if (holds.compareAndSet(now, now + 1)) {
                    AtomicBoolean ran = new AtomicBoolean();
                    return () -> {
                        if (ran.compareAndSet(false, true)) {
                            release();
                        }
                    };
                }
            }
            return () -> { };
        }

        void release() {
            if (holds.decrementAndGet() == 0) {
                complete.run();
            }
        }
    }

    /** Tells {@code observer} of the sessions that start or stop track_event from now on, on every backend. */
    public static void addSessionObserver(SessionObserver observer) {
        OBSERVERS.add(Objects.requireNonNull(observer, "observer"));
    }

    /** Tells {@code observer} of no more sessions. */
    public static void removeSessionObserver(SessionObserver observer) {
        OBSERVERS.remove(observer);
    }

    private static void tell(Consumer<SessionObserver> call) {
        for (SessionObserver observer : OBSERVERS) {
            try {
                call.accept(observer);
            } catch (RuntimeException e) {
                // Tracing never throws into the application, nor one observer's failure into another.
            }
        }
    }

    /** The process track every thread's track is a child of. */
    public static Track processTrack() {
        return PROCESS;
    }

    private enum Event { INSTANT, COUNTER, DOUBLE_COUNTER }

    /** An instant or a counter value into each running session whose bit {@code mask} sets. */
    private static void write(Event event, Category category, Track onTrack, String name, InternedName interned,
                              long value, double real, int mask) {
        if (mask == 0) {
            return;
        }
        Scopes perThread = SCOPES.get();
        Track track = onTrack != null ? onTrack : perThread.threadTrack;
        InstanceSlot<Integer>[] started = SOURCE.started();
        if (perThread.virtual) {
            for (InstanceSlot<Integer> slot : started) {
                if ((mask & (1 << slot.index())) != 0) {
                    TraceContext<Integer> context = slot.borrowOrDiscard();
                    if (context != null) {
                        try {
                            writeOn(writerOf(context, null), event, category, track, name, interned, value, real);
                        } finally {
                            slot.giveBack(context);
                        }
                    }
                }
            }
            return;
        }
        TrackEventWriter[] own = perThread.writersFor(started);
        for (int i = 0; i < started.length; i++) {
            if ((mask & (1 << started[i].index())) != 0) {
                writeOn(own[i], event, category, track, name, interned, value, real);
            }
        }
    }

    private static void writeOn(TrackEventWriter writer, Event event, Category category, Track track, String name,
                                InternedName interned, long value, double real) {
        switch (event) {
            case INSTANT -> {
                if (interned != null) {
                    writer.instant(category, track, interned);
                } else {
                    writer.instant(category, track, name);
                }
            }
            case COUNTER -> writer.counter(track, value);
            case DOUBLE_COUNTER -> writer.counter(track, real);
        }
    }

    /**
     * The TrackEvent writer of a sequence, made on first use: a platform thread's writes on
     * {@code threadTrack} by default, so its events need not name it (as Perfetto's SDK
     * sets the thread track in the sequence's defaults); a lent context's ({@code
     * threadTrack} null) serves many virtual threads, so every event names its track.
     */
    private static TrackEventWriter writerOf(TraceContext<Integer> context, Track threadTrack) {
        Object attached = context.attachment();
        if (attached != null) {
            return (TrackEventWriter) attached;
        }
        // Straight into the context's TraceWriter: the TrackEventWriter already turns a
        // writer closed under it (its instance stopped) into discarded events.
        TraceWriterSink sink = new TraceWriterSink(context.writer(), context.slot().instance()::incrementalStateClears);
        TrackEventWriter writer = new TrackEventWriter(sink, threadTrack == null
                ? TrackEventWriter.Config.DEFAULT : TrackEventWriter.Config.forThread(threadTrack));
        context.attach(writer);
        return writer;
    }

    private static Track counterTrack(String name) {
        return COUNTER_TRACKS.computeIfAbsent(name, n -> Track.counter(PROCESS, n));
    }

    private static Track trackOfThisThread() {
        Thread thread = Thread.currentThread();
        if (thread.isVirtual()) {
            String name = thread.getName().isEmpty() ? "virtual thread " + thread.threadId() : thread.getName();
            return Track.virtualThread(PROCESS, thread.threadId(), name);
        }
        return Track.thread(PROCESS, Os.tid(), thread.getName());
    }

    private static String processName() {
        String command = System.getProperty("sun.java.command", "");
        String main = command.isBlank() ? "java" : command.split(" ", 2)[0];
        return main.substring(main.lastIndexOf('/') + 1);
    }

    /** The mask of {@code category}, deciding it first if the SDK has not. */
    private static int decided(Category category, int mask) {
        if (mask != Category.SESSIONS_UNDECIDED) {
            return mask;
        }
        synchronized (LOCK) {
            return decide(category);
        }
    }

    /** Under LOCK: the category's mask from every running session's selection, now set. */
    private static int decide(Category category) {
        if (DECIDED.putIfAbsent(category, Boolean.TRUE) == null && !category.isGroup()) {
            BY_NAME.putIfAbsent(category.name(), category);
        }
        int mask = 0;
        for (int i = 0; i < SELECTIONS.length; i++) {
            if (SELECTIONS[i] != null && SELECTIONS[i].enables(category, BY_NAME)) {
                mask |= 1 << i;
            }
        }
        category.setSessionMask(mask);
        return mask;
    }

    /** Under LOCK: every decided category again, after a session came or went. */
    private static void decideAll() {
        for (Category category : DECIDED.keySet()) {
            decide(category);
        }
    }

    /** The sessions' instances of track_event: each brings its selection, by its place. */
    private static final class Sessions implements DataSourceCallbacks<Integer> {
        /** The selection set up for each place, recorded once the instance starts. */
        private final CategorySelection[] setUp = new CategorySelection[DataSource.MAX_INSTANCES];
        /** Guarded by LOCK: each place's instance, from its setup to its stop, as observers are told of it. */
        private final InstanceSetup[] instances = new InstanceSetup[DataSource.MAX_INSTANCES];

        @Override
        public Integer onSetup(InstanceSetup setup) {
            CategorySelection selection = CategorySelection.fromDataSourceConfig(setup.config());
            MALFORMED_PATTERNS.add(selection.malformedPatterns());
            synchronized (LOCK) {
                setUp[setup.index()] = selection;
                instances[setup.index()] = setup;
            }
            return setup.index();
        }

        @Override
        public void onStart(Integer index) {
            InstanceSetup instance;
            synchronized (LOCK) {
                SELECTIONS[index] = setUp[index];
                setUp[index] = null;
                decideAll();
                // The instance is published before this call: awaitSessions sees it counted.
                LOCK.notifyAll();
                instance = instances[index];
            }
            tell(observer -> observer.onStart(instance));
        }

        @Override
        public void onStop(Integer index, Runnable done) {
            InstanceSetup instance;
            synchronized (LOCK) {
                instance = instances[index];
            }
            SessionStop stop = new SessionStop(instance, () -> {
                synchronized (LOCK) {
                    SELECTIONS[index] = null;
                    decideAll();
                    instances[index] = null;
                }
                done.run();
            });
            // As Perfetto's OnStop: told while the session still records, so that an observer's last events go in.
            tell(observer -> observer.onStop(stop));
            stop.release();
        }
    }

    /**
     * A slice begun by {@link #slice}, ended by {@link #close()}. Scopes are reused per
     * thread and nesting depth, so a slice costs no allocation; do not keep one after
     * closing it.
     */
    public static final class Scope implements AutoCloseable {
        /** The scope of a slice no session records: closing it does nothing. */
        static final Scope NONE = new Scope(null, -1);

        private final Scopes owner;
        private final int depth;
        /** A virtual thread's instances the slice began in: its end borrows a writer of each still running. */
        @SuppressWarnings({"unchecked", "rawtypes"})
        private final InstanceSlot<Integer>[] slots = new InstanceSlot[DataSource.MAX_INSTANCES];
        /** What each of {@link #begunOn}'s begins returned, for its end. */
        private final long[] tokens = new long[DataSource.MAX_INSTANCES];
        /** A platform thread's writers the slice began on, so that its end needs no lookup. */
        private final TrackEventWriter[] begunOn = new TrackEventWriter[DataSource.MAX_INSTANCES];
        private int count;
        private Track track;
        /** Begun by {@link TrackEvent#begin}, ended by {@link TrackEvent#end()}. */
        private boolean unscoped;

        private Scope(Scopes owner, int depth) {
            this.owner = owner;
            this.depth = depth;
        }

        /** Ends the slice in every session it began in. */
        @Override
        public void close() {
            // A comparison with the constant, which the JIT folds where slice() returned
            // NONE: a load of the owner would cost an unrecorded slice a cycle or two.
            if (this == NONE) {
                return;
            }
            owner.end(this);
            try {
                if (owner.virtual) {
                    endOnSharedTrack();
                } else {
                    endBegun();
                }
            } finally {
                count = 0;
                track = null;
            }
        }

        /**
         * A platform thread's slice: ends what {@link Scopes#begin} began, on the writers it
         * began on; the writer of an instance that stopped meanwhile is closed, and drops the end.
         */
        private void endBegun() {
            for (int i = 0; i < count; i++) {
                TrackEventWriter writer = begunOn[i];
                begunOn[i] = null;
                try {
                    writer.endSlice(track, tokens[i]);
                } catch (IllegalStateException stoppedMeanwhile) {
                    // The instance stopped and another took its place: its slice ended with it.
                }
            }
        }

        /** A virtual thread's slice: its end, through whichever lent writer, into the sessions still running. */
        private void endOnSharedTrack() {
            InstanceSlot<Integer>[] running = SOURCE.started();
            for (int i = 0; i < count; i++) {
                InstanceSlot<Integer> slot = slots[i];
                if (!contains(running, slot)) {
                    continue;
                }
                TraceContext<Integer> context = slot.borrowOrDiscard();
                if (context != null) {
                    try {
                        writerOf(context, null).endSliceOnSharedTrack(track);
                    } finally {
                        slot.giveBack(context);
                    }
                }
            }
        }

        private static boolean contains(InstanceSlot<Integer>[] running, InstanceSlot<Integer> slot) {
            for (InstanceSlot<Integer> each : running) {
                if (each == slot) {
                    return true;
                }
            }
            return false;
        }
    }

    /** A thread's track, its writers and its open scopes, reused by depth: what the facade keeps per thread. */
    private static final class Scopes {
        /** The calling thread's own track: a platform thread's, or a virtual thread's track of its own. */
        final Track threadTrack = trackOfThisThread();
        /** Whether the thread is virtual: it then borrows writers, and keeps none of its own. */
        final boolean virtual = Thread.currentThread().isVirtual();
        /** A platform thread's writers; null for a virtual thread. */
        final DataSource.ThreadWriters<Integer> writers = virtual ? null : SOURCE.threadWriters();
        /** The started instances {@link #ownWriters} were looked up for, by identity (the array is replaced whole). */
        private InstanceSlot<Integer>[] writersMadeFor;
        private TrackEventWriter[] ownWriters;
        private Scope[] byDepth = new Scope[8];
        private int open;

        /** Begins the slice in every running session whose bit {@code mask} sets (deciding it first if need be). */
        Scope begin(Category category, Track onTrack, String name, InternedName interned, InternedName argument,
                    long value, long flowId, long terminatingFlowId, int mask) {
            mask = decided(category, mask);
            if (mask == 0) {
                return Scope.NONE;
            }
            Scope scope = push(false);
            Track track = onTrack != null ? onTrack : threadTrack;
            scope.track = track;
            InstanceSlot<Integer>[] started = SOURCE.started();
            if (virtual) {
                beginBorrowing(scope, started, category, name, interned, argument, value, flowId, terminatingFlowId,
                        mask);
                return scope;
            }
            TrackEventWriter[] own = writersFor(started);
            for (int i = 0; i < started.length; i++) {
                if ((mask & (1 << started[i].index())) == 0) {
                    continue;
                }
                TrackEventWriter writer = own[i];
                long token = beginOn(writer, category, track, name, interned, argument, value, flowId,
                        terminatingFlowId);
                if (token != 0) {
                    scope.begunOn[scope.count] = writer;
                    scope.tokens[scope.count++] = token;
                }
            }
            return scope;
        }

        /** A virtual thread's begin: through a writer lent for each instance, on the thread's own track. */
        private static void beginBorrowing(Scope scope, InstanceSlot<Integer>[] started, Category category,
                                           String name, InternedName interned, InternedName argument, long value,
                                           long flowId, long terminatingFlowId, int mask) {
            for (InstanceSlot<Integer> slot : started) {
                if ((mask & (1 << slot.index())) == 0) {
                    continue;
                }
                TraceContext<Integer> context = slot.borrowOrDiscard();
                if (context == null) {
                    continue;
                }
                try {
                    long token = beginOn(writerOf(context, null), category, scope.track, name, interned, argument,
                            value, flowId, terminatingFlowId);
                    if (token != 0) {
                        scope.slots[scope.count++] = slot;
                    }
                } finally {
                    slot.giveBack(context);
                }
            }
        }

        /**
         * This platform thread's writer for each of {@code started}, by position: looked up
         * again only when the started instances change, so that an event costs no lookup.
         */
        TrackEventWriter[] writersFor(InstanceSlot<Integer>[] started) {
            if (started != writersMadeFor) {
                TrackEventWriter[] made = new TrackEventWriter[started.length];
                for (int i = 0; i < started.length; i++) {
                    made[i] = writerOf(writers.context(started[i]), threadTrack);
                }
                ownWriters = made;
                writersMadeFor = started;
            }
            return ownWriters;
        }

        /** A begin that an end pairs with: it takes a depth even when no session records it. */
        void beginUnscoped(Category category, String name, InternedName interned, int mask) {
            int decided = mask == 0 ? 0 : decided(category, mask);
            if (decided == 0) {
                push(true).track = threadTrack;
                return;
            }
            begin(category, null, name, interned, null, 0, 0, 0, decided).unscoped = true;
        }

        /** The next depth's scope, reused, begun on no session yet. */
        private Scope push(boolean unscoped) {
            if (open == byDepth.length) {
                byDepth = java.util.Arrays.copyOf(byDepth, open * 2);
            }
            Scope scope = byDepth[open];
            if (scope == null) {
                scope = new Scope(this, open);
                byDepth[open] = scope;
            }
            open++;
            scope.count = 0;
            scope.unscoped = unscoped;
            return scope;
        }

        /** The innermost open scope, or null. */
        Scope innermost() {
            return open == 0 ? null : byDepth[open - 1];
        }

        private static long beginOn(TrackEventWriter writer, Category category, Track track, String name,
                                    InternedName interned, InternedName argument, long value, long flowId,
                                    long terminatingFlowId) {
            if (interned == null) {
                return writer.beginSlice(category, track, name);
            }
            if (argument != null) {
                return writer.beginSlice(category, track, interned, argument, value);
            }
            if (flowId != 0 || terminatingFlowId != 0) {
                return writer.beginSlice(category, track, interned, flowId, terminatingFlowId);
            }
            return writer.beginSlice(category, track, interned);
        }

        void end(Scope scope) {
            if (open == 0 || byDepth[open - 1] != scope) {
                throw new IllegalStateException("a TrackEvent scope closed out of order (depth " + scope.depth
                        + ", " + open + " open): slices must nest");
            }
            open--;
        }
    }
}
