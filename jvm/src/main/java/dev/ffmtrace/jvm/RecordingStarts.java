package dev.ffmtrace.jvm;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import jdk.jfr.FlightRecorder;
import jdk.jfr.FlightRecorderListener;
import jdk.jfr.Recording;
import jdk.jfr.RecordingState;

/**
 * Tells a thread's starter when the recording that thread starts is running. A
 * {@code RecordingStream} started with {@code start()} starts its recording on the thread
 * that calls it (which then dispatches events); JFR calls its listeners on the thread
 * that changes a recording's state, so the thread identifies the recording.
 */
final class RecordingStarts implements FlightRecorderListener {
    private static final RecordingStarts LISTENER = new RecordingStarts();

    static {
        FlightRecorder.addListener(LISTENER);
    }

    private final Map<Thread, CountDownLatch> waiting = new ConcurrentHashMap<>();

    private RecordingStarts() {
    }

    /** A latch opened when {@code thread} (not started yet) has started a recording. */
    static CountDownLatch expect(Thread thread) {
        CountDownLatch running = new CountDownLatch(1);
        LISTENER.waiting.put(thread, running);
        return running;
    }

    /** Stops waiting for {@code thread}, whether its recording started or not. */
    static void forget(Thread thread) {
        LISTENER.waiting.remove(thread);
    }

    @Override
    public void recordingStateChanged(Recording recording) {
        if (recording.getState() == RecordingState.RUNNING) {
            CountDownLatch running = waiting.remove(Thread.currentThread());
            if (running != null) {
                running.countDown();
            }
        }
    }
}
