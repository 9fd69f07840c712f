package dev.ffmtrace.perfetto.protos;

import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.Message;
import dev.ffmtrace.protozero.MessageFactory;
import dev.ffmtrace.protozero.ProtoField;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.protozero.RepeatedScalarIterator;
import dev.ffmtrace.protozero.TypedProtoDecoder;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import perfetto.protos.CommitDataRequestOuterClass;
import perfetto.protos.TraceOuterClass;
import perfetto.protos.WireProtocol;

import java.lang.foreign.MemorySegment;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every generated writer and decoder against protobuf-java, both ways, with random
 * field values: protozero-ffm's bytes parse with protobuf-java to the same message, and
 * protobuf-java's bytes decode with the generated decoders to the same values. The
 * generated classes are driven by reflection, by the generator's naming rules, so every
 * message of the project's protos is covered without a hand-written test per message.
 */
class ProtobufJavaConformanceTest {
    private static final Set<String> DECODER_RESERVED = Set.of(
            "reset", "status", "hasError", "has", "count", "field", "longValue", "stringValue",
            "bytesValue", "nested", "repeated", "repeatedScalar", "slotTable");
    private static final String CHARS = "abc xyz\u00e9\u00df\u20ac\u4e2d\ud83d\ude00\u0000\u007f\u0080\u07ff\u0800";

    static final List<Descriptor> ALL_MESSAGES = allMessages();

    private static List<Descriptor> allMessages() {
        Map<String, Descriptor> found = new LinkedHashMap<>();
        for (FileDescriptor root : List.of(TraceOuterClass.getDescriptor(),
                CommitDataRequestOuterClass.getDescriptor(), WireProtocol.getDescriptor())) {
            collectFiles(root, found);
        }
        return List.copyOf(found.values());
    }

    private static void collectFiles(FileDescriptor file, Map<String, Descriptor> found) {
        for (Descriptor d : file.getMessageTypes()) {
            collectMessages(d, found);
        }
        for (FileDescriptor dep : file.getDependencies()) {
            collectFiles(dep, found);
        }
    }

    private static void collectMessages(Descriptor d, Map<String, Descriptor> found) {
        found.put(d.getFullName(), d);
        for (Descriptor nested : d.getNestedTypes()) {
            collectMessages(nested, found);
        }
    }

    @Provide
    Arbitrary<Descriptor> messageTypes() {
        return Arbitraries.of(ALL_MESSAGES);
    }

    @Property(tries = 1500)
    void protozeroBytesParseWithProtobufJava(@ForAll("messageTypes") Descriptor type, @ForAll long seed,
                                             @ForAll @IntRange(min = 8, max = 600) int sliceSize)
            throws Exception {
        DynamicMessage expected = randomMessage(type, new SplittableRandom(seed), 0);
        HeapBuffered<Message> buffered = new HeapBuffered<>(factory(type), sliceSize, sliceSize);
        write(buffered.get(), expected);
        DynamicMessage parsed = DynamicMessage.parseFrom(type, buffered.toByteArray());
        assertEquals(expected, parsed);
    }

    @Property(tries = 1500)
    void protobufJavaBytesDecodeWithGeneratedDecoders(@ForAll("messageTypes") Descriptor type, @ForAll long seed)
            throws Exception {
        DynamicMessage expected = randomMessage(type, new SplittableRandom(seed), 0);
        TypedProtoDecoder decoder = newDecoder(type);
        decoder.reset(MemorySegment.ofArray(expected.toByteArray()));
        assertDecodes(expected, decoder);
    }

    // ---------------------------------------------------------------- random values

    private static DynamicMessage randomMessage(Descriptor type, SplittableRandom random, int depth) {
        DynamicMessage.Builder b = DynamicMessage.newBuilder(type);
        for (FieldDescriptor f : type.getFields()) {
            if (random.nextInt(3) == 0) {
                continue;
            }
            if (f.getJavaType() == FieldDescriptor.JavaType.MESSAGE && depth >= 3) {
                continue;
            }
            if (f.isRepeated()) {
                int n = random.nextInt(4);
                for (int i = 0; i < n; i++) {
                    b.addRepeatedField(f, randomValue(f, random, depth));
                }
            } else {
                b.setField(f, randomValue(f, random, depth));
            }
        }
        return b.build();
    }

