package dev.ffmtrace.jvm;

import dev.ffmtrace.tracing.sdk.DataSource;
import dev.ffmtrace.tracing.trackevent.Track;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingStream;

/**
 * One session's instance of the {@code jvm} data source: a JFR recording stream whose
 * thread maps its events on a sequence of the instance of its own.
 */
final class JvmInstance {
    /** How long the end waits for the stream's thread, at each of its two steps. */
    private static final long END_MILLIS = 5_000;
    /** How long the start waits for the recording to run. */
    private static final long START_MILLIS = 10_000;

    private final DataSource<JvmInstance> dataSource;
    private final int index;
    private final JvmConfig config;
    private final long pid;
    /** The SDK's process track, which the JVM's tracks join. */
    private final Track process;
    private final long realtimeToMonotonicCoarse;
    private final LongAdder failures;
    private final RunningInstances running;
    private RecordingStream stream;
    /**
     * The daemon thread the stream runs on and maps its events from. JFR's own
     * {@code startAsync} thread is not a daemon: it would keep the JVM from exiting while
     * a session runs. {@link #endStream} waits for it.
     */
    private Thread dispatcher;
    /** Set under this object's lock, once: the stream was stopped and what waits for the end written. */
    private volatile boolean ended;
    /** The mapping the stream's thread made on its first event, and finishes when the stream ends. */
    private volatile JfrMapping mapping;

    JvmInstance(DataSource<JvmInstance> dataSource, int index, JvmConfig config, long pid, Track process,
                long realtimeToMonotonicCoarse, LongAdder failures, RunningInstances running) {
        this.dataSource = dataSource;
        this.index = index;
        this.config = config;
        this.pid = pid;
        this.process = process;
        this.realtimeToMonotonicCoarse = realtimeToMonotonicCoarse;
        this.failures = failures;
        this.running = running;
    }

    void start() {
        try {
            RecordingStream created = new RecordingStream();
            created.setSettings(config.settings());
            created.onEvent(this::accept);
            Thread thread = Thread.ofPlatform().daemon().name("ffmtrace-jvm-stream").unstarted(() -> run(created));
            stream = created;
            dispatcher = thread;
            // Events before the recording runs are not recorded: the instance is started
            // once it runs (the first start of JFR in a JVM takes a while).
            CountDownLatch recording = RecordingStarts.expect(thread);
            thread.start();
            boolean runs = recording.await(START_MILLIS, TimeUnit.MILLISECONDS);
            RecordingStarts.forget(thread);
            if (!runs) {
                failures.increment();
            }
            running.started(this);
        } catch (RuntimeException | LinkageError e) {
            failures.increment();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            failures.increment();
        }
    }

    /**
     * The stream's thread: dispatches events until the stream stops or closes, then
     * writes what waits for the end (the last collections, the heap profile). It writes
     * inside a trace call of its own, as every event is written: a writer outside one is
     * idle to the SDK, which may take its chunk back or close it meanwhile.
     */
    private void run(RecordingStream running) {
        try {
            running.start();
        } catch (RuntimeException e) {
            // Closed before it started (a session stopped at once), or JFR gone at exit.
            if (!ended) {
                failures.increment();
            }
        }
        JfrMapping last = mapping;
        if (last != null) {
            dataSource.traceInstance(index, context -> last.finish());
        }
    }

    /** On the stream's thread: one event into this instance. */
    private void accept(RecordedEvent event) {
        dataSource.traceInstance(index, context -> context.sequenceState(sink -> {
            JfrMapping made = new JfrMapping(sink, pid, process.name(), process.uuid(),
                    realtimeToMonotonicCoarse);
            mapping = made;
            return made;
        }).accept(event));
    }

    /** The session stopped: the stream's end is written, then the instance is done. */
    void stop(Runnable done) {
        try {
            endStream();
        } finally {
            done.run();
            running.stopped(this);
        }
    }

    /**
     * Stops the stream and waits for its thread, which has then mapped its last event and
     * written what waits for the end. Once only: at the session's stop, or at the JVM's exit
     * if that came first (when JFR's own exit hook may have stopped the recording already).
     * A thread that does not end in time is counted in {@link JvmDataSource#failures()}.
     */
    synchronized void endStream() {
        if (ended) {
            return;
        }
        ended = true;
        try {
            if (stream != null) {
                try {
                    stream.stop();
                } catch (IllegalStateException notRunning) {
                    // Never started, or stopped by JFR at exit: its thread ends by itself.
                }
                dispatcher.join(END_MILLIS);
                stream.close();
                dispatcher.join(END_MILLIS);
                if (dispatcher.isAlive()) {
                    failures.increment();
                }
            }
        } catch (RuntimeException e) {
            failures.increment();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            failures.increment();
        }
    }
}
