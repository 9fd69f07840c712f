package dev.ffmtrace.tracing.sdk;

/**
 * What a data source does when a session sets up, starts, flushes or stops one of its
 * instances. Calls for one backend come one at a time on that backend's connection
 * thread; a call that throws is counted and otherwise ignored. A call must not wait for
 * a thread that is inside {@link DataSource#trace}: to wait for the application's threads
 * at a stop, wait on a thread of your own and call {@code done} from it.
 *
 * @param <S> the state the data source keeps per instance (its parsed config, say)
 */
public interface DataSourceCallbacks<S> {
    /** A session set up an instance: returns the state the instance keeps, read from its config (null if none). */
    S onSetup(InstanceSetup setup);

    /** The instance starts; {@link DataSource#trace} already writes into it. */
    default void onStart(S state) {
    }

    /**
     * The instance stops. Call {@code done} once (from any thread, now or later) when what
     * it writes is written: {@link DataSource#trace} then skips it and its writers are
     * closed, which commits what they hold.
     */
    default void onStop(S state, Runnable done) {
        done.run();
    }

    /** The session flushes: when this returns, what the instance's writers hold is committed. */
    default void onFlush(S state) {
    }

    /**
     * The service lost data and asks for incremental state (interned names, descriptors)
     * to be written again; {@link TraceContext#incrementalStateEpoch()} has moved on.
     */
    default void onClearIncrementalState(S state) {
    }
}
