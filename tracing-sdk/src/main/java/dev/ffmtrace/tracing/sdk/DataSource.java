package dev.ffmtrace.tracing.sdk;

import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.producer.internal.DataSourceHandler;
import dev.ffmtrace.tracing.producer.internal.DataSourceInstance;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.lang.ref.Cleaner;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;

/**
 * A data source, written once and run unchanged on every backend {@link Tracing} was
 * initialized with: each session that names it starts an instance of it, with its own
 * config and buffer, up to {@value #MAX_INSTANCES} at once across backends (Perfetto's
 * limit). {@link #trace} writes into every started instance from any thread:
 *
 * <pre>{@code
 * static final DataSource<Void> GPU = DataSource.register(DataSourceDescriptor.named("gpu"), setup -> null);
 * ...
 * GPU.trace(ctx -> {
 *     TracePacket packet = ctx.newTracePacket();
 *     packet.setTimestamp(System.nanoTime());
 *     ...
 *     ctx.finishTracePacket();
 * });
 * }</pre>
 *
 * <p>A platform thread keeps a writer per instance, made on its first call and closed
 * when the instance stops or the thread is collected. A virtual thread borrows one for the
 * call from a few the instance shares ({@link InstanceSlot#VIRTUAL_THREAD_WRITERS}), so
 * that any number of virtual threads cost a few writers and pin no carrier.
 *
 * @param <S> the state the data source keeps per instance
 */
public final class DataSource<S> {
    /** How many instances run at once, as Perfetto's {@code kMaxDataSourceInstances}. */
    public static final int MAX_INSTANCES = 8;

    private static final Cleaner THREAD_ENDS = Cleaner.create(Thread.ofPlatform().daemon().name("ffmtrace-writer-cleaner").factory());
    @SuppressWarnings("rawtypes")
    private static final InstanceSlot[] NONE = {};

    private final DataSourceDescriptor descriptor;
    private final DataSourceCallbacks<S> callbacks;
    private final BufferExhaustedPolicy policy;
    /** The started instances: replaced whole under this object's lock, read without it. */
    private volatile InstanceSlot<S>[] started = none();
    /** Guarded by this: which of the {@value #MAX_INSTANCES} places are taken, from an instance's setup to its stop. */
    private final boolean[] taken = new boolean[MAX_INSTANCES];
    private final LongAdder writersOfEndedThreads = new LongAdder();
    private final ThreadLocal<ThreadWriters<S>> threadWriters =
            ThreadLocal.withInitial(() -> new ThreadWriters<>(writersOfEndedThreads));
    private final LongAdder instancesRefused = new LongAdder();
    private final LongAdder callbackFailures = new LongAdder();
    private final LongAdder packetsDiscarded = new LongAdder();

    private DataSource(DataSourceDescriptor descriptor, DataSourceCallbacks<S> callbacks, BufferExhaustedPolicy policy) {
        this.descriptor = Objects.requireNonNull(descriptor, "descriptor");
        this.callbacks = Objects.requireNonNull(callbacks, "callbacks");
        this.policy = Objects.requireNonNull(policy, "policy");
    }

    /**
     * Registers a data source with every backend of {@link Tracing}, now and when it is
     * initialized; its writers drop packets when the buffer is full, as Perfetto's SDK's
     * do by default. Keep it in a static final field.
     */
    public static <S> DataSource<S> register(DataSourceDescriptor descriptor, DataSourceCallbacks<S> callbacks) {
        return register(descriptor, callbacks, BufferExhaustedPolicy.DROP);
    }

    /** As {@link #register(DataSourceDescriptor, DataSourceCallbacks)}, with writers that do as {@code policy} says when the buffer is full. */
    public static <S> DataSource<S> register(DataSourceDescriptor descriptor, DataSourceCallbacks<S> callbacks,
                                             BufferExhaustedPolicy policy) {
        DataSource<S> dataSource = new DataSource<>(descriptor, callbacks, policy);
        Tracing.register(dataSource);
        return dataSource;
    }

    /**
     * Withdraws the data source from every backend and from later initializations, for a
     * component with a lifetime of its own (Perfetto's SDK keeps its data sources for the
     * process's life). Instances running now go on until their sessions stop them.
     */
    public void unregister() {
        Tracing.unregister(this);
    }

