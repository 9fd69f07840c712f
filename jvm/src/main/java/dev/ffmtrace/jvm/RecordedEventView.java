package dev.ffmtrace.jvm;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import jdk.jfr.EventType;
import jdk.jfr.ValueDescriptor;
import jdk.jfr.consumer.RecordedClass;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;

/**
 * The JDK's {@code RecordedEvent}s seen through {@link JfrEventView}: what a live
 * session's stream (and a recording the file reader cannot read) gives the mapping. A
 * value is the JDK's lookup by the field's name; threads, classes and stack traces are
 * converted once per constant object, which JFR's parser shares within a chunk.
 */
final class RecordedEventView implements JfrEventView {
    /** Event types with a view at once; each chunk of a recording may bring new type objects. */
    private static final int MAX_KNOWN_TYPES = 1024;
    private static final int MAX_CACHED_CONSTANTS = 4096;

    private final Map<EventType, Type> types = new IdentityHashMap<>();
    private final ConstantCache<RecordedThread, JfrThread> threads =
            new ConstantCache<>(MAX_CACHED_CONSTANTS, RecordedEventView::thread);
    private final ConstantCache<RecordedClass, String> classNames =
            new ConstantCache<>(MAX_CACHED_CONSTANTS, RecordedClass::getName);
    private final ConstantCache<RecordedStackTrace, List<JavaFrame>> stacks =
            new ConstantCache<>(MAX_CACHED_CONSTANTS, JavaFrame::rootFirst);
    private RecordedEvent event;
    private Type type;

    /** This view, showing {@code recorded} until the next call. */
    JfrEventView of(RecordedEvent recorded) {
        EventType eventType = recorded.getEventType();
        if (type == null || type.type != eventType) {
            type = types.get(eventType);
            if (type == null) {
                if (types.size() == MAX_KNOWN_TYPES) {
                    types.clear();
                }
                type = new Type(eventType);
                types.put(eventType, type);
            }
        }
        event = recorded;
        return this;
    }

    @Override
    public JfrEventType type() {
        return type;
    }

    @Override
    public long startNanos() {
        return JfrMapping.nanos(event.getStartTime());
    }

    @Override
    public long endNanos() {
        return JfrMapping.nanos(event.getEndTime());
    }

    @Override
    public long longValue(int field) {
        return event.getLong(type.name(field));
    }

    @Override
    public double doubleValue(int field) {
        return event.getDouble(type.name(field));
    }

    @Override
    public boolean booleanValue(int field) {
        return event.getBoolean(type.name(field));
    }

    @Override
    public String stringValue(int field) {
        return event.getValue(type.name(field)) instanceof String value ? value : null;
    }

    @Override
    public String className(int field) {
        return event.getValue(type.name(field)) instanceof RecordedClass value ? classNames.get(value) : null;
    }

    @Override
    public String methodName(int field) {
        return event.getValue(type.name(field)) instanceof RecordedMethod method ? JavaFrame.methodName(method) : null;
    }

    @Override
    public JfrThread thread(int field) {
        return event.getValue(type.name(field)) instanceof RecordedThread value ? threads.get(value) : null;
    }

    @Override
    public List<JavaFrame> stack(int field) {
        return event.getValue(type.name(field)) instanceof RecordedStackTrace value ? stacks.get(value) : null;
    }

    private static JfrThread thread(RecordedThread thread) {
        return new JfrThread(thread.getJavaName(), thread.getOSName(), thread.getJavaThreadId(),
                thread.getOSThreadId(), thread.isVirtual());
    }

    /** An {@code EventType}'s fields by position: its own, then nested ones as they are asked for. */
    private static final class Type implements JfrEventType {
        final EventType type;
        private final List<String> names = new ArrayList<>();
        private final List<Kind> kinds = new ArrayList<>();

        Type(EventType type) {
            this.type = type;
            for (ValueDescriptor field : type.getFields()) {
                names.add(field.getName());
                kinds.add(kind(field));
            }
        }

        String name(int field) {
            return names.get(field);
        }

        @Override
        public String name() {
            return type.getName();
        }

        @Override
        public String label() {
            return type.getLabel() != null ? type.getLabel() : type.getName();
        }

        @Override
        public int field(String name) {
            int at = names.indexOf(name);
            if (at >= 0) {
                return at;
            }
            ValueDescriptor nested = type.getField(name);
            if (nested == null || !name.contains(".")) {
                return -1;
            }
            names.add(name);
            kinds.add(kind(nested));
            return names.size() - 1;
        }

        @Override
        public String fieldName(int field) {
            return names.get(field);
        }

        @Override
        public Kind kind(int field) {
            return kinds.get(field);
        }

        private static Kind kind(ValueDescriptor field) {
            if (field.isArray()) {
                return Kind.OTHER;
            }
            return JfrEventType.kindOf(field.getTypeName());
        }
    }
}
