package dev.ffmtrace.protovm;

import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.Message;
import dev.ffmtrace.protozero.MessageFactory;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * A producer's ProtoVM program in the bytes Perfetto's service runs and writes to the trace.
 * traced keeps the program as a field of the data source's descriptor, parsed into its cppgen
 * {@code VmProgram} classes, and hands the VM that object re-serialised: known fields in
 * declaration order and each singular one once, unknown fields after them as they came,
 * varints minimal, a nested message's size in one byte where protozero compacts it. Doing the
 * same makes two encodings of one program share a VM, as they do in traced, and makes the
 * {@code protovms} packet's program traced's byte for byte.
 *
 * <p>cppgen's rules are kept wherever they are deterministic: a singular message seen again
 * is parsed again into the same object (its scalars stay, its repeated and unknown fields
 * restart); a message written with a scalar wire type is parsed as empty; a scalar written as
 * fixed32 or fixed64 is read from it; parsing stops quietly at the first malformed byte and
 * keeps what came before. Where the C++ reads garbage (a scalar written length-delimited
 * becomes a pointer's value), the program is refused; so is one nesting messages deeper than
 * protozero's writer here goes ({@link Message#MAX_NESTING_DEPTH}: 30 levels of nested
 * instructions), which the C++ would re-serialise.
 */
public final class CanonicalProgram {
    private enum Kind { UINT32, BOOL, ENUM, MESSAGE, REPEATED }

    private record Field(int id, Kind kind, int type) {
    }

    private static final int PROGRAM = 0;
    private static final int INSTRUCTION = 1;
    private static final int SELECT = 2;
    private static final int PATH_COMPONENT = 3;
    private static final int REG_LOAD = 4;
    private static final int MERGE = 5;
    private static final int EMPTY = 6;

    /** vm_program.proto's messages, fields in declaration order (cppgen's serialisation order). */
    private static final Field[][] TYPES = {
            {scalar(1, Kind.UINT32), message(2, Kind.REPEATED, INSTRUCTION)},
            {message(1, Kind.MESSAGE, SELECT), message(2, Kind.MESSAGE, REG_LOAD),
                    message(3, Kind.MESSAGE, MERGE), message(4, Kind.MESSAGE, EMPTY),
                    message(5, Kind.MESSAGE, EMPTY), scalar(6, Kind.ENUM),
                    message(7, Kind.REPEATED, INSTRUCTION)},
            {scalar(1, Kind.ENUM), message(2, Kind.REPEATED, PATH_COMPONENT), scalar(3, Kind.BOOL)},
            {scalar(1, Kind.UINT32), scalar(2, Kind.UINT32), scalar(3, Kind.UINT32),
                    scalar(5, Kind.BOOL), scalar(6, Kind.UINT32), scalar(7, Kind.UINT32)},
            {scalar(1, Kind.ENUM), scalar(2, Kind.UINT32)},
            {scalar(1, Kind.BOOL), scalar(2, Kind.BOOL)},
            {},
    };

    private static final class Untyped extends Message {
    }

    private static final MessageFactory<Untyped> UNTYPED = MessageFactory.of(Untyped::new);

    private CanonicalProgram() {
    }

    private static Field scalar(int id, Kind kind) {
        return new Field(id, kind, -1);
    }

    private static Field message(int id, Kind kind, int type) {
        return new Field(id, kind, type);
    }

    /**
     * The program {@code program} (a serialised {@code VmProgram}) as traced runs it.
     *
     * @throws IllegalArgumentException if traced would read garbage from it, or it nests
     *                                  messages deeper than {@link Message#MAX_NESTING_DEPTH}
     */
    public static byte[] of(MemorySegment program) {
        return of(List.of(program));
    }

    /**
     * The program a descriptor carrying the program field once per element of
     * {@code occurrences} holds, as traced runs it: each occurrence is parsed into the same
     * object, in order.
     *
     * @throws IllegalArgumentException as {@link #of(MemorySegment)}
     */
    public static byte[] of(List<MemorySegment> occurrences) {
        Node root = new Node(PROGRAM);
        for (MemorySegment occurrence : occurrences) {
            // Copied first: the bytes may come from memory a producer can still change.
            MemorySegment copy = MemorySegment.ofArray(occurrence.toArray(ValueLayout.JAVA_BYTE));
            parse(root, copy, 0, copy.byteSize(), 0);
        }
        HeapBuffered<Untyped> out = new HeapBuffered<>(UNTYPED);
        write(root, out.get());
        return out.toByteArray();
    }

    /** One parsed message: cppgen's object, with its has-bits and unknown bytes. */
    private static final class Node {
        final int type;
        final long[] values;
        final boolean[] present;
        final Node[] messages;
        final List<List<Node>> lists;
        final ByteArrayOutputStream unknown = new ByteArrayOutputStream();

