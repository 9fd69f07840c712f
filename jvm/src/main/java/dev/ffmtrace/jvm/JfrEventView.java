package dev.ffmtrace.jvm;

import java.util.List;

/**
 * A JFR event as {@link JfrMapping} reads it, whichever reader decoded it: the JDK's
 * {@code RecordedEvent} (live sessions, {@link RecordedEventView}) or {@link JfrFileReader}
 * (recordings on disk). A field is addressed by the position its {@link JfrEventType}
 * gave once per type, so reading a value costs no lookup by name. Valid until its reader
 * moves to the next event.
 */
interface JfrEventView {
    JfrEventType type();

    /** Nanoseconds since the epoch: JFR's clock is CLOCK_REALTIME. */
    long startNanos();

    long endNanos();

    /** An integral field, widened as JFR's {@code getLong} does (unsigned ones without sign). */
    long longValue(int field);

    /** A float or double field. */
    double doubleValue(int field);

    boolean booleanValue(int field);

    /** A string field (or a constant JFR reduces to one), or null if absent. */
    String stringValue(int field);

    /** A class field's name ({@code pkg.Class}), or null if absent. */
    String className(int field);

    /** A method field as {@code pkg.Class.method}, or null if absent. */
    String methodName(int field);

    /** A thread field, or null if absent; the same object for the same thread while its constants last. */
    JfrThread thread(int field);

    /** A stack trace field's frames root first, or null if absent; the same list for the same trace while its constants last. */
    List<JavaFrame> stack(int field);
}
