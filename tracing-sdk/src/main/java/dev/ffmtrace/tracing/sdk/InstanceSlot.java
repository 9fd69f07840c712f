package dev.ffmtrace.tracing.sdk;

import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.tracing.producer.internal.DataSourceInstance;
import dev.ffmtrace.tracing.sdk.internal.LendingPool;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import java.util.concurrent.atomic.LongAdder;

/**
 * One started instance of a data source, in one of the data source's
 * {@value DataSource#MAX_INSTANCES} places: the backend's instance, the state the data
 * source keeps for it, and the writers virtual threads borrow for it.
 */
final class InstanceSlot<S> {
    /**
     * How many writers virtual threads share per instance: a virtual thread borrows one for
     * a {@link DataSource#trace} call, and waits (unmounted) when all are lent, so that any
     * number of virtual threads cost at most this many writer ids and chunks.
     */
    static final int VIRTUAL_THREAD_WRITERS = Math.max(2, 2 * Runtime.getRuntime().availableProcessors());

    private final int index;
    private final Backend backend;
    private final DataSourceInstance instance;
    private final S state;
    private final BufferExhaustedPolicy policy;
    private final LongAdder discarded;
    private final LendingPool<TraceContext<S>> lendable = new LendingPool<>(VIRTUAL_THREAD_WRITERS, this::newContext);

    InstanceSlot(int index, Backend backend, DataSourceInstance instance, S state, BufferExhaustedPolicy policy,
                 LongAdder discarded) {
        this.index = index;
        this.backend = backend;
        this.instance = instance;
        this.state = state;
        this.policy = policy;
        this.discarded = discarded;
    }

    int index() {
        return index;
    }

    Backend backend() {
        return backend;
    }

    DataSourceInstance instance() {
        return instance;
    }

    S state() {
        return state;
    }

    void countDiscarded() {
        discarded.increment();
    }

    /** A context over a new writer of the instance: a closed one if the instance no longer runs. */
    TraceContext<S> newContext() {
        return new TraceContext<>(this, instance.newTraceWriter(policy));
    }

    /**
     * A context for a virtual thread's call: an idle one, a new one while fewer are made,
     * else the next given back; null if the thread was interrupted while waiting for one
     * (its interrupt kept, the call's packets counted as discarded): tracing never throws
     * into the application.
     */
    TraceContext<S> borrowOrDiscard() {
        try {
            return lendable.borrow();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            countDiscarded();
            return null;
        }
    }

    void giveBack(TraceContext<S> context) {
        lendable.giveBack(context);
    }
}
