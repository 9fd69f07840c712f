package dev.ffmtrace.jvm;

import java.io.UncheckedIOException;
import java.util.List;
import java.util.function.LongFunction;

/**
 * The event a {@link JfrFileReader} is at, decoded on first use: an event of a type the
 * mapping ignores is skipped without reading a field. Values are kept unboxed by leaf; a
 * constant is kept as its key and looked up in the chunk's {@link JfrConstants} when
 * asked for. A value asked for as what it is not, or a record that ends before its
 * fields do, throws an unchecked exception: the mapping counts the event as malformed.
 */
final class JfrFileEvent implements JfrEventView {
    /** Every long of smaller magnitude is a double exactly. */
    private static final long EXACT_IN_DOUBLE = 1L << 53;
    private final JfrInput input;
    private final JfrConstants constants;
    private final LongFunction<String> pooledStrings;
    private final long clockStartNanos;
    private final long clockStartTicks;
    /** Ticks per nanosecond, as JFR's own converter divides. */
    private final double ticksPerNanosecond;
    private final boolean nanosecondTicks;
    private JfrFileEventType type;
    private int start;
    private int end;
    private boolean decoded;
    private long[] numbers = new long[16];
    private Object[] objects = new Object[16];

    /** {@code clock}: the header whose start ticks and nanoseconds convert this event's ticks. */
    JfrFileEvent(JfrInput input, JfrConstants constants, JfrChunkHeader clock) {
        this.input = input;
        this.constants = constants;
        this.pooledStrings = constants::pooledString;
        this.clockStartNanos = clock.startNanos();
        this.clockStartTicks = clock.startTicks();
        this.ticksPerNanosecond = (double) clock.ticksPerSecond() / 1_000_000_000L;
        this.nanosecondTicks = ticksPerNanosecond == 1.0;
    }

    /** Shows the event of {@code type} whose fields are the chunk's bytes {@code [start, end)}. */
    void at(JfrFileEventType type, int start, int end) {
        this.type = type;
        this.start = start;
        this.end = end;
        this.decoded = false;
    }

    @Override
    public JfrEventType type() {
        return type;
    }

    @Override
    public long startNanos() {
        return nanos(number(0));
    }

    @Override
    public long endNanos() {
        long startTicks = number(0);
        return type.duration < 0 ? nanos(startTicks) : nanos(startTicks + numbers[type.duration]);
    }

    private long nanos(long ticks) {
        long sinceStart = ticks - clockStartTicks;
        // JFR's ticks are nanoseconds on most machines: then the division (JFR's own
        // arithmetic, kept for the same result) is by 1 and changes nothing under 2^53.
        if (nanosecondTicks && Math.abs(sinceStart) < EXACT_IN_DOUBLE) {
            return clockStartNanos + sinceStart;
        }
        return clockStartNanos + (long) (sinceStart / ticksPerNanosecond);
    }

    @Override
    public long longValue(int field) {
        long value = number(field);
        if (!type.unsigned[field]) {
            return switch (type.read[field]) {
                case JfrFileEventType.BYTE, JfrFileEventType.SHORT, JfrFileEventType.INT, JfrFileEventType.LONG -> value;
                default -> throw notA(field, "integral");
            };
        }
        return switch (type.read[field]) {
            case JfrFileEventType.BYTE -> value & 0xFFL;
            case JfrFileEventType.SHORT -> value & 0xFFFFL;
            case JfrFileEventType.INT -> value & 0xFFFF_FFFFL;
            case JfrFileEventType.LONG -> value;
            default -> throw notA(field, "integral");
        };
    }

    @Override
    public double doubleValue(int field) {
        long bits = number(field);
        return switch (type.read[field]) {
            case JfrFileEventType.FLOAT -> Float.intBitsToFloat((int) bits);
            case JfrFileEventType.DOUBLE -> Double.longBitsToDouble(bits);
            default -> throw notA(field, "floating-point");
        };
    }

    @Override
    public boolean booleanValue(int field) {
        long value = number(field);
        if (type.read[field] != JfrFileEventType.BOOLEAN) {
            throw notA(field, "boolean");
        }
        return value != 0;
    }

    @Override
    public String stringValue(int field) {
        long key = number(field);
        return switch (type.read[field]) {
            case JfrFileEventType.STRING -> constants.text(objects[field]);
            case JfrFileEventType.CONSTANT -> constants.string(type.field[field].typeId(), key);
            default -> throw notA(field, "string");
        };
    }

    @Override
    public String className(int field) {
        return constants.className(constant(field, JfrEventType.Kind.CLASS));
    }

    @Override
    public String methodName(int field) {
        return constants.methodName(constant(field, JfrEventType.Kind.METHOD));
    }

    @Override
    public JfrThread thread(int field) {
        return constants.thread(constant(field, JfrEventType.Kind.THREAD));
    }

    @Override
    public List<JavaFrame> stack(int field) {
        return constants.stack(constant(field, JfrEventType.Kind.STACK_TRACE));
    }

    private long constant(int field, JfrEventType.Kind kind) {
        long key = number(field);
        if (type.read[field] != JfrFileEventType.CONSTANT || type.kind(field) != kind) {
            throw notA(field, kind.name());
        }
        return key;
    }

    /** Leaf {@code field}'s number (or constant key), the event decoded first if it was not. */
    private long number(int field) {
        if (!decoded) {
            decode();
        }
        return numbers[field];
    }

    private void decode() {
        byte[] reads = type.read;
        if (numbers.length < reads.length) {
            numbers = new long[reads.length];
            objects = new Object[reads.length];
        }
        try {
            input.range(start, end);
            for (int i = 0; i < reads.length; i++) {
                switch (reads[i]) {
                    case JfrFileEventType.LONG, JfrFileEventType.CONSTANT -> numbers[i] = input.readLong();
                    case JfrFileEventType.INT -> numbers[i] = (int) input.readLong();
                    case JfrFileEventType.BOOLEAN -> numbers[i] = input.readByte() != 0 ? 1 : 0;
                    case JfrFileEventType.BYTE -> numbers[i] = input.readByte();
                    case JfrFileEventType.CHAR -> numbers[i] = (char) input.readLong();
                    case JfrFileEventType.SHORT -> numbers[i] = (short) input.readLong();
                    case JfrFileEventType.FLOAT -> numbers[i] = Float.floatToRawIntBits(input.readFloat());
                    case JfrFileEventType.DOUBLE -> numbers[i] = Double.doubleToRawLongBits(input.readDouble());
                    case JfrFileEventType.STRING -> objects[i] = input.readString(pooledStrings);
                    default -> objects[i] = constants.readField(input, type.field[i], 0);
                }
            }
        } catch (MalformedRecordingException e) {
            throw new UncheckedIOException("event " + type.name() + ": " + e.getMessage(), e);
        }
        decoded = true;
    }

    private IllegalArgumentException notA(int field, String what) {
        return new IllegalArgumentException("field " + type.fieldName(field) + " of " + type.name() + " is not "
                + what);
    }
}
