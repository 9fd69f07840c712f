package dev.ffmtrace.jvm;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import jdk.jfr.EventType;
import jdk.jfr.ValueDescriptor;
import jdk.jfr.consumer.RecordedClass;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordedThread;

/**
 * The fields of one event type that are written as annotations, found once per type: the
 * ones the type has (another JDK's may lack some), named by the type's own descriptor
 * strings, so that the by-name lookup of each value matches at once by identity.
 */
final class EventFields {
    private final String[] names;

    private EventFields(String[] names) {
        this.names = names;
    }

    /** Those of {@code wanted} that {@code type} has, in that order. */
    static EventFields of(EventType type, String... wanted) {
        List<String> present = new ArrayList<>();
        for (String name : wanted) {
            String own = name(type, name);
            if (own != null) {
                present.add(own);
            }
        }
        return new EventFields(present.toArray(String[]::new));
    }

    /** The descriptor's own string for field {@code name} of {@code type}, or null if it has none. */
    static String name(EventType type, String name) {
        ValueDescriptor field = type.getField(name);
        return field == null ? null : field.getName();
    }

    /**
     * Adds the fields' values of {@code event} to {@code args}: numbers, flags, strings,
     * classes, threads, methods, durations; absent values (null, or a number JFR marks
     * absent) are left out.
     */
    Args addTo(RecordedEvent event, Args args) {
        for (String name : names) {
            switch (event.getValue(name)) {
                case null -> { }
                case Boolean value -> args.add(name, value);
                case Float value -> args.add(name, value.doubleValue());
                case Double value -> args.add(name, value);
                case Number value -> {
                    // JFR's "no value" for a timeout or a deadline, which its own tools print as N/A.
                    if (value.longValue() != Long.MIN_VALUE) {
                        args.add(name, value.longValue());
                    }
                }
                case String value -> args.add(name, value);
                case RecordedClass value -> args.add(name, value.getName());
                case RecordedThread value -> args.add(name, value.getJavaName() != null ? value.getJavaName()
                        : value.getOSName());
                case RecordedMethod value -> args.add(name, methodName(value));
                case Duration value -> args.add(name, value.toNanos());
                case Instant value -> args.add(name, JfrMapping.nanos(value));
                default -> { }
            }
        }
        return args;
    }

    /** {@code pkg.Class.method}, or "[unknown]" for what is not a method. */
    static String methodName(Object value) {
        if (!(value instanceof RecordedMethod method)) {
            return "[unknown]";
        }
        return (method.getType() == null ? "[unknown]" : method.getType().getName()) + "." + method.getName();
    }
}
