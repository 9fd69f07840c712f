package dev.ffmtrace.cli;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;

/**
 * The bytes of a {@code Trace} on their way to a file: counts the packets (top-level
 * field 1) as they pass, so a command reports what a reader of the file will count,
 * whatever the service adds to the trace; and names the file in its write errors.
 */
final class TraceStream extends FilterOutputStream {
    private static final int PACKET_TAG = (1 << 3) | 2;
    private static final int WIRE_VARINT = 0;
    private static final int WIRE_FIXED64 = 1;
    private static final int WIRE_LENGTH_DELIMITED = 2;
    private static final int WIRE_FIXED32 = 5;

    private enum Expect { TAG, VARINT_VALUE, LENGTH }

    /** How errors name the file: the option and the path. */
    private final String file;
    private long packets;
    private long bytes;
    private Expect expect = Expect.TAG;
    private long varint;
    private int shift;
    /** Bytes of the current field's payload still to pass. */
    private long payloadLeft;

    TraceStream(OutputStream out, String file) {
        super(out);
        this.file = file;
    }

    /** The bytes written so far. */
    long bytes() {
        return bytes;
    }

    /** The packets written so far. */
    long packets() {
        return packets;
    }

    @Override
    public void write(int b) throws IOException {
        write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] bytes, int offset, int length) throws IOException {
        try {
            out.write(bytes, offset, length);
        } catch (IOException e) {
            throw named(e);
        }
        scan(bytes, offset, length);
    }

    @Override
    public void flush() throws IOException {
        try {
            out.flush();
        } catch (IOException e) {
            throw named(e);
        }
    }

    @Override
    public void close() throws IOException {
        try {
            out.close();
        } catch (IOException e) {
            throw named(e);
        }
    }

    private IOException named(IOException e) {
        return new IOException(file + ": " + ErrorReporter.describe(e), e);
    }

    private void scan(byte[] bytes, int offset, int length) {
        this.bytes += length;
        int end = offset + length;
        int i = offset;
        while (i < end) {
            if (payloadLeft > 0) {
                int skipped = (int) Math.min(payloadLeft, end - i);
                payloadLeft -= skipped;
                i += skipped;
                continue;
            }
            byte b = bytes[i++];
            varint |= (long) (b & 0x7f) << shift;
            shift += 7;
            if ((b & 0x80) != 0) {
                continue;
            }
            long value = varint;
            varint = 0;
            shift = 0;
            expect = switch (expect) {
                case TAG -> field(value);
                case LENGTH -> {
                    payloadLeft = value;
                    yield Expect.TAG;
                }
                case VARINT_VALUE -> Expect.TAG;
            };
        }
    }

    private Expect field(long tag) {
        if (tag == PACKET_TAG) {
            packets++;
        }
        return switch ((int) (tag & 7)) {
            case WIRE_VARINT -> Expect.VARINT_VALUE;
            case WIRE_LENGTH_DELIMITED -> Expect.LENGTH;
            case WIRE_FIXED64 -> {
                payloadLeft = 8;
                yield Expect.TAG;
            }
            case WIRE_FIXED32 -> {
                payloadLeft = 4;
                yield Expect.TAG;
            }
            default -> Expect.TAG;
        };
    }
}
