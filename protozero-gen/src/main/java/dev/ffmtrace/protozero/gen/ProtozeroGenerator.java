package dev.ffmtrace.protozero.gen;

import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumDescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumValueDescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorSet;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Generates a ProtoZero writer class, with a nested {@code Decoder}, for every message
 * of a protoc descriptor set ({@code protoc --descriptor_set_out --include_imports}).
 *
 * <p>A message {@code perfetto.protos.TracePacket} becomes the class
 * {@code <prefix>.perfetto.protos.TracePacket}; nested messages and enums become nested
 * types. Writers append each field as it is set: {@code setX} for singular
 * fields, {@code addX} for repeated ones, {@code setXPacked} for packed ones; message
 * fields return the child writer. A proto enum becomes a Java enum whose {@code number()}
 * is the value on the wire: an enum field's setter takes the enum and writes
 * {@code value.number()}. {@code number()} is a switch on {@code ordinal()} rather than a
 * field of its own: C2 folds {@code Enum.ordinal} of a constant enum (a final field in
 * {@code java.lang}, which it trusts) and with it the switch, so a setter given a constant
 * writes an immediate, tag and varint packed at compile time, as an {@code int} constant
 * would; a field of the generated enum is not trusted and costs a load and the run-time
 * varint packing, 10% of a TrackEvent-sized packet in TraceWriterBenchmark. Decoders return an enum field's raw
 * number, as readers must keep values a newer .proto added, and the enum beside it
 * ({@code typeEnum()} beside {@code type()}), null for such a value.
 *
 * <p>Usage: {@code ProtozeroGenerator <descriptor-set> <output-dir> <java-package-prefix>}.
 */
public final class ProtozeroGenerator {
    private static final Set<String> JAVA_KEYWORDS = Set.of(
            "abstract", "assert", "boolean", "break", "byte", "case", "catch", "char", "class", "const",
            "continue", "default", "do", "double", "else", "enum", "extends", "final", "finally", "float",
            "for", "goto", "if", "implements", "import", "instanceof", "int", "interface", "long", "native",
            "new", "package", "private", "protected", "public", "return", "short", "static", "strictfp",
            "super", "switch", "synchronized", "this", "throw", "throws", "transient", "try", "void",
            "volatile", "while", "true", "false", "null", "var", "record", "yield", "sealed", "permits");
    /** Methods of TypedProtoDecoder and Object a decoder getter must not hide. */
    private static final Set<String> DECODER_RESERVED = Set.of(
            "reset", "status", "hasError", "has", "count", "field", "longValue", "stringValue",
            "bytesValue", "nested", "repeated", "repeatedScalar", "slotTable", "getClass", "hashCode",
            "equals", "toString", "notify", "notifyAll", "wait", "clone", "finalize");

    private final String packagePrefix;
    /** Proto full name (".pkg.Outer.Inner") to Java name relative to its package ("Outer.Inner"). */
    private final Map<String, String> javaNames = new HashMap<>();
    private final Map<String, String> javaPackages = new HashMap<>();

