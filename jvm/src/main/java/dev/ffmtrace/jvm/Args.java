package dev.ffmtrace.jvm;

import java.util.Arrays;

/**
 * The debug annotations of the next event a {@link JvmPacketWriter} writes: built by the
 * caller, handed to the write, then cleared for reuse. Values are kept unboxed in
 * parallel arrays, so filling them allocates nothing once they have grown.
 */
final class Args {
    enum Kind { LONG, DOUBLE, BOOLEAN, STRING }

    private String[] names = new String[8];
    private Kind[] kinds = new Kind[8];
    private long[] numbers = new long[8];
    private String[] strings = new String[8];
    private int size;

    Args clear() {
        Arrays.fill(strings, 0, size, null);
        size = 0;
        return this;
    }

    Args add(String name, long value) {
        int at = next(name, Kind.LONG);
        numbers[at] = value;
        return this;
    }

    Args add(String name, double value) {
        int at = next(name, Kind.DOUBLE);
        numbers[at] = Double.doubleToRawLongBits(value);
        return this;
    }

    Args add(String name, boolean value) {
        int at = next(name, Kind.BOOLEAN);
        numbers[at] = value ? 1 : 0;
        return this;
    }

    /** Adds {@code value} unless it is null: JFR leaves absent values null. */
    Args add(String name, String value) {
        if (value != null) {
            strings[next(name, Kind.STRING)] = value;
        }
        return this;
    }

    /** A copy, for annotations kept beyond the next {@link #clear()}. */
    Args copy() {
        Args copy = new Args();
        copy.names = names.clone();
        copy.kinds = kinds.clone();
        copy.numbers = numbers.clone();
        copy.strings = strings.clone();
        copy.size = size;
        return copy;
    }

    int size() {
        return size;
    }

    String name(int index) {
        return names[index];
    }

    Kind kind(int index) {
        return kinds[index];
    }

    long longValue(int index) {
        return numbers[index];
    }

    double doubleValue(int index) {
        return Double.longBitsToDouble(numbers[index]);
    }

    boolean booleanValue(int index) {
        return numbers[index] != 0;
    }

    String stringValue(int index) {
        return strings[index];
    }

    private int next(String name, Kind kind) {
        if (size == names.length) {
            int grown = size * 2;
            names = Arrays.copyOf(names, grown);
            kinds = Arrays.copyOf(kinds, grown);
            numbers = Arrays.copyOf(numbers, grown);
            strings = Arrays.copyOf(strings, grown);
        }
        names[size] = name;
        kinds[size] = kind;
        return size++;
    }
}