        Node(int type) {
            this.type = type;
            int fields = TYPES[type].length;
            this.values = new long[fields];
            this.present = new boolean[fields];
            this.messages = new Node[fields];
            this.lists = new ArrayList<>(fields);
            for (int i = 0; i < fields; i++) {
                lists.add(new ArrayList<>());
            }
        }
    }

    private static void parse(Node node, MemorySegment data, long offset, long length, int depth) {
        if (depth > Message.MAX_NESTING_DEPTH) {
            throw new IllegalArgumentException("ProtoVM program nests messages more than "
                    + Message.MAX_NESTING_DEPTH + " deep");
        }
        Field[] fields = TYPES[node.type];
        for (List<Node> list : node.lists) {
            list.clear();
        }
        node.unknown.reset();
        WireReader reader = new WireReader().reset(data, offset, length);
        while (reader.next()) {
            int index = indexOf(fields, reader.id());
            if (index < 0) {
                appendUnknown(reader, node.unknown);
                continue;
            }
            Field field = fields[index];
            node.present[index] = true;
            switch (field.kind()) {
                case MESSAGE -> {
                    if (node.messages[index] == null) {
                        node.messages[index] = new Node(field.type());
                    }
                    parseNested(node.messages[index], reader, depth);
                }
                case REPEATED -> {
                    Node element = new Node(field.type());
                    node.lists.get(index).add(element);
                    parseNested(element, reader, depth);
                }
                default -> node.values[index] = scalarValue(field, reader);
            }
        }
    }

    /** A message field with a scalar wire type is parsed from no bytes, as cppgen's is. */
    private static void parseNested(Node child, WireReader reader, int depth) {
        if (reader.isLengthDelimited()) {
            parse(child, reader.segment(), reader.payloadOffset(), reader.payloadLength(), depth + 1);
        } else {
            parse(child, reader.segment(), 0, 0, depth + 1);
        }
    }

    private static long scalarValue(Field field, WireReader reader) {
        if (reader.isLengthDelimited()) {
            throw new IllegalArgumentException("ProtoVM program: field " + field.id()
                    + " is a scalar but written length-delimited (traced would read a pointer)");
        }
        long value = reader.value();
        return switch (field.kind()) {
            case UINT32 -> value & 0xFFFF_FFFFL;
            case BOOL -> value != 0 ? 1 : 0;
            default -> (int) value; // an enum is an int32, sign-extended when written
        };
    }

    private static int indexOf(Field[] fields, int id) {
        for (int i = 0; i < fields.length; i++) {
            if (fields[i].id() == id) {
                return i;
            }
        }
        return -1;
    }

    /** protozero's {@code Field::SerializeAndAppendTo}: the field re-encoded, varints minimal. */
    private static void appendUnknown(WireReader reader, ByteArrayOutputStream out) {
        putVarInt(out, (long) reader.id() << 3 | reader.type());
        switch (reader.type()) {
            case WireReader.VARINT -> putVarInt(out, reader.value());
            case WireReader.FIXED32 -> putLittleEndian(out, reader.value(), Integer.BYTES);
            case WireReader.FIXED64 -> putLittleEndian(out, reader.value(), Long.BYTES);
            default -> {
                putVarInt(out, reader.payloadLength());
                out.writeBytes(reader.segment().asSlice(reader.payloadOffset(), reader.payloadLength())
                        .toArray(ValueLayout.JAVA_BYTE));
            }
        }
    }

    private static void putVarInt(ByteArrayOutputStream out, long value) {
        while ((value & ~0x7FL) != 0) {
            out.write((int) (value & 0x7F) | 0x80);
            value >>>= 7;
        }
        out.write((int) value);
    }

    private static void putLittleEndian(ByteArrayOutputStream out, long value, int bytes) {
        for (int i = 0; i < bytes; i++) {
            out.write((int) (value >>> (8 * i)) & 0xFF);
        }
    }

    private static void write(Node node, Message target) {
        Field[] fields = TYPES[node.type];
        for (int i = 0; i < fields.length; i++) {
            Field field = fields[i];
            switch (field.kind()) {
                case MESSAGE -> {
                    if (node.present[i]) {
                        write(node.messages[i], target.beginNestedMessage(field.id(), UNTYPED));
                    }
                }
                case REPEATED -> {
                    for (Node element : node.lists.get(i)) {
                        write(element, target.beginNestedMessage(field.id(), UNTYPED));
                    }
                }
                default -> {
                    if (node.present[i]) {
                        target.appendVarInt(field.id(), node.values[i]);
                    }
                }
            }
        }
        byte[] unknown = node.unknown.toByteArray();
        target.appendRawProtoBytes(unknown, 0, unknown.length);
    }
}
