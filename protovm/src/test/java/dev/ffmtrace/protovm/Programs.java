package dev.ffmtrace.protovm;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;

/** Encodes VmPrograms and test-schema messages by hand, as scripts/protovm-golden does. */
final class Programs {
    static final int SRC = 1;
    static final int DST = 2;

    private Programs() {
    }

    static byte[] varint(long value) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        while ((value & ~0x7fL) != 0) {
            out.write((int) (value & 0x7f) | 0x80);
            value >>>= 7;
        }
        out.write((int) value);
        return out.toByteArray();
    }

    static byte[] cat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] part : parts) {
            out.writeBytes(part);
        }
        return out.toByteArray();
    }

    static byte[] fVarint(int fieldId, long value) {
        return cat(varint((long) fieldId << 3), varint(value));
    }

    static byte[] fBytes(int fieldId, byte[] value) {
        return cat(varint((long) fieldId << 3 | 2), varint(value.length), value);
    }

    static byte[] field(int fieldId) {
        return fVarint(1, fieldId);
    }

    static byte[] repeated(int fieldId) {
        return cat(fVarint(1, fieldId), fVarint(5, 1));
    }

    static byte[] select(int cursor, boolean create, byte[][] path, byte[]... nested) {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        if (cursor != 0) {
            body.writeBytes(fVarint(1, cursor));
        }
        for (byte[] component : path) {
            body.writeBytes(fBytes(2, component));
        }
        if (create) {
            body.writeBytes(fVarint(3, 1));
        }
        return instruction(1, body.toByteArray(), nested);
    }

    static byte[] op(String name, byte[]... nested) {
        int id = switch (name) {
            case "merge" -> 3;
            case "set" -> 4;
            case "del" -> 5;
            default -> throw new IllegalArgumentException(name);
        };
        return instruction(id, new byte[0], nested);
    }

    static byte[] regLoad(int register) {
        return instruction(2, fVarint(2, register));
    }

    static byte[] instruction(int opField, byte[] body, byte[]... nested) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(fBytes(opField, body));
        for (byte[] n : nested) {
            out.writeBytes(fBytes(7, n));
        }
        return out.toByteArray();
    }

    static MemorySegment program(byte[]... instructions) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(fVarint(1, 1));
        for (byte[] instruction : instructions) {
            out.writeBytes(fBytes(2, instruction));
        }
        return MemorySegment.ofArray(out.toByteArray());
    }

    static byte[][] path(byte[]... components) {
        return components;
    }
}
