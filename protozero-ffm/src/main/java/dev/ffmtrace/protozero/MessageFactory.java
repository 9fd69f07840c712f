package dev.ffmtrace.protozero;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Creates the instances of one {@link Message} type that a root message's arena keeps
 * for reuse. Each factory has a small unique id the arena indexes by, so obtaining a
 * nested message is an array load, not a lookup.
 *
 * <p>Generated message classes hold one factory each in a {@code FACTORY} constant.
 *
 * @param <T> the message type
 */
public final class MessageFactory<T extends Message> {
    private static final AtomicInteger NEXT_ID = new AtomicInteger();

    private final Supplier<T> constructor;
    private final int id;

    private MessageFactory(Supplier<T> constructor) {
        this.constructor = constructor;
        this.id = NEXT_ID.getAndIncrement();
    }

    /** A factory for the type {@code constructor} creates; create one per type and keep it. */
    public static <T extends Message> MessageFactory<T> of(Supplier<T> constructor) {
        if (constructor == null) {
            throw new NullPointerException("constructor");
        }
        return new MessageFactory<>(constructor);
    }

    T create() {
        return constructor.get();
    }

    int id() {
        return id;
    }
}
