package dev.ffmtrace.tracing.producer;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Tells one endpoint's data source handlers what happens to their instances (the
 * SDK's OnSetup, OnStart, OnStop, OnFlush, OnClearIncrementalState), one call at a
 * time and in order: a teardown's stop never comes before a start it follows, and
 * nothing comes after the stop. Called without the endpoint's monitor, since a handler
 * may wait for a thread that makes writers; a handler that throws is counted in
 * {@code handlerFailures} and the command goes on.
 */
final class DataSourceCallbacks {
    /** Held while a handler is told something; private, so that no handler can hold it. */
    private final Object order = new Object();
    private final AtomicLong handlerFailures;

    DataSourceCallbacks(AtomicLong handlerFailures) {
        this.handlerFailures = handlerFailures;
    }

    /** Tells {@code instance}'s handler {@code call} unless it was told the instance stopped. */
    void tell(EndpointInstance instance, Runnable call) {
        synchronized (order) {
            if (!instance.stopTold()) {
                callHandler(call);
            }
        }
    }

    /** Tells the handler its instance started, unless a teardown stopped it first. */
    void tellStart(EndpointInstance instance) {
        synchronized (order) {
            if (instance.state() == EndpointInstance.State.STARTED && !instance.stopTold()) {
                instance.startTold();
                callHandler(() -> instance.handler().onStart(instance));
            }
        }
    }

    /**
     * Tells the handler its instance stops, once (with {@code ifStarted}, only if it was
     * told it started); false if not told now. A handler that throws is done.
     */
    boolean tellStop(EndpointInstance instance, Runnable finish, boolean ifStarted) {
        synchronized (order) {
            if (!instance.tellsStop(ifStarted)) {
                return false;
            }
            try {
                instance.handler().onStop(instance, finish);
            } catch (RuntimeException e) {
                handlerFailures.incrementAndGet();
                finish.run();
            }
            return true;
        }
    }

    /** Runs a handler's call; a handler that throws is counted, and the command goes on. */
    private void callHandler(Runnable call) {
        try {
            call.run();
        } catch (RuntimeException e) {
            handlerFailures.incrementAndGet();
        }
    }
}