    private static Object randomValue(FieldDescriptor f, SplittableRandom random, int depth) {
        return switch (f.getJavaType()) {
            case INT -> random.nextBoolean() ? random.nextInt(300) - 100 : random.nextInt();
            case LONG -> random.nextBoolean() ? (long) random.nextInt(300) - 100 : random.nextLong();
            case FLOAT -> (float) random.nextDouble(-1e6, 1e6);
            case DOUBLE -> random.nextBoolean() ? random.nextDouble() : Double.longBitsToDouble(random.nextLong());
            case BOOLEAN -> random.nextBoolean();
            case STRING -> {
                StringBuilder s = new StringBuilder();
                int n = random.nextInt(random.nextBoolean() ? 10 : 200);
                for (int i = 0; i < n; i++) {
                    char c = CHARS.charAt(random.nextInt(CHARS.length()));
                    if (Character.isHighSurrogate(c)) {
                        s.append("\ud83d\ude00");
                    } else if (!Character.isLowSurrogate(c)) {
                        s.append(c);
                    }
                }
                yield s.toString();
            }
            case BYTE_STRING -> {
                byte[] bytes = new byte[random.nextInt(random.nextBoolean() ? 8 : 300)];
                random.nextBytes(bytes);
                yield ByteString.copyFrom(bytes);
            }
            case ENUM -> {
                List<EnumValueDescriptor> values = f.getEnumType().getValues();
                yield values.get(random.nextInt(values.size()));
            }
            case MESSAGE -> randomMessage(f.getMessageType(), random, depth + 1);
        };
    }

    // ---------------------------------------------------------------- writing

    private static void write(Message writer, DynamicMessage message) throws ReflectiveOperationException {
        Class<?> type = writer.getClass();
        for (Map.Entry<FieldDescriptor, Object> e : message.getAllFields().entrySet()) {
            FieldDescriptor f = e.getKey();
            if (f.isPacked()) {
                writePacked(writer, f, (List<?>) e.getValue());
                continue;
            }
            String name = (f.isRepeated() ? "add" : "set") + upperCamel(f.getName());
            List<?> values = f.isRepeated() ? (List<?>) e.getValue() : List.of(e.getValue());
            for (Object value : values) {
                if (f.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
                    Message child = (Message) type.getMethod(name).invoke(writer);
                    write(child, (DynamicMessage) value);
                } else {
                    Class<?> parameter = parameterType(f);
                    type.getMethod(name, parameter).invoke(writer, writerArgument(parameter, f, value));
                }
            }
        }
    }

    private static void writePacked(Message writer, FieldDescriptor f, List<?> values)
            throws ReflectiveOperationException {
        String name = "set" + upperCamel(f.getName()) + "Packed";
        Object array = switch (f.getJavaType()) {
            case LONG -> values.stream().mapToLong(v -> (Long) v).toArray();
            case INT -> values.stream().mapToInt(v -> (Integer) v).toArray();
            default -> throw new AssertionError("packed type not covered by the protos: " + f);
        };
        writer.getClass().getMethod(name, array.getClass(), int.class, int.class)
                .invoke(writer, array, 0, values.size());
    }

    private static Class<?> parameterType(FieldDescriptor f) throws ClassNotFoundException {
        return switch (f.getJavaType()) {
            case ENUM -> enumClass(f.getEnumType());
            case INT -> int.class;
            case LONG -> long.class;
            case FLOAT -> float.class;
            case DOUBLE -> double.class;
            case BOOLEAN -> boolean.class;
            case STRING -> String.class;
            case BYTE_STRING -> byte[].class;
            case MESSAGE -> throw new AssertionError();
        };
    }

    private static Object writerArgument(Class<?> parameter, FieldDescriptor f, Object value)
            throws ReflectiveOperationException {
        return switch (f.getJavaType()) {
            case ENUM -> parameter.getMethod("forNumber", int.class).invoke(null, ((EnumValueDescriptor) value).getNumber());
            case BYTE_STRING -> ((ByteString) value).toByteArray();
            default -> value;
        };
    }

    // ---------------------------------------------------------------- decoding

