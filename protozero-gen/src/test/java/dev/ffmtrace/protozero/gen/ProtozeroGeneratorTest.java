package dev.ffmtrace.protozero.gen;

import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumDescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumValueDescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto.Label;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto.Type;
import com.google.protobuf.DescriptorProtos.FieldOptions;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProtozeroGeneratorTest {
    @TempDir
    Path out;

    private static FieldDescriptorProto field(String name, int number, Type type, Label label) {
        return FieldDescriptorProto.newBuilder().setName(name).setNumber(number).setType(type).setLabel(label).build();
    }

    private static FileDescriptorSet file(DescriptorProto message) {
        return FileDescriptorSet.newBuilder().addFile(FileDescriptorProto.newBuilder()
                .setName("test/sample.proto").setPackage("test.pkg").addMessageType(message)).build();
    }

    @Test
    void namesFollowJavaConventions() {
        assertEquals("TrustedPacketSequenceId", ProtozeroGenerator.upperCamel("trusted_packet_sequence_id"));
        assertEquals("package_", ProtozeroGenerator.lowerCamel("package"));
        assertEquals("sizeKb", ProtozeroGenerator.lowerCamel("size_kb"));
        assertEquals("SIZE_KB", ProtozeroGenerator.constantName("size_kb"));
    }

    @Test
    void generatesWritersDecodersAndEnums() throws IOException {
        DescriptorProto message = DescriptorProto.newBuilder().setName("Sample")
                .addField(field("count", 1, Type.TYPE_UINT64, Label.LABEL_OPTIONAL))
                .addField(field("error", 2, Type.TYPE_BOOL, Label.LABEL_OPTIONAL))
                .addField(field("values", 3, Type.TYPE_SINT64, Label.LABEL_REPEATED).toBuilder()
                        .setOptions(FieldOptions.newBuilder().setPacked(true)).build())
                .addField(field("child", 4, Type.TYPE_MESSAGE, Label.LABEL_REPEATED).toBuilder()
                        .setTypeName(".test.pkg.Sample.Child").build())
                .addField(field("kind", 5, Type.TYPE_ENUM, Label.LABEL_OPTIONAL).toBuilder()
                        .setTypeName(".test.pkg.Sample.Kind").build())
                .addField(field("kinds", 6, Type.TYPE_ENUM, Label.LABEL_REPEATED).toBuilder()
                        .setTypeName(".test.pkg.Sample.Kind").build())
                .addNestedType(DescriptorProto.newBuilder().setName("Child")
                        .addField(field("name", 1, Type.TYPE_STRING, Label.LABEL_OPTIONAL)))
                .addEnumType(EnumDescriptorProto.newBuilder().setName("Kind")
                        .addValue(EnumValueDescriptorProto.newBuilder().setName("KIND_A").setNumber(7))
                        .addValue(EnumValueDescriptorProto.newBuilder().setName("KIND_B").setNumber(9))
                        .addValue(EnumValueDescriptorProto.newBuilder().setName("KIND_ALIAS").setNumber(7)))
                .build();
        assertEquals(1, ProtozeroGenerator.generate(file(message), out, "com.example"));
        String source = Files.readString(out.resolve("com/example/test/pkg/Sample.java"));
        assertTrue(source.contains("package com.example.test.pkg;"));
        assertTrue(source.contains("public void setCount(long value)"));
        assertTrue(source.contains("public void setValuesPacked(long[] values, int offset, int count)"));
        assertTrue(source.contains("appendPackedSInt64s(VALUES_FIELD_NUMBER"));
        assertTrue(source.contains("public com.example.test.pkg.Sample.Child addChild()"));
        assertTrue(source.contains("public enum Kind {"));
        assertTrue(source.contains("KIND_A,\n"));
        assertTrue(source.contains("case 0 -> 7;\n") && source.contains("case 1 -> 9;\n") && source.contains("case 2 -> 7;\n"),
                "number() maps each ordinal to its wire number");
        assertTrue(source.contains("case 7 -> KIND_A;"));
        assertTrue(!source.contains("case 7 -> KIND_ALIAS;"), "an alias's number maps to the first name");
        assertTrue(source.contains("public void setKind(com.example.test.pkg.Sample.Kind value) {\n"
                + "        appendInt32(KIND_FIELD_NUMBER, value.number());"), "writes the number, not the ordinal");
        assertTrue(source.contains("public void addKinds(com.example.test.pkg.Sample.Kind value)"));
        assertTrue(source.contains("public int kind()"), "the raw number, for values a newer .proto added");
        assertTrue(source.contains("public com.example.test.pkg.Sample.Kind kindEnum() {\n"
                + "            return com.example.test.pkg.Sample.Kind.forNumber(kind());"));
        assertTrue(source.contains("public long countValue()"), "decoder getters do not hide count(int)");
        assertTrue(source.contains("public boolean hasErrorField()"), "nor hasError()");
        assertTrue(source.contains("public static final class Child extends dev.ffmtrace.protozero.Message"));
    }

    @Test
    void rejectsWhatTheRuntimeCannotDecode() {
        DescriptorProto group = DescriptorProto.newBuilder().setName("G")
                .addField(field("g", 1, Type.TYPE_GROUP, Label.LABEL_OPTIONAL)).build();
        assertThrows(IllegalStateException.class, () -> ProtozeroGenerator.generate(file(group), out, "x"));
        DescriptorProto big = DescriptorProto.newBuilder().setName("B")
                .addField(field("b", 40000, Type.TYPE_INT32, Label.LABEL_OPTIONAL)).build();
        assertThrows(IllegalStateException.class, () -> ProtozeroGenerator.generate(file(big), out, "x"));
        DescriptorProto clash = DescriptorProto.newBuilder().setName("C")
                .addNestedType(DescriptorProto.newBuilder().setName("Decoder")).build();
        assertThrows(IllegalStateException.class, () -> ProtozeroGenerator.generate(file(clash), out, "x"));
    }
}
