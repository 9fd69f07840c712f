package dev.ffmtrace.jvm;

import dev.ffmtrace.tracing.util.LongMap;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The types of one chunk of a JFR recording, from its metadata event: a string table, then
 * a tree of elements ({@code metadata} holding a {@code class} per type, each with its
 * {@code field}s and {@code annotation}s), each element a name, attributes and children,
 * all as indexes into the string table.
 */
final class JfrMetadata {
    static final long METADATA_RECORD = 0;
    static final String EVENT_SUPER_TYPE = "jdk.jfr.Event";
    /** Deeper than JFR's own tree (root, metadata, class, field, annotation) goes. */
    private static final int MAX_DEPTH = 16;
    private static final String LABEL = "jdk.jfr.Label";
    private static final String UNSIGNED = "jdk.jfr.Unsigned";

    /** A field of a type, as the metadata declares it. */
    record Field(String name, long typeId, boolean array, boolean constantPool, boolean unsigned) {
    }

    /** A type: an event type (super type {@value #EVENT_SUPER_TYPE}), a constant's or a struct's, or a primitive. */
    record Type(long id, String name, String superType, boolean simple, String label, List<Field> fields) {
        boolean isEvent() {
            return EVENT_SUPER_TYPE.equals(superType);
        }

        int fieldIndex(String fieldName) {
            for (int i = 0; i < fields.size(); i++) {
                if (fields.get(i).name().equals(fieldName)) {
                    return i;
                }
            }
            return -1;
        }
    }

    private record Element(String name, Map<String, String> attributes, List<Element> children) {
        List<Element> children(String childName) {
            return children.stream().filter(child -> child.name.equals(childName)).toList();
        }

        String required(String attribute) throws MalformedRecordingException {
            String value = attributes.get(attribute);
            if (value == null) {
                throw new MalformedRecordingException("metadata element " + name + " has no " + attribute);
            }
            return value;
        }

        long id(String attribute) throws MalformedRecordingException {
            String value = attributes.get(attribute);
            try {
                return Long.parseLong(value);
            } catch (NumberFormatException e) {
                throw new MalformedRecordingException("metadata element " + name + " has " + attribute + "=" + value);
            }
        }
    }

    private final LongMap<Type> types = new LongMap<>();
    private final Map<String, Type> byName = new HashMap<>();

    private JfrMetadata() {
    }

    /** The metadata event at {@code offset} of the chunk {@code input} holds. */
    static JfrMetadata read(JfrInput input, long offset) throws MalformedRecordingException {
        input.range(offset, input.capacity());
        int size = input.readInt();
        input.range(offset, offset + size);
        input.readLong(); // the size again: a record's size counts its own bytes
        if (input.readLong() != METADATA_RECORD) {
            throw new MalformedRecordingException("no metadata event at chunk byte " + offset);
        }
        input.readLong(); // start
        input.readLong(); // duration
        input.readLong(); // metadata id
        String[] strings = new String[input.readCount(1)];
        for (int i = 0; i < strings.length; i++) {
            strings[i] = (String) input.readString(null);
        }
        Element root = element(input, strings, 0);
        JfrMetadata metadata = new JfrMetadata();
        for (Element holder : root.children("metadata")) {
            metadata.define(holder.children("class"));
        }
        return metadata;
    }

    /** The type {@code id}, or null if the metadata has none. */
    Type type(long id) {
        return types.get(id);
    }

    /** The type named {@code name}, or null if the metadata has none. */
    Type type(String name) {
        return byName.get(name);
    }

    private static Element element(JfrInput input, String[] strings, int depth) throws MalformedRecordingException {
        if (depth > MAX_DEPTH) {
            throw new MalformedRecordingException("metadata nested deeper than " + MAX_DEPTH);
        }
        String name = string(input, strings);
        int attributeCount = input.readCount(2);
        Map<String, String> attributes = new HashMap<>();
        for (int i = 0; i < attributeCount; i++) {
            attributes.put(string(input, strings), string(input, strings));
        }
        int childCount = input.readCount(3);
        List<Element> children = new ArrayList<>(childCount);
        for (int i = 0; i < childCount; i++) {
            children.add(element(input, strings, depth + 1));
        }
        return new Element(name, attributes, children);
    }

    private static String string(JfrInput input, String[] strings) throws MalformedRecordingException {
        int index = input.readInt();
        if (index < 0 || index >= strings.length || strings[index] == null) {
            throw new MalformedRecordingException("metadata string " + index + " of " + strings.length);
        }
        return strings[index];
    }

    private void define(List<Element> classes) throws MalformedRecordingException {
        Map<Long, String> names = new HashMap<>();
        for (Element type : classes) {
            names.put(type.id("id"), type.required("name"));
        }
        for (Element type : classes) {
            List<Field> fields = new ArrayList<>();
            for (Element field : type.children("field")) {
                fields.add(new Field(field.required("name"), field.id("class"),
                        field.attributes.containsKey("dimension"), "true".equals(field.attributes.get("constantPool")),
                        annotation(field, names, UNSIGNED) != null));
            }
            Element label = annotation(type, names, LABEL);
            long id = type.id("id");
            Type defined = new Type(id, names.get(id), type.attributes.get("superType"),
                    "true".equals(type.attributes.get("simpleType")),
                    label == null ? null : label.attributes.get("value"), List.copyOf(fields));
            types.put(id, defined);
            byName.put(defined.name(), defined);
        }
    }

    private static Element annotation(Element annotated, Map<Long, String> names, String typeName)
            throws MalformedRecordingException {
        for (Element annotation : annotated.children("annotation")) {
            if (typeName.equals(names.get(annotation.id("class")))) {
                return annotation;
            }
        }
        return null;
    }
}
