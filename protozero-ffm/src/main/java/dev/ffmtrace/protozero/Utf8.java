package dev.ffmtrace.protozero;

/**
 * UTF-8 length computation matching what protobuf-java writes: well-formed surrogate
 * pairs take 4 bytes, and an unpaired surrogate becomes the single byte {@code '?'}
 * (protobuf-java falls back to {@code String.getBytes(UTF_8)} for such strings, which
 * replaces each unpaired surrogate that way).
 */
final class Utf8 {
    static final byte UNPAIRED_SURROGATE_REPLACEMENT = '?';
    /** A char takes at most 3 UTF-8 bytes (a surrogate pair 4 for 2 chars): 42 chars stay under 128. */
    static final int MAX_CHARS_FOR_ONE_BYTE_LENGTH = ProtoWire.MAX_ONE_BYTE_MESSAGE_LENGTH / 3;

    private Utf8() {
    }

    private static final long NON_ASCII = 1L << 32;

    /**
     * Scans {@code value} once: the result holds the bytes it takes in UTF-8, read with
     * {@link #encodedLength(long)}, and whether it is all ASCII, read with {@link #isAscii}.
     */
    static long scan(String value) {
        int chars = value.length();
        int i = 0;
        while (i < chars && value.charAt(i) < 0x80) {
            i++;
        }
        if (i == chars) {
            return chars;
        }
        long length = i;
        for (; i < chars; i++) {
            char c = value.charAt(i);
            if (c < 0x80) {
                length += 1;
            } else if (c < 0x800) {
                length += 2;
            } else if (!Character.isSurrogate(c)) {
                length += 3;
            } else if (Character.isHighSurrogate(c) && i + 1 < chars
                    && Character.isLowSurrogate(value.charAt(i + 1))) {
                length += 4;
                i++;
            } else {
                length += 1;
            }
        }
        if (length > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("string too long for a protobuf field: "
                    + length + " bytes in UTF-8");
        }
        return length | NON_ASCII;
    }

    static int encodedLength(long scan) {
        return (int) scan;
    }

    static boolean isAscii(long scan) {
        return (scan & NON_ASCII) == 0;
    }
}
