package dev.ffmtrace.protozero;

import java.util.Arrays;

/**
 * The nested message objects of one root message's tree.
 *
 * <p>Nested messages are strictly last-in-first-out: at any time at most one message
 * per nesting level is open. So one instance per (depth, type) is enough, and it is
 * reused every time a message of that type is begun at that depth. Instances are
 * created the first time a (depth, type) pair is seen; after that obtaining a nested
 * message allocates nothing.
 */
final class MessageArena {
    private final Message[][] byDepth = new Message[Message.MAX_NESTING_DEPTH + 1][];

    @SuppressWarnings("unchecked")
    <T extends Message> T obtain(int depth, MessageFactory<T> factory) {
        int id = factory.id();
        Message[] level = byDepth[depth];
        if (level != null && id < level.length) {
            Message message = level[id];
            if (message != null) {
                return (T) message;
            }
        }
        return create(depth, factory);
    }

    private <T extends Message> T create(int depth, MessageFactory<T> factory) {
        int id = factory.id();
        Message[] level = byDepth[depth];
        if (level == null) {
            level = new Message[Math.max(8, id + 1)];
        } else if (id >= level.length) {
            level = Arrays.copyOf(level, Math.max(id + 1, level.length * 2));
        }
        byDepth[depth] = level;
        T message = factory.create();
        if (message == null) {
            throw new IllegalStateException("message factory returned null");
        }
        level[id] = message;
        return message;
    }
}