    /** The descriptor the data source registers with. */
    public DataSourceDescriptor descriptor() {
        return descriptor;
    }

    /** Whether any session runs an instance now: one volatile load. */
    public boolean isEnabled() {
        return started.length > 0;
    }

    /**
     * Runs {@code body} once for each started instance, with a context that writes into it;
     * does nothing (one volatile load) if none is started. Never throws for the state of
     * tracing; an exception {@code body} throws goes to the caller.
     */
    public void trace(Consumer<TraceContext<S>> body) {
        InstanceSlot<S>[] now = started;
        if (now.length == 0) {
            return;
        }
        for (InstanceSlot<S> slot : now) {
            traceInto(slot, body);
        }
    }

    /**
     * Runs {@code body} for the started instance at place {@code index} alone (its
     * {@link InstanceSetup#index()}), as Perfetto's {@code TraceWithInstances}: for a data
     * source whose instances each write from a thread of their own. Does nothing if no
     * instance runs there.
     */
    public void traceInstance(int index, Consumer<TraceContext<S>> body) {
        for (InstanceSlot<S> slot : started) {
            if (slot.index() == index) {
                traceInto(slot, body);
                return;
            }
        }
    }

    private void traceInto(InstanceSlot<S> slot, Consumer<TraceContext<S>> body) {
        if (Thread.currentThread().isVirtual()) {
            traceBorrowing(slot, body);
            return;
        }
        TraceContext<S> context = threadWriters.get().context(slot);
        try {
            body.accept(context);
        } finally {
            // Between calls the writer is idle: the arbiter may take its chunk back,
            // and a close from another thread never waits for this one.
            context.finishTracePacket();
        }
    }

    private void traceBorrowing(InstanceSlot<S> slot, Consumer<TraceContext<S>> body) {
        TraceContext<S> context = slot.borrowOrDiscard();
        if (context == null) {
            return;
        }
        try {
            body.accept(context);
        } finally {
            context.finishTracePacket();
            slot.giveBack(context);
        }
    }

    /** Sessions that named the data source while {@value #MAX_INSTANCES} instances ran: they got nothing from it. */
    public long instancesRefused() {
        return instancesRefused.sum();
    }

    /** Callbacks that threw: each counted, then treated as done. */
    public long callbackFailures() {
        return callbackFailures.sum();
    }

    /**
     * Writers of platform threads that ended while their instance ran, closed (their chunks
     * committed, their ids given back) once the thread was collected.
     */
    public long writersOfEndedThreads() {
        return writersOfEndedThreads.sum();
    }

    /** Packets written while their instance stopped under the writing thread: written nowhere. */
    public long packetsDiscarded() {
        return packetsDiscarded.sum();
    }

    /** The handler that runs this data source's instances on one backend's connection. */
    DataSourceHandler handlerFor(Backend backend) {
        return new Handler(backend);
    }

    /** The lowest free place, now taken; -1 if all are. */
    private synchronized int reserve() {
        for (int i = 0; i < MAX_INSTANCES; i++) {
            if (!taken[i]) {
                taken[i] = true;
                return i;
            }
        }
        return -1;
    }

    private synchronized void release(int index) {
        taken[index] = false;
    }

    private synchronized void publish(InstanceSlot<S> slot) {
        InstanceSlot<S>[] more = Arrays.copyOf(started, started.length + 1);
        more[started.length] = slot;
        started = more;
    }

    private synchronized void withdraw(InstanceSlot<S> slot) {
        InstanceSlot<S>[] fewer = Arrays.copyOf(started, started.length - 1);
        int at = 0;
        for (InstanceSlot<S> other : started) {
            if (other != slot) {
                fewer[at++] = other;
            }
        }
        started = fewer;
    }

    /** The started instances now: what {@link #trace} loops over. */
    InstanceSlot<S>[] started() {
        return started;
    }

    /**
     * The calling platform thread's writers, for a caller that keeps them per thread (the
     * TrackEvent facade does, and so looks them up once per thread, not per event).
     */
    ThreadWriters<S> threadWriters() {
        return threadWriters.get();
    }

    @SuppressWarnings("unchecked")
    private static <S> InstanceSlot<S>[] none() {
        return (InstanceSlot<S>[]) NONE;
    }

