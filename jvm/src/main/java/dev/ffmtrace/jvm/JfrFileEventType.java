package dev.ffmtrace.jvm;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * An event type of one chunk, laid out for decoding: its fields flattened into leaves in
 * the order the record holds them (a struct's fields in its place, {@code "a.b"}; a type of
 * one field as that field), each with how to read it.
 */
final class JfrFileEventType implements JfrEventType {
    // How a leaf is read: codes rather than an enum, so that the decoder's switch is one jump.
    static final byte BOOLEAN = 0;
    static final byte BYTE = 1;
    static final byte CHAR = 2;
    static final byte SHORT = 3;
    static final byte INT = 4;
    static final byte LONG = 5;
    static final byte FLOAT = 6;
    static final byte DOUBLE = 7;
    static final byte STRING = 8;
    /** A constant's key. */
    static final byte CONSTANT = 9;
    /** An array, read whole. */
    static final byte OTHER = 10;

    private static final int MAX_DEPTH = 8;

    private final String name;
    private final String label;
    /** A leaf as flattening finds it: its path, its field, how it is read and what it holds. */
    private record Leaf(String path, JfrMetadata.Field field, byte read, Kind kind) {
    }

    private final Map<String, Integer> positions = new HashMap<>();
    private final String[] names;
    final byte[] read;
    private final Kind[] kindOf;
    final boolean[] unsigned;
    /** For each leaf, its field: the constant's type, or how to read what is not a leaf of its own. */
    final JfrMetadata.Field[] field;
    /** The leaf of the event's duration, or -1 for an instant event. */
    final int duration;

    JfrFileEventType(JfrMetadata.Type type, JfrMetadata metadata) throws MalformedRecordingException {
        this.name = type.name();
        this.label = type.label() != null ? type.label() : type.name();
        List<JfrMetadata.Field> declared = type.fields();
        if (declared.isEmpty() || !declared.getFirst().name().equals("startTime")) {
            throw new MalformedRecordingException("event type " + name + " does not start with its start time");
        }
        List<Leaf> leaves = new ArrayList<>();
        for (JfrMetadata.Field field : declared) {
            flatten(field.name(), field, metadata, 0, leaves);
        }
        int count = leaves.size();
        this.names = new String[count];
        this.read = new byte[count];
        this.kindOf = new Kind[count];
        this.unsigned = new boolean[count];
        this.field = new JfrMetadata.Field[count];
        for (int i = 0; i < count; i++) {
            Leaf leaf = leaves.get(i);
            positions.putIfAbsent(leaf.path(), i);
            names[i] = leaf.path();
            read[i] = leaf.read();
            kindOf[i] = leaf.kind();
            field[i] = leaf.field();
            unsigned[i] = leaf.field().unsigned();
        }
        if (read[0] != LONG) {
            throw new MalformedRecordingException("event type " + name + " has a start time that is not a long");
        }
        int durationLeaf = declared.size() > 1 && declared.get(1).name().equals("duration") ? 1 : -1;
        if (durationLeaf > 0 && read[durationLeaf] != LONG) {
            throw new MalformedRecordingException("event type " + name + " has a duration that is not a long");
        }
        this.duration = durationLeaf;
    }

    private void flatten(String path, JfrMetadata.Field declared, JfrMetadata metadata, int depth,
                         List<Leaf> leaves) throws MalformedRecordingException {
        JfrMetadata.Type type = metadata.type(declared.typeId());
        if (type == null) {
            throw new MalformedRecordingException("field " + path + " of " + name + " has type " + declared.typeId()
                    + ", which the metadata lacks");
        }
        if (declared.array()) {
            leaves.add(new Leaf(path, declared, OTHER, Kind.OTHER));
        } else if (declared.constantPool()) {
            leaves.add(new Leaf(path, declared, CONSTANT, JfrEventType.kindOf(valueTypeName(type, metadata))));
        } else if (type.fields().isEmpty()) {
            byte read = switch (type.name()) {
                case "boolean" -> BOOLEAN;
                case "byte" -> BYTE;
                case "char" -> CHAR;
                case "short" -> SHORT;
                case "int" -> INT;
                case "long" -> LONG;
                case "float" -> FLOAT;
                case "double" -> DOUBLE;
                case "java.lang.String" -> STRING;
                default -> throw new MalformedRecordingException("field " + path + " of " + name
                        + " has type " + type.name() + ", which has no fields");
            };
            leaves.add(new Leaf(path, declared, read, JfrEventType.kindOf(type.name())));
        } else if (depth >= MAX_DEPTH) {
            throw new MalformedRecordingException("fields of " + name + " nest deeper than " + MAX_DEPTH);
        } else if (type.simple()) {
            JfrMetadata.Field only = type.fields().getFirst();
            flatten(path, new JfrMetadata.Field(declared.name(), only.typeId(), only.array(), only.constantPool(),
                    only.unsigned()), metadata, depth + 1, leaves);
        } else {
            for (JfrMetadata.Field nested : type.fields()) {
                flatten(path + "." + nested.name(), nested, metadata, depth + 1, leaves);
            }
        }
    }

    /** The type name JFR reports for a value of {@code type}: a type of one field reports that field's. */
    private static String valueTypeName(JfrMetadata.Type type, JfrMetadata metadata) {
        if (type.simple() && !type.fields().isEmpty()) {
            JfrMetadata.Type only = metadata.type(type.fields().getFirst().typeId());
            return only == null ? "" : only.name();
        }
        return type.name();
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String label() {
        return label;
    }

    @Override
    public int field(String fieldName) {
        Integer position = positions.get(fieldName);
        return position == null ? -1 : position;
    }

    @Override
    public String fieldName(int field) {
        return names[field];
    }

    @Override
    public Kind kind(int field) {
        return kindOf[field];
    }
}
