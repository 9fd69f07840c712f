package dev.ffmtrace.jvm;

import java.util.ArrayList;
import java.util.List;

/**
 * The debug annotations of the next event a {@link JvmPacketWriter} writes: built by the
 * caller, handed to the write, then cleared for reuse.
 */
final class Args {
    /** An annotation's value: a {@code Long}, {@code Double}, {@code Boolean} or {@code String}. */
    record Arg(String name, Object value) {
    }

    private final List<Arg> args = new ArrayList<>();

    Args clear() {
        args.clear();
        return this;
    }

    Args add(String name, long value) {
        args.add(new Arg(name, value));
        return this;
    }

    Args add(String name, double value) {
        args.add(new Arg(name, value));
        return this;
    }

    Args add(String name, boolean value) {
        args.add(new Arg(name, value));
        return this;
    }

    /** Adds {@code value} unless it is null: JFR leaves absent values null. */
    Args add(String name, String value) {
        if (value != null) {
            args.add(new Arg(name, value));
        }
        return this;
    }

    List<Arg> list() {
        return args;
    }
}