    private static void assertDecodes(DynamicMessage expected, TypedProtoDecoder decoder) throws Exception {
        Class<?> type = decoder.getClass();
        String where = expected.getDescriptorForType().getFullName();
        assertTrue(!decoder.hasError(), where + ": " + decoder.status());
        for (FieldDescriptor f : expected.getDescriptorForType().getFields()) {
            String getter = getterName(f);
            if (f.isRepeated()) {
                List<?> values = (List<?>) expected.getField(f);
                List<Object> decoded = new ArrayList<>();
                if (f.getJavaType() == FieldDescriptor.JavaType.MESSAGE
                        || f.getJavaType() == FieldDescriptor.JavaType.STRING
                        || f.getJavaType() == FieldDescriptor.JavaType.BYTE_STRING) {
                    RepeatedFieldIterator it = (RepeatedFieldIterator) type
                            .getMethod(getter, RepeatedFieldIterator.class).invoke(decoder, new RepeatedFieldIterator());
                    int i = 0;
                    while (it.next()) {
                        ProtoField field = it.field();
                        if (f.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
                            TypedProtoDecoder child = newDecoder(f.getMessageType());
                            child.reset(field);
                            assertDecodes((DynamicMessage) values.get(i), child);
                            decoded.add(values.get(i));
                        } else if (f.getJavaType() == FieldDescriptor.JavaType.STRING) {
                            decoded.add(field.asString());
                        } else {
                            decoded.add(ByteString.copyFrom(field.asBytes()));
                        }
                        i++;
                    }
                    assertEquals(values.size(), (int) type.getMethod(getter + "Count").invoke(decoder));
                } else {
                    RepeatedScalarIterator it = (RepeatedScalarIterator) type
                            .getMethod(getter, RepeatedScalarIterator.class).invoke(decoder, new RepeatedScalarIterator());
                    while (it.next()) {
                        decoded.add(fromRaw(f, it.value()));
                    }
                    assertTrue(!it.hasError());
                }
                assertEquals(values, decoded, where + "." + f.getName());
                continue;
            }
            boolean has = (boolean) type.getMethod(hasName(f)).invoke(decoder);
            assertEquals(expected.hasField(f), has, where + "." + f.getName());
            if (!has) {
                continue;
            }
            Object actual;
            if (f.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
                TypedProtoDecoder child = newDecoder(f.getMessageType());
                assertTrue((boolean) type.getMethod(getter, child.getClass()).invoke(decoder, child));
                assertDecodes((DynamicMessage) expected.getField(f), child);
                continue;
            }
            actual = type.getMethod(getter).invoke(decoder);
            Object expectedValue = expected.getField(f);
            switch (f.getJavaType()) {
                case ENUM -> {
                    int number = ((EnumValueDescriptor) expectedValue).getNumber();
                    String upper = upperCamel(f.getName());
                    Object typed = type.getMethod(Character.toLowerCase(upper.charAt(0)) + upper.substring(1) + "Enum")
                            .invoke(decoder);
                    assertEquals(number, typed.getClass().getMethod("number").invoke(typed), where + "." + f.getName());
                    expectedValue = number;
                }
                case BYTE_STRING -> {
                    expectedValue = ((ByteString) expectedValue).toByteArray();
                    actual = ByteString.copyFrom((byte[]) actual);
                    expectedValue = ByteString.copyFrom((byte[]) expectedValue);
                }
                default -> {
                }
            }
            assertEquals(expectedValue, actual, where + "." + f.getName());
        }
    }

    private static Object fromRaw(FieldDescriptor f, long raw) {
        return switch (f.getType()) {
            case INT64, UINT64, FIXED64, SFIXED64 -> raw;
            case INT32, UINT32, FIXED32, SFIXED32 -> (int) raw;
            case SINT64 -> (raw >>> 1) ^ -(raw & 1);
            case DOUBLE -> Double.longBitsToDouble(raw);
            case BOOL -> raw != 0;
            default -> throw new AssertionError("repeated type not covered by the protos: " + f);
        };
    }

    // ---------------------------------------------------------------- naming

    private static String binaryName(Descriptor d) {
        String nesting = d.getFullName().substring(d.getFile().getPackage().length() + 1).replace('.', '$');
        return "dev.ffmtrace." + d.getFile().getPackage() + "." + nesting;
    }

    private static Class<?> enumClass(EnumDescriptor e) throws ClassNotFoundException {
        String nesting = e.getFullName().substring(e.getFile().getPackage().length() + 1).replace('.', '$');
        return Class.forName("dev.ffmtrace." + e.getFile().getPackage() + "." + nesting);
    }

    static Class<?> writerClass(Descriptor d) throws ClassNotFoundException {
        return Class.forName(binaryName(d));
    }

    static Class<?> decoderClass(Descriptor d) throws ClassNotFoundException {
        return Class.forName(binaryName(d) + "$Decoder");
    }

    @SuppressWarnings("unchecked")
    private static MessageFactory<Message> factory(Descriptor d) throws ReflectiveOperationException {
        return (MessageFactory<Message>) writerClass(d).getField("FACTORY").get(null);
    }

    private static TypedProtoDecoder newDecoder(Descriptor d) throws ReflectiveOperationException {
        try {
            return (TypedProtoDecoder) decoderClass(d).getConstructor().newInstance();
        } catch (InvocationTargetException e) {
            throw new AssertionError(e.getCause());
        }
    }

    private static String upperCamel(String snake) {
        StringBuilder out = new StringBuilder();
        boolean upper = true;
        for (char c : snake.toCharArray()) {
            if (c == '_') {
                upper = true;
            } else {
                out.append(upper ? Character.toUpperCase(c) : c);
                upper = false;
            }
        }
        return out.toString();
    }

    private static String getterName(FieldDescriptor f) {
        String upper = upperCamel(f.getName());
        String lower = Character.toLowerCase(upper.charAt(0)) + upper.substring(1);
        return DECODER_RESERVED.contains(lower) ? lower + "Value" : lower;
    }

    private static String hasName(FieldDescriptor f) {
        String name = "has" + upperCamel(f.getName());
        return DECODER_RESERVED.contains(name) ? name + "Field" : name;
    }
}
