package dev.ffmtrace.jvm;

import dev.ffmtrace.tracing.trackevent.TraceFileWriter;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongConsumer;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

/**
 * Converts a JFR recording (from {@code -XX:StartFlightRecording} or {@code jcmd JFR.dump})
 * into a Perfetto trace, through the {@link JfrMapping} a live session uses. The trace's
 * timeline is the recording's wall clock.
 *
 * <p>The recorded JVM's pid and name come from its {@code jdk.JVMInformation} event,
 * looked for among the first {@value #LOOKAHEAD_EVENTS} events (JFR writes it with each
 * chunk's first events). Input that stops being readable (a truncated or corrupt chunk)
 * ends the conversion there: what was read is converted and the reason is reported. The
 * same recording always converts to the same bytes.
 */
public final class JfrConverter {
    /** Events read before the first is mapped, looking for the JVM's pid. */
    static final int LOOKAHEAD_EVENTS = 100_000;
    /** The trace's packet sequence: not 1, which Perfetto's service uses for its own packets. */
    static final int SEQUENCE_ID = 2;
    /** Events between two progress reports. */
    public static final long PROGRESS_EVERY = 1L << 16;

    /**
     * What a conversion did.
     *
     * @param events events read from the recording
     * @param pid the recorded JVM's pid, or -1 if the recording does not name it (0 is then
     *     written as the process's pid)
     * @param mapping what the mapping made of the events
     * @param unreadable why reading stopped before the end, or null if the whole recording was read
     */
    public record Result(long events, long pid, JfrMappingStats mapping, String unreadable) {
    }

    /** The file is not a JFR recording this JDK can open: nothing of it was converted. */
    public static final class UnreadableRecordingException extends IOException {
        UnreadableRecordingException(Path recording, IOException cause) {
            super(recording + " is not a readable JFR recording: " + describe(cause), cause);
        }
    }

    private JfrConverter() {
    }

    /**
     * Converts {@code recording} into {@code trace} (which stays open, flushed).
     *
     * @param progress given the number of events read, every {@value #PROGRESS_EVERY} events
     * @throws UnreadableRecordingException if {@code recording} cannot be opened as a JFR recording
     * @throws IOException if writing {@code trace} fails
     */
    public static Result convert(Path recording, OutputStream trace, LongConsumer progress) throws IOException {
        RecordingFile opened;
        try {
            opened = new RecordingFile(recording);
        } catch (IOException e) {
            throw new UnreadableRecordingException(recording, e);
        }
        try (RecordingFile file = opened) {
            List<RecordedEvent> ahead = new ArrayList<>();
            String unreadable = null;
            long pid = -1;
            String processName = "java";
            try {
                while (pid < 0 && ahead.size() < LOOKAHEAD_EVENTS && file.hasMoreEvents()) {
                    RecordedEvent event = file.readEvent();
                    ahead.add(event);
                    if (event.getEventType().getName().equals("jdk.JVMInformation")) {
                        pid = event.getLong("pid");
                        processName = processName(event.getString("javaArguments"));
                    }
                }
            } catch (IOException | RuntimeException e) {
                unreadable = describe(e);
            }
            long first = ahead.stream().mapToLong(e -> JfrMapping.nanos(e.getStartTime())).min().orElse(0);
            TraceFileWriter sink = new TraceFileWriter(trace, SEQUENCE_ID);
            JfrMapping mapping = new JfrMapping(sink, Math.max(0, pid), processName, 0, 0);
            mapping.declareRealtimeTimeline(first);
            long events = 0;
            for (RecordedEvent event : ahead) {
                mapping.accept(event);
                events = reportProgress(events, progress);
            }
            ahead.clear();
            while (unreadable == null) {
                RecordedEvent event;
                try {
                    if (!file.hasMoreEvents()) {
                        break;
                    }
                    event = file.readEvent();
                } catch (IOException | RuntimeException e) {
                    unreadable = describe(e);
                    break;
                }
                mapping.accept(event);
                events = reportProgress(events, progress);
            }
            mapping.finish();
            return new Result(events, pid, mapping.stats(), unreadable);
        }
    }

    private static long reportProgress(long events, LongConsumer progress) {
        long read = events + 1;
        if (read % PROGRESS_EVERY == 0) {
            progress.accept(read);
        }
        return read;
    }

    /** The process name the SDK gives a JVM: its main class or jar, without directories. */
    static String processName(String javaArguments) {
        if (javaArguments == null || javaArguments.isBlank()) {
            return "java";
        }
        String main = javaArguments.strip().split(" ", 2)[0];
        return main.substring(main.lastIndexOf('/') + 1);
    }

    private static String describe(Exception e) {
        return e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
    }
}