    private ProtozeroGenerator(String packagePrefix) {
        this.packagePrefix = packagePrefix;
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 3) {
            throw new IllegalArgumentException(
                    "usage: ProtozeroGenerator <descriptor-set> <output-dir> <java-package-prefix>");
        }
        FileDescriptorSet set;
        try (InputStream in = Files.newInputStream(Path.of(args[0]))) {
            set = FileDescriptorSet.parseFrom(in);
        }
        int files = generate(set, Path.of(args[1]), args[2]);
        System.out.println("protozero-gen: wrote " + files + " classes to " + args[1]);
    }

    /** Writes the classes for every file of {@code set} under {@code outputDir}; returns how many. */
    public static int generate(FileDescriptorSet set, Path outputDir, String packagePrefix) throws IOException {
        ProtozeroGenerator generator = new ProtozeroGenerator(packagePrefix);
        for (FileDescriptorProto file : set.getFileList()) {
            generator.index(file);
        }
        int written = 0;
        for (FileDescriptorProto file : set.getFileList()) {
            String javaPackage = generator.javaPackage(file);
            Path dir = outputDir.resolve(javaPackage.replace('.', '/'));
            Files.createDirectories(dir);
            for (DescriptorProto message : file.getMessageTypeList()) {
                StringBuilder out = new StringBuilder();
                generator.header(out, file, javaPackage);
                generator.message(out, file, message, "", true);
                Files.writeString(dir.resolve(message.getName() + ".java"), out, StandardCharsets.UTF_8);
                written++;
            }
            for (EnumDescriptorProto e : file.getEnumTypeList()) {
                StringBuilder out = new StringBuilder();
                generator.header(out, file, javaPackage);
                generator.enumeration(out, e, "", true);
                Files.writeString(dir.resolve(e.getName() + ".java"), out, StandardCharsets.UTF_8);
                written++;
            }
        }
        return written;
    }

    private String javaPackage(FileDescriptorProto file) {
        return file.getPackage().isEmpty() ? packagePrefix : packagePrefix + "." + file.getPackage();
    }

    private void index(FileDescriptorProto file) {
        String protoPrefix = file.getPackage().isEmpty() ? "." : "." + file.getPackage() + ".";
        for (DescriptorProto m : file.getMessageTypeList()) {
            indexMessage(file, m, protoPrefix, "");
        }
        for (EnumDescriptorProto e : file.getEnumTypeList()) {
            javaNames.put(protoPrefix + e.getName(), e.getName());
            javaPackages.put(protoPrefix + e.getName(), javaPackage(file));
        }
    }

    private void indexMessage(FileDescriptorProto file, DescriptorProto m, String protoPrefix, String javaPrefix) {
        String protoName = protoPrefix + m.getName();
        String javaName = javaPrefix + m.getName();
        javaNames.put(protoName, javaName);
        javaPackages.put(protoName, javaPackage(file));
        for (DescriptorProto nested : m.getNestedTypeList()) {
            indexMessage(file, nested, protoName + ".", javaName + ".");
        }
        for (EnumDescriptorProto e : m.getEnumTypeList()) {
            javaNames.put(protoName + "." + e.getName(), javaName + "." + e.getName());
            javaPackages.put(protoName + "." + e.getName(), javaPackage(file));
        }
    }

    private String qualifiedJavaName(String protoTypeName) {
        String name = javaNames.get(protoTypeName);
        if (name == null) {
            throw new IllegalStateException("type " + protoTypeName + " is not in the descriptor set");
        }
        return javaPackages.get(protoTypeName) + "." + name;
    }

    private void header(StringBuilder out, FileDescriptorProto file, String javaPackage) {
        out.append("// Generated by protozero-gen from ").append(file.getName()).append(". Do not edit.\n");
        out.append("package ").append(javaPackage).append(";\n\n");
    }

    private void message(StringBuilder out, FileDescriptorProto file, DescriptorProto m, String indent,
                         boolean topLevel) {
        String name = m.getName();
        for (DescriptorProto nested : m.getNestedTypeList()) {
            checkNotDecoder(name, nested.getName());
        }
        for (EnumDescriptorProto e : m.getEnumTypeList()) {
            checkNotDecoder(name, e.getName());
        }
        out.append(indent).append("/** Writer of {@code ").append(name).append("}; decode with {@link Decoder}. */\n");
        out.append(indent).append(topLevel ? "public final class " : "public static final class ")
                .append(name).append(" extends dev.ffmtrace.protozero.Message {\n");
        String in = indent + "    ";
        out.append(in).append("public static final dev.ffmtrace.protozero.MessageFactory<").append(name)
                .append("> FACTORY =\n").append(in).append("        dev.ffmtrace.protozero.MessageFactory.of(")
                .append(name).append("::new);\n\n");
        // An explicit constructor: javac -Xlint warns of a default one in an exported package.
        out.append(in).append("/** A writer of {@code ").append(name).append("}. */\n");
        out.append(in).append("public ").append(name).append("() {\n").append(in).append("}\n\n");
        for (FieldDescriptorProto f : m.getFieldList()) {
            if (f.getType() == FieldDescriptorProto.Type.TYPE_GROUP) {
                throw new IllegalStateException("groups are not supported: " + name + "." + f.getName());
            }
            if (f.getNumber() > Short.MAX_VALUE) {
                throw new IllegalStateException("field number " + f.getNumber() + " of " + name + "." + f.getName()
                        + " is above the decoder table's limit of " + Short.MAX_VALUE);
            }
            out.append(in).append("public static final int ").append(constantName(f.getName()))
                    .append("_FIELD_NUMBER = ").append(f.getNumber()).append(";\n");
        }
        if (m.getFieldCount() > 0) {
            out.append('\n');
        }
        for (FieldDescriptorProto f : m.getFieldList()) {
            writerMethods(out, in, f);
        }
        decoder(out, in, m);
        for (EnumDescriptorProto e : m.getEnumTypeList()) {
            out.append('\n');
            enumeration(out, e, in, false);
        }
        for (DescriptorProto nested : m.getNestedTypeList()) {
            out.append('\n');
            message(out, file, nested, in, false);
        }
        out.append(indent).append("}\n");
    }

    private static void checkNotDecoder(String message, String nestedType) {
        if (nestedType.equals("Decoder")) {
            throw new IllegalStateException("a type nested in " + message
                    + " is named Decoder, the name of the generated decoder class");
        }
    }

    private void enumeration(StringBuilder out, EnumDescriptorProto e, String indent, boolean topLevel) {
        String name = e.getName();
        String in = indent + "    ";
        out.append(indent).append("/** Values of the enum {@code ").append(name)
                .append("}; {@link #number()} is the value on the wire. */\n");
        out.append(indent).append("public enum ").append(name).append(" {\n");
        for (int i = 0; i < e.getValueCount(); i++) {
            EnumValueDescriptorProto v = e.getValue(i);
            if (v.getName().equals("number")) {
                throw new IllegalStateException("a value of " + name + " is named number, the name of its field");
            }
            out.append(in).append(v.getName()).append(i == e.getValueCount() - 1 ? ";\n" : ",\n");
        }
        out.append('\n').append(in).append("/** The value on the wire. */\n");
        out.append(in).append("public int number() {\n").append(in).append("    return switch (ordinal()) {\n");
        for (int i = 0; i < e.getValueCount(); i++) {
            out.append(in).append("        case ").append(i).append(" -> ").append(e.getValue(i).getNumber()).append(";\n");
        }
        out.append(in).append("        default -> throw new AssertionError(ordinal());\n")
                .append(in).append("    };\n").append(in).append("}\n\n");
        out.append(in).append("/**\n").append(in)
                .append(" * The value whose number is {@code number}, or null for a number this .proto does not\n")
                .append(in).append(" * define (a newer producer's); the first of aliases sharing a number.\n")
                .append(in).append(" */\n");
        out.append(in).append("public static ").append(name).append(" forNumber(int number) {\n")
                .append(in).append("    return switch (number) {\n");
        Set<Integer> numbers = new HashSet<>();
        for (EnumValueDescriptorProto v : e.getValueList()) {
            if (numbers.add(v.getNumber())) {
                out.append(in).append("        case ").append(v.getNumber()).append(" -> ").append(v.getName())
                        .append(";\n");
            }
        }
        out.append(in).append("        default -> null;\n").append(in).append("    };\n").append(in).append("}\n");
        out.append(indent).append("}\n");
    }

    private void writerMethods(StringBuilder out, String in, FieldDescriptorProto f) {
        String id = constantName(f.getName()) + "_FIELD_NUMBER";
        boolean repeated = f.getLabel() == FieldDescriptorProto.Label.LABEL_REPEATED;
        String method = (repeated ? "add" : "set") + upperCamel(f.getName());
        switch (f.getType()) {
            case TYPE_MESSAGE -> {
                String child = qualifiedJavaName(f.getTypeName());
                out.append(in).append("public ").append(child).append(' ').append(method).append("() {\n")
                        .append(in).append("    return beginNestedMessage(").append(id).append(", ")
                        .append(child).append(".FACTORY);\n").append(in).append("}\n\n");
            }
            case TYPE_STRING -> {
                setter(out, in, method, "String", "appendString", id);
                out.append(in).append("/** Sets the field from bytes that are already UTF-8. */\n");
                setter(out, in, method, "java.lang.foreign.MemorySegment", "appendBytes", id);
            }
            case TYPE_BYTES -> {
                setter(out, in, method, "byte[]", "appendBytes", id);
                setter(out, in, method, "java.lang.foreign.MemorySegment", "appendBytes", id);
                setter(out, in, method, "java.nio.ByteBuffer", "appendBytes", id);
            }
            case TYPE_ENUM -> {
                if (repeated && f.getOptions().getPacked()) {
                    out.append(in).append("/** Packed values as their numbers ({@code ")
                            .append(qualifiedJavaName(f.getTypeName())).append(".number()}). */\n");
                    packedSetter(out, in, f, Scalar.INT32, id);
                } else {
                    out.append(in).append("public void ").append(method).append('(')
                            .append(qualifiedJavaName(f.getTypeName())).append(" value) {\n").append(in)
                            .append("    appendInt32(").append(id).append(", value.number());\n")
                            .append(in).append("}\n\n");
                }
            }
            default -> {
                Scalar s = Scalar.of(f.getType());
                if (repeated && f.getOptions().getPacked()) {
                    packedSetter(out, in, f, s, id);
                } else {
                    setter(out, in, method, s.javaType, s.append, id);
                }
            }
        }
    }

    private static void packedSetter(StringBuilder out, String in, FieldDescriptorProto f, Scalar s, String id) {
        String packedMethod = "set" + upperCamel(f.getName()) + "Packed";
        out.append(in).append("public void ").append(packedMethod).append('(').append(s.arrayType)
                .append(" values, int offset, int count) {\n").append(in).append("    ")
                .append(s.packedAppend).append('(').append(id).append(", values, offset, count);\n")
                .append(in).append("}\n\n");
    }

    private static void setter(StringBuilder out, String in, String method, String type, String append, String id) {
        out.append(in).append("public void ").append(method).append('(').append(type).append(" value) {\n")
                .append(in).append("    ").append(append).append('(').append(id).append(", value);\n")
                .append(in).append("}\n\n");
    }

    private void decoder(StringBuilder out, String indent, DescriptorProto m) {
        String in = indent + "    ";
        out.append(indent).append("/** Decoder of {@code ").append(m.getName())
                .append("}: reuse one instance across messages with {@code reset}. */\n");
        out.append(indent).append("public static final class Decoder extends dev.ffmtrace.protozero.TypedProtoDecoder {\n");
        out.append(in).append("private static final short[] SLOTS = slotTable(");
        for (int i = 0; i < m.getFieldCount(); i++) {
            out.append(i == 0 ? "" : ", ").append(m.getField(i).getNumber());
        }
        out.append(");\n\n");
        out.append(in).append("public Decoder() {\n").append(in).append("    super(SLOTS);\n")
                .append(in).append("}\n");
        for (FieldDescriptorProto f : m.getFieldList()) {
            out.append('\n');
            decoderMethods(out, in, f);
        }
        out.append(indent).append("}\n");
    }

    private void decoderMethods(StringBuilder out, String in, FieldDescriptorProto f) {
        String id = constantName(f.getName()) + "_FIELD_NUMBER";
        String getter = lowerCamel(f.getName());
        if (DECODER_RESERVED.contains(getter)) {
            getter = getter + "Value";
        }
        boolean repeated = f.getLabel() == FieldDescriptorProto.Label.LABEL_REPEATED;
        boolean lengthDelimited = switch (f.getType()) {
            case TYPE_MESSAGE, TYPE_STRING, TYPE_BYTES -> true;
            default -> false;
        };
        if (repeated && lengthDelimited) {
            out.append(in).append("public dev.ffmtrace.protozero.RepeatedFieldIterator ").append(getter)
                    .append("(dev.ffmtrace.protozero.RepeatedFieldIterator iterator) {\n")
                    .append(in).append("    return repeated(").append(id).append(", iterator);\n")
                    .append(in).append("}\n\n");
            out.append(in).append("public int ").append(getter).append("Count() {\n")
                    .append(in).append("    return count(").append(id).append(");\n").append(in).append("}\n");
            return;
        }
        if (repeated) {
            Scalar s = Scalar.of(f.getType());
            out.append(in).append("/** Elements as raw 64-bit values, packed or not; {@code ").append(s.javaType)
                    .append("} after conversion. */\n");
            out.append(in).append("public dev.ffmtrace.protozero.RepeatedScalarIterator ").append(getter)
                    .append("(dev.ffmtrace.protozero.RepeatedScalarIterator iterator) {\n")
                    .append(in).append("    return repeatedScalar(").append(id)
                    .append(", dev.ffmtrace.protozero.ProtoWire.").append(s.wireType).append(", iterator);\n")
                    .append(in).append("}\n");
            return;
        }
        String hasName = "has" + upperCamel(f.getName());
        if (DECODER_RESERVED.contains(hasName)) {
            hasName = hasName + "Field";
        }
        out.append(in).append("public boolean ").append(hasName).append("() {\n")
                .append(in).append("    return has(").append(id).append(");\n").append(in).append("}\n\n");
        switch (f.getType()) {
            case TYPE_MESSAGE -> {
                String child = qualifiedJavaName(f.getTypeName());
                out.append(in).append("/** Points {@code into} at the field; false if it is absent. */\n");
                out.append(in).append("public boolean ").append(getter).append('(').append(child)
                        .append(".Decoder into) {\n").append(in).append("    return nested(").append(id)
                        .append(", into);\n").append(in).append("}\n");
            }
            case TYPE_STRING -> out.append(in).append("public String ").append(getter).append("() {\n")
                    .append(in).append("    return stringValue(").append(id).append(");\n").append(in).append("}\n");
            case TYPE_BYTES -> out.append(in).append("public byte[] ").append(getter).append("() {\n")
                    .append(in).append("    return bytesValue(").append(id).append(");\n").append(in).append("}\n");
            default -> {
                Scalar s = Scalar.of(f.getType());
                if (f.getType() == FieldDescriptorProto.Type.TYPE_ENUM) {
                    out.append(in).append("/** The number as written, also one a newer .proto added. */\n");
                }
                out.append(in).append("public ").append(s.javaType).append(' ').append(getter).append("() {\n")
                        .append(in).append("    return ").append(String.format(s.decode, "longValue(" + id + ")"))
                        .append(";\n").append(in).append("}\n");
                if (f.getType() == FieldDescriptorProto.Type.TYPE_ENUM) {
                    String type = qualifiedJavaName(f.getTypeName());
                    out.append('\n').append(in).append("/** {@link #").append(getter)
                            .append("()} as the enum; null for a number this .proto does not define. */\n");
                    String upper = upperCamel(f.getName());
                    out.append(in).append("public ").append(type).append(' ')
                            .append(Character.toLowerCase(upper.charAt(0))).append(upper, 1, upper.length())
                            .append("Enum() {\n").append(in).append("    return ").append(type)
                            .append(".forNumber(").append(getter).append("());\n").append(in).append("}\n");
                }
            }
        }
    }

    /** How each scalar proto type is passed, appended and decoded. */
    private enum Scalar {
        DOUBLE("double", "appendDouble", "appendPackedDoubles", "double[]", "WIRE_TYPE_FIXED64",
                "Double.longBitsToDouble(%s)"),
        FLOAT("float", "appendFloat", "appendPackedFloats", "float[]", "WIRE_TYPE_FIXED32",
                "Float.intBitsToFloat((int) %s)"),
        INT64("long", "appendVarInt", "appendPackedVarInts", "long[]", "WIRE_TYPE_VARINT", "%s"),
        UINT64("long", "appendVarInt", "appendPackedVarInts", "long[]", "WIRE_TYPE_VARINT", "%s"),
        INT32("int", "appendInt32", "appendPackedInt32s", "int[]", "WIRE_TYPE_VARINT", "(int) %s"),
        UINT32("int", "appendUInt32", "appendPackedUInt32s", "int[]", "WIRE_TYPE_VARINT", "(int) %s"),
        FIXED64("long", "appendFixed64", "appendPackedFixed64s", "long[]", "WIRE_TYPE_FIXED64", "%s"),
        FIXED32("int", "appendFixed32", "appendPackedFixed32s", "int[]", "WIRE_TYPE_FIXED32", "(int) %s"),
        BOOL("boolean", "appendBool", "appendPackedUInt32s", "int[]", "WIRE_TYPE_VARINT", "%s != 0"),
        SINT32("int", "appendSInt32", "appendPackedSInt32s", "int[]", "WIRE_TYPE_VARINT",
                "dev.ffmtrace.protozero.ProtoWire.zigZagDecode32((int) %s)"),
        SINT64("long", "appendSInt64", "appendPackedSInt64s", "long[]", "WIRE_TYPE_VARINT",
                "dev.ffmtrace.protozero.ProtoWire.zigZagDecode64(%s)");

        final String javaType;
        final String append;
        final String packedAppend;
        final String arrayType;
        final String wireType;
        final String decode;

        Scalar(String javaType, String append, String packedAppend, String arrayType, String wireType, String decode) {
            this.javaType = javaType;
            this.append = append;
            this.packedAppend = packedAppend;
            this.arrayType = arrayType;
            this.wireType = wireType;
            this.decode = decode;
        }

        static Scalar of(FieldDescriptorProto.Type type) {
            return switch (type) {
                case TYPE_DOUBLE -> DOUBLE;
                case TYPE_FLOAT -> FLOAT;
                case TYPE_INT64 -> INT64;
                case TYPE_UINT64 -> UINT64;
                case TYPE_INT32, TYPE_ENUM -> INT32;
                case TYPE_UINT32 -> UINT32;
                case TYPE_FIXED64, TYPE_SFIXED64 -> FIXED64;
                case TYPE_FIXED32, TYPE_SFIXED32 -> FIXED32;
                case TYPE_BOOL -> BOOL;
                case TYPE_SINT32 -> SINT32;
                case TYPE_SINT64 -> SINT64;
                default -> throw new IllegalArgumentException("not a scalar type: " + type);
            };
        }
    }

    static String upperCamel(String snake) {
        StringBuilder out = new StringBuilder(snake.length());
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

    static String lowerCamel(String snake) {
        String upper = upperCamel(snake);
        String lower = Character.toLowerCase(upper.charAt(0)) + upper.substring(1);
        return JAVA_KEYWORDS.contains(lower) ? lower + "_" : lower;
    }

    static String constantName(String snake) {
        return snake.toUpperCase(Locale.ROOT);
    }
}
