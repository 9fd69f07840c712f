package dev.ffmtrace.memory;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The value layouts every shared structure in ffmtrace is read and written with.
 *
 * <p>All of Perfetto's shared layouts are little-endian. The {@code *_UNALIGNED}
 * layouts are for plain access at any offset (packet bytes, chunk headers copied
 * out of a producer's memory); the aligned ones are for the atomics in
 * {@link AtomicSegment}, which need natural alignment.
 */
public final class Layouts {
    public static final ValueLayout.OfByte BYTE = ValueLayout.JAVA_BYTE;
    public static final ValueLayout.OfShort SHORT_UNALIGNED =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    public static final ValueLayout.OfInt INT_UNALIGNED =
            ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    public static final ValueLayout.OfLong LONG_UNALIGNED =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    public static final ValueLayout.OfFloat FLOAT_UNALIGNED =
            ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    public static final ValueLayout.OfDouble DOUBLE_UNALIGNED =
            ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    public static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT.withOrder(ByteOrder.LITTLE_ENDIAN);
    public static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT.withOrder(ByteOrder.LITTLE_ENDIAN);
    public static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN);

    private Layouts() {
    }
}