    /**
     * A platform thread's writers, one per place, remade when a new instance takes the
     * place; closed when the thread is collected (the cleaner holds the writers, not the thread).
     */
    static final class ThreadWriters<S> {
        @SuppressWarnings({"unchecked", "rawtypes"})
        private final TraceContext<S>[] contexts = new TraceContext[MAX_INSTANCES];
        private final AtomicReferenceArray<TraceWriter<TracePacket>> writers = new AtomicReferenceArray<>(MAX_INSTANCES);

        ThreadWriters(LongAdder closedAtThreadEnd) {
            AtomicReferenceArray<TraceWriter<TracePacket>> toClose = writers;
            THREAD_ENDS.register(Thread.currentThread(), () -> {
                for (int i = 0; i < toClose.length(); i++) {
                    TraceWriter<TracePacket> writer = toClose.get(i);
                    if (writer != null && writer.isOpen()) {
                        writer.close();
                        closedAtThreadEnd.increment();
                    }
                }
            });
        }

        /** The thread's context for {@code slot}, made if need be. */
        TraceContext<S> context(InstanceSlot<S> slot) {
            TraceContext<S> context = contexts[slot.index()];
            if (context == null || context.slot() != slot) {
                context = slot.newContext();
                contexts[slot.index()] = context;
                writers.set(slot.index(), context.writer());
            }
            return context;
        }
    }

    /** An instance set up and not started yet: its place (-1 if none was free) and its state. */
    private record Pending<S>(int index, S state) {
    }

    /** The instances of one backend: calls come one at a time on its connection's thread. */
    private final class Handler implements DataSourceHandler {
        private final Backend backend;
        private final Map<DataSourceInstance, Pending<S>> setUp = new HashMap<>();
        private final Map<DataSourceInstance, InstanceSlot<S>> running = new HashMap<>();

        Handler(Backend backend) {
            this.backend = backend;
        }

        @Override
        public void onSetup(DataSourceInstance instance) {
            int index = reserve();
            if (index < 0) {
                instancesRefused.increment();
                setUp.put(instance, new Pending<>(-1, null));
                return;
            }
            S state = null;
            try {
                state = callbacks.onSetup(new InstanceSetup(backend, index, instance.id(), instance.targetBuffer(),
                        instance.config()));
            } catch (RuntimeException e) {
                callbackFailures.increment();
            }
            setUp.put(instance, new Pending<>(index, state));
        }

        @Override
        public void onStart(DataSourceInstance instance) {
            if (!setUp.containsKey(instance)) {
                onSetup(instance);
            }
            Pending<S> pending = setUp.remove(instance);
            if (pending.index() < 0) {
                return;
            }
            InstanceSlot<S> slot = new InstanceSlot<>(pending.index(), backend, instance, pending.state(), policy,
                    packetsDiscarded);
            publish(slot);
            running.put(instance, slot);
            try {
                callbacks.onStart(pending.state());
            } catch (RuntimeException e) {
                callbackFailures.increment();
            }
        }

        @Override
        public void onStop(DataSourceInstance instance, Runnable done) {
            Pending<S> neverStarted = setUp.remove(instance);
            if (neverStarted != null && neverStarted.index() >= 0) {
                release(neverStarted.index());
            }
            InstanceSlot<S> slot = running.remove(instance);
            if (slot == null) {
                done.run();
                return;
            }
            AtomicBoolean once = new AtomicBoolean();
            Runnable stopped = () -> {
                if (once.compareAndSet(false, true)) {
                    withdraw(slot);
                    release(slot.index());
                    done.run();
                }
            };
            try {
                callbacks.onStop(slot.state(), stopped);
            } catch (RuntimeException e) {
                callbackFailures.increment();
                stopped.run();
            }
        }

        @Override
        public void onFlush(DataSourceInstance instance) {
            runOn(instance, callbacks::onFlush);
        }

        @Override
        public void onClearIncrementalState(DataSourceInstance instance) {
            runOn(instance, callbacks::onClearIncrementalState);
        }

        /** Runs a callback with a running instance's state, counting it if it throws. */
        private void runOn(DataSourceInstance instance, Consumer<S> callback) {
            InstanceSlot<S> slot = running.get(instance);
            if (slot != null) {
                try {
                    callback.accept(slot.state());
                } catch (RuntimeException e) {
                    callbackFailures.increment();
                }
            }
        }
    }
}
