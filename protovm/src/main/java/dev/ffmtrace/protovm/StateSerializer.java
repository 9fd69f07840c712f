package dev.ffmtrace.protovm;

import dev.ffmtrace.protozero.Message;
import dev.ffmtrace.protozero.MessageFactory;

/**
 * Writes a state as Perfetto's {@code RwProto::Serialize} does: fields in ascending id, a
 * repeated field's elements in index or key order, scalars by their own wire type, blobs as
 * they were copied, a nested message through protozero (so its size field is compacted to
 * one byte exactly where protozero compacts it). A blob root is written raw; an empty node
 * writes nothing.
 */
final class StateSerializer {
    /** Nested messages carry no schema: one untyped message class serves every level. */
    private static final class Untyped extends Message {
    }

    private static final MessageFactory<Untyped> UNTYPED = MessageFactory.of(Untyped::new);

    private StateSerializer() {
    }

    /** Writes the state under {@code root} as the fields of {@code target}. */
    static void write(StateNode root, Message target) {
        if (root.kind == StateNode.BYTES) {
            target.appendRawProtoBytes(root.blob(), 0, root.blobLength);
        } else if (root.kind == StateNode.MESSAGE) {
            writeFields(root.entries, target);
        }
    }

    private static void writeFields(EntryMap fields, Message target) {
        for (int i = 0; i < fields.size(); i++) {
            EntryMap.Entry field = fields.at(i);
            writeField((int) field.key, field.value, target);
        }
    }

    private static void writeField(int fieldId, StateNode node, Message target) {
        switch (node.kind) {
            case StateNode.BYTES -> target.appendBytes(fieldId, node.blob(), 0, node.blobLength);
            case StateNode.SCALAR -> {
                if (node.wireType == WireReader.FIXED32) {
                    target.appendFixed32(fieldId, (int) node.scalar);
                } else if (node.wireType == WireReader.FIXED64) {
                    target.appendFixed64(fieldId, node.scalar);
                } else {
                    target.appendVarInt(fieldId, node.scalar);
                }
            }
            case StateNode.MESSAGE -> writeFields(node.entries, target.beginNestedMessage(fieldId, UNTYPED));
            case StateNode.INDEXED, StateNode.MAPPED -> {
                for (int i = 0; i < node.entries.size(); i++) {
                    writeField(fieldId, node.entries.at(i).value, target);
                }
            }
            default -> {
            }
        }
    }
}
