package dev.ffmtrace.tracing.service;

import java.io.ByteArrayOutputStream;

/**
 * Re-encodes a {@link TestPacket} with every length as a minimal varint, so packets
 * whose nested sizes were written in 1 or 4 bytes compare by content.
 */
final class WireCanonical {
    private WireCanonical() {
    }

    static byte[] of(byte[] packet) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        encode(packet, 0, packet.length, out);
        return out.toByteArray();
    }

    private static void encode(byte[] b, int from, int to, ByteArrayOutputStream out) {
        int[] pos = {from};
        while (pos[0] < to) {
            long tag = varint(b, pos);
            if ((tag & 7) != 2) {
                throw new AssertionError("TestPacket has only length-delimited fields, found tag " + tag);
            }
            int length = (int) varint(b, pos);
            writeVarint(tag, out);
            if ((tag >>> 3) == 2) {
                ByteArrayOutputStream nested = new ByteArrayOutputStream();
                encode(b, pos[0], pos[0] + length, nested);
                writeVarint(nested.size(), out);
                out.writeBytes(nested.toByteArray());
            } else {
                writeVarint(length, out);
                out.write(b, pos[0], length);
            }
            pos[0] += length;
        }
    }

    private static long varint(byte[] b, int[] pos) {
        long value = 0;
        for (int shift = 0; ; shift += 7) {
            byte next = b[pos[0]++];
            value |= (long) (next & 0x7f) << shift;
            if (next >= 0) {
                return value;
            }
        }
    }

    private static void writeVarint(long value, ByteArrayOutputStream out) {
        while ((value & ~0x7fL) != 0) {
            out.write((int) (value & 0x7f) | 0x80);
            value >>>= 7;
        }
        out.write((int) value);
    }
}
