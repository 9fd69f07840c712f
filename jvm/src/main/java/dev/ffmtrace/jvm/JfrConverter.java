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
        UnreadableRecordingException(Path recording, Exception cause) {
            super(recording + " is not a readable JFR recording: " + describe(cause), cause);
        }
    }

    private JfrConverter() {
    }

    /**
     * Converts {@code recording} into {@code trace} (which stays open, flushed): read by
     * {@link JfrFileReader}, or by the JDK's {@code RecordingFile} where that reader leaves
     * the file to it (another format version, a chunk too large to copy).
     *
     * @param progress given the number of events read, every {@value #PROGRESS_EVERY} events
     * @throws UnreadableRecordingException if {@code recording} cannot be opened as a JFR recording
     * @throws IOException if writing {@code trace} fails
     */
    public static Result convert(Path recording, OutputStream trace, LongConsumer progress) throws IOException {
        return JfrFileReader.canRead(recording) ? convertReadingChunks(recording, trace, progress)
                : convertWithRecordingFile(recording, trace, progress);
    }

    /** The conversion through {@link JfrFileReader}. */
    static Result convertReadingChunks(Path recording, OutputStream trace, LongConsumer progress) throws IOException {
        Ahead ahead = lookAhead(recording);
        try (JfrFileReader reader = new JfrFileReader(recording)) {
            boolean more;
            try {
                more = reader.next();
            } catch (IOException | RuntimeException e) {
                throw new UnreadableRecordingException(recording, e);
            }
            JfrMapping mapping = ahead.mapping(trace);
            String unreadable = null;
            while (more) {
                mapping.accept(reader.event());
                reportProgress(reader.events() - 1, progress);
                try {
                    more = reader.next();
                } catch (IOException | RuntimeException e) {
                    unreadable = describe(e);
                    more = false;
                }
            }
            mapping.finish();
            return new Result(reader.events(), ahead.pid, mapping.stats(), unreadable);
        }
    }

    /**
     * The recorded JVM's pid and name, from its {@code jdk.JVMInformation} event among the
     * first events, and the earliest of those events' start: what the trace's first
     * packets say before any event is mapped.
     */
    private record Ahead(long pid, String processName, long first) {
        JfrMapping mapping(OutputStream trace) {
            JfrMapping mapping = new JfrMapping(new TraceFileWriter(trace, SEQUENCE_ID), Math.max(0, pid), processName,
                    0, 0);
            mapping.declareRealtimeTimeline(first);
            return mapping;
        }
    }

    private static Ahead lookAhead(Path recording) {
        long pid = -1;
        String processName = "java";
        long first = Long.MAX_VALUE;
        try (JfrFileReader reader = new JfrFileReader(recording)) {
            while (pid < 0 && reader.events() < LOOKAHEAD_EVENTS && reader.next()) {
                JfrEventView event = reader.event();
                first = Math.min(first, event.startNanos());
                JfrEventType type = event.type();
                if (type.name().equals("jdk.JVMInformation")) {
                    pid = event.longValue(type.field("pid"));
                    processName = processName(event.stringValue(type.field("javaArguments")));
                }
            }
        } catch (IOException | RuntimeException e) {
            // The conversion meets the same and says so; what was read ahead stands.
        }
        return new Ahead(pid, processName, first == Long.MAX_VALUE ? 0 : first);
    }

    /** The conversion through the JDK's {@code RecordingFile}. */
    static Result convertWithRecordingFile(Path recording, OutputStream trace, LongConsumer progress)
            throws IOException {
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
            JfrMapping mapping = new Ahead(pid, processName, first).mapping(trace);
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
