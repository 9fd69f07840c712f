package dev.ffmtrace.jvm;

import java.util.ArrayList;
import java.util.List;

/**
 * The fields of one event type that are written as annotations, found once per type: the
 * ones the type has (another JDK's may lack some), by position, with what each holds.
 */
final class EventFields {
    private final int[] fields;
    private final String[] names;
    private final JfrEventType.Kind[] kinds;

    private EventFields(int[] fields, String[] names, JfrEventType.Kind[] kinds) {
        this.fields = fields;
        this.names = names;
        this.kinds = kinds;
    }

    /** Those of {@code wanted} that {@code type} has, in that order. */
    static EventFields of(JfrEventType type, String... wanted) {
        List<Integer> present = new ArrayList<>();
        for (String name : wanted) {
            int field = type.field(name);
            if (field >= 0) {
                present.add(field);
            }
        }
        int[] fields = present.stream().mapToInt(Integer::intValue).toArray();
        String[] names = new String[fields.length];
        JfrEventType.Kind[] kinds = new JfrEventType.Kind[fields.length];
        for (int i = 0; i < fields.length; i++) {
            names[i] = type.fieldName(fields[i]);
            kinds[i] = type.kind(fields[i]);
        }
        return new EventFields(fields, names, kinds);
    }

    /**
     * Adds the fields' values of {@code event} to {@code args}: numbers, flags, strings,
     * classes, threads and methods; absent values (null, or a number JFR marks absent) are
     * left out, and so are fields of other kinds.
     */
    Args addTo(JfrEventView event, Args args) {
        for (int i = 0; i < fields.length; i++) {
            int field = fields[i];
            String name = names[i];
            switch (kinds[i]) {
                case BOOLEAN -> args.add(name, event.booleanValue(field));
                case INTEGRAL -> {
                    long value = event.longValue(field);
                    // JFR's "no value" for a timeout or a deadline, which its own tools print as N/A.
                    if (value != Long.MIN_VALUE) {
                        args.add(name, value);
                    }
                }
                case FLOATING -> args.add(name, event.doubleValue(field));
                case STRING -> args.add(name, event.stringValue(field));
                case CLASS -> args.add(name, event.className(field));
                case THREAD -> {
                    JfrThread thread = event.thread(field);
                    if (thread != null) {
                        args.add(name, thread.displayName());
                    }
                }
                case METHOD -> args.add(name, event.methodName(field));
                default -> { }
            }
        }
        return args;
    }
}
