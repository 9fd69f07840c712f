package dev.ffmtrace.jvm;

import dev.ffmtrace.tracing.util.LongMap;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The constants of one chunk of a JFR recording (threads, classes, methods, stack traces,
 * symbols, strings and JFR's named values), read from its checkpoints, and turned into
 * what the mapping writes on first use, once per constant.
 *
 * <p>A checkpoint is a record: its size and type (1), start, duration, the distance back to
 * the previous checkpoint (0 for the first), a flags byte and its pools, each a type id, a
 * count and that many key-value pairs. The chunk header names the last; each names the one
 * before. A value is read as its type says: a primitive, a string, a constant's key, a
 * struct of values or an array of them; a type of one field ("simple") is that field's
 * value. A string constant in a pool is kept as a reference and looked up when used, as
 * the strings may come in a checkpoint read later.
 */
final class JfrConstants {
    static final long CHECKPOINT_RECORD = 1;
    /** Deeper than JFR's own types nest (a stack trace's frames' fields). */
    private static final int MAX_VALUE_DEPTH = 16;

    /** A reference to the chunk's string constants, kept in a pool's value until used. */
    private record StringReference(long key) {
    }

    private final JfrMetadata metadata;
    /** By type id, by key: a constant as read. */
    private final LongMap<LongMap<Object>> pools = new LongMap<>();
    private final LongMap<JfrThread> threads = new LongMap<>();
    private final LongMap<String> classNames = new LongMap<>();
    private final LongMap<String> methodNames = new LongMap<>();
    private final LongMap<List<JavaFrame>> stacks = new LongMap<>();
    private final JfrMetadata.Type strings;
    private final Shape thread;
    private final Shape klass;
    private final Shape method;
    private final Shape stackTrace;
    private final Shape frame;

    /** Where a constant type's fields are: -1 for those it lacks, and the type ids of its constant fields. */
    private record Shape(JfrMetadata.Type type, int[] fields) {
        static Shape of(JfrMetadata metadata, String typeName, String... fieldNames) {
            JfrMetadata.Type type = metadata.type(typeName);
            int[] fields = new int[fieldNames.length];
            for (int i = 0; i < fields.length; i++) {
                fields[i] = type == null ? -1 : type.fieldIndex(fieldNames[i]);
            }
            return new Shape(type, fields);
        }

        /** Field {@code which} of {@code value}, a struct of this shape, or null. */
        Object get(Object[] value, int which) {
            int at = fields[which];
            return at < 0 || at >= value.length ? null : value[at];
        }

        /** The type id of field {@code which}, or -1. */
        long typeOf(int which) {
            return fields[which] < 0 ? -1 : type.fields().get(fields[which]).typeId();
        }
    }

    private static final int THREAD_OS_NAME = 0;
    private static final int THREAD_OS_ID = 1;
    private static final int THREAD_JAVA_NAME = 2;
    private static final int THREAD_JAVA_ID = 3;
    private static final int THREAD_VIRTUAL = 4;
    private static final int CLASS_NAME = 0;
    private static final int METHOD_TYPE = 0;
    private static final int METHOD_NAME = 1;
    private static final int STACK_TRUNCATED = 0;
    private static final int STACK_FRAMES = 1;
    private static final int FRAME_METHOD = 0;
    private static final int FRAME_LINE = 1;
    private static final int FRAME_BYTECODE_INDEX = 2;
    private static final int FRAME_TYPE = 3;

    private JfrConstants(JfrMetadata metadata) {
        this.metadata = metadata;
        this.strings = metadata.type("java.lang.String");
        this.thread = Shape.of(metadata, "java.lang.Thread", "osName", "osThreadId", "javaName", "javaThreadId",
                "virtual");
        this.klass = Shape.of(metadata, "java.lang.Class", "name");
        this.method = Shape.of(metadata, "jdk.types.Method", "type", "name");
        this.stackTrace = Shape.of(metadata, "jdk.types.StackTrace", "truncated", "frames");
        this.frame = Shape.of(metadata, "jdk.types.StackFrame", "method", "lineNumber", "bytecodeIndex", "type");
    }

    /** The constants of the chunk {@code input} holds, whose last checkpoint is at {@code offset}. */
    static JfrConstants read(JfrInput input, JfrMetadata metadata, long offset) throws MalformedRecordingException {
        JfrConstants constants = new JfrConstants(metadata);
        long chunkSize = input.capacity();
        long at = offset;
        while (true) {
            input.range(at, chunkSize);
            int size = input.readInt();
            input.range(at, at + size);
            input.readLong(); // the size again
            if (input.readLong() != CHECKPOINT_RECORD) {
                throw new MalformedRecordingException("no checkpoint at chunk byte " + at);
            }
            input.readLong(); // start
            input.readLong(); // duration
            long delta = input.readLong();
            input.readByte(); // flags
            constants.readPools(input);
            if (delta == 0) {
                return constants;
            }
            // Each checkpoint names one written before it: the walk ends, whatever the bytes say.
            if (delta > 0) {
                throw new MalformedRecordingException("checkpoint at chunk byte " + at + " names a later one");
            }
            at += delta;
            input.range(0, chunkSize);
        }
    }

    private void readPools(JfrInput input) throws MalformedRecordingException {
        int poolCount = input.readCount(2);
        for (int i = 0; i < poolCount; i++) {
            long typeId = input.readLong();
            JfrMetadata.Type type = metadata.type(typeId);
            if (type == null) {
                throw new MalformedRecordingException("constants of type " + typeId + ", which the metadata lacks");
            }
            LongMap<Object> pool = pools.get(typeId);
            if (pool == null) {
                pool = new LongMap<>();
                pools.put(typeId, pool);
            }
            int count = input.readCount(2);
            for (int j = 0; j < count; j++) {
                long key = input.readLong();
                Object value = readType(input, type, 0);
                if (value != null) {
                    pool.put(key, value);
                }
            }
        }
    }

    /** A value of {@code field}: an array of its type's values if it is one, a constant's key if it is one. */
    Object readField(JfrInput input, JfrMetadata.Field field, int depth) throws MalformedRecordingException {
        if (!field.array()) {
            return readElement(input, field, depth);
        }
        Object[] elements = new Object[input.readCount(1)];
        for (int i = 0; i < elements.length; i++) {
            elements[i] = readElement(input, field, depth);
        }
        return elements;
    }

    private Object readElement(JfrInput input, JfrMetadata.Field field, int depth) throws MalformedRecordingException {
        if (field.constantPool()) {
            return input.readLong();
        }
        JfrMetadata.Type type = metadata.type(field.typeId());
        if (type == null) {
            throw new MalformedRecordingException("field " + field.name() + " of type " + field.typeId()
                    + ", which the metadata lacks");
        }
        return readType(input, type, depth + 1);
    }

    private Object readType(JfrInput input, JfrMetadata.Type type, int depth) throws MalformedRecordingException {
        if (depth > MAX_VALUE_DEPTH) {
            throw new MalformedRecordingException("values nested deeper than " + MAX_VALUE_DEPTH);
        }
        switch (type.name()) {
            case "boolean" -> {
                return input.readBoolean();
            }
            case "byte" -> {
                return input.readByte();
            }
            case "char" -> {
                return (char) input.readLong();
            }
            case "short" -> {
                return (short) input.readLong();
            }
            case "int" -> {
                return input.readInt();
            }
            case "long" -> {
                return input.readLong();
            }
            case "float" -> {
                return input.readFloat();
            }
            case "double" -> {
                return input.readDouble();
            }
            case "java.lang.String" -> {
                return input.readString(StringReference::new);
            }
            default -> {
                List<JfrMetadata.Field> fields = type.fields();
                if (fields.isEmpty()) {
                    throw new MalformedRecordingException("type " + type.name() + " has no fields to read");
                }
                if (type.simple()) {
                    return readField(input, fields.getFirst(), depth);
                }
                Object[] values = new Object[fields.size()];
                for (int i = 0; i < values.length; i++) {
                    values[i] = readField(input, fields.get(i), depth);
                }
                return values;
            }
        }
    }

    /** The string a value read from this chunk stands for, or null if it is none. */
    String text(Object value) {
        if (value instanceof String text) {
            return text;
        }
        if (value instanceof StringReference reference) {
            return pooledString(reference.key());
        }
        return null;
    }

    /** The constant {@code key} of type {@code typeId} as read, or null. */
    private Object constant(long typeId, long key) {
        LongMap<Object> pool = pools.get(typeId);
        return pool == null ? null : pool.get(key);
    }

    /** The chunk's string constant {@code key} (a string's reference, encoding 2), or null. */
    String pooledString(long key) {
        return strings == null ? null : string(strings.id(), key);
    }

    /** The string constant {@code key} of type {@code typeId} (a string, or a type JFR reduces to one), or null. */
    String string(long typeId, long key) {
        return text(constant(typeId, key));
    }

    JfrThread thread(long key) {
        JfrThread known = threads.get(key);
        if (known == null && constant(thread.type == null ? -1 : thread.type.id(), key) instanceof Object[] value) {
            boolean virtual = thread.get(value, THREAD_VIRTUAL) instanceof Boolean flag && flag;
            long javaId = thread.get(value, THREAD_JAVA_ID) instanceof Long id ? id : -1;
            long osId = thread.get(value, THREAD_OS_ID) instanceof Long id ? id : -1;
            known = new JfrThread(text(thread.get(value, THREAD_JAVA_NAME)), text(thread.get(value, THREAD_OS_NAME)),
                    javaId == 0 ? -1 : javaId, virtual ? -1 : osId, virtual);
            threads.put(key, known);
        }
        return known;
    }

    /** The class {@code key}'s name, {@code pkg.Class}, or null. */
    String className(long key) {
        String known = classNames.get(key);
        if (known == null && constant(klass.type == null ? -1 : klass.type.id(), key) instanceof Object[] value
                && klass.get(value, CLASS_NAME) instanceof Long symbol) {
            String name = string(klass.typeOf(CLASS_NAME), symbol);
            if (name != null) {
                known = name.replace('/', '.');
                classNames.put(key, known);
            }
        }
        return known;
    }

    /** The method {@code key} as {@code pkg.Class.method}, or null. */
    String methodName(long key) {
        String known = methodNames.get(key);
        if (known == null && constant(method.type == null ? -1 : method.type.id(), key) instanceof Object[] value) {
            String type = method.get(value, METHOD_TYPE) instanceof Long classKey ? className(classKey) : null;
            String name = method.get(value, METHOD_NAME) instanceof Long symbol
                    ? string(method.typeOf(METHOD_NAME), symbol) : null;
            known = (type == null ? "[unknown]" : type) + "." + name;
            methodNames.put(key, known);
        }
        return known;
    }

    /** The stack trace {@code key}'s frames root first, or null. */
    List<JavaFrame> stack(long key) {
        List<JavaFrame> known = stacks.get(key);
        if (known == null
                && constant(stackTrace.type == null ? -1 : stackTrace.type.id(), key) instanceof Object[] value) {
            Object[] frames = stackTrace.get(value, STACK_FRAMES) instanceof Object[] array ? array : new Object[0];
            List<JavaFrame> rootFirst = new ArrayList<>(frames.length + 1);
            if (stackTrace.get(value, STACK_TRUNCATED) instanceof Boolean truncated && truncated) {
                rootFirst.add(JavaFrame.TRUNCATED);
            }
            for (int i = frames.length - 1; i >= 0; i--) {
                rootFirst.add(frame(frames[i] instanceof Object[] one ? one : new Object[0]));
            }
            known = Collections.unmodifiableList(rootFirst);
            stacks.put(key, known);
        }
        return known;
    }

    private JavaFrame frame(Object[] value) {
        String function = frame.get(value, FRAME_METHOD) instanceof Long methodKey ? methodName(methodKey) : null;
        String type = frame.get(value, FRAME_TYPE) instanceof Long typeKey
                ? string(frame.typeOf(FRAME_TYPE), typeKey) : null;
        int bytecodeIndex = frame.get(value, FRAME_BYTECODE_INDEX) instanceof Integer index ? index : -1;
        int line = frame.get(value, FRAME_LINE) instanceof Integer number ? number : -1;
        return new JavaFrame(function == null ? "[unknown]" : function, type == null ? "" : type,
                Math.max(0, bytecodeIndex), Math.max(0, line));
    }
}
