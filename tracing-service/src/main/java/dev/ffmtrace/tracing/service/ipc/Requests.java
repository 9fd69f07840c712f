package dev.ffmtrace.tracing.service.ipc;

import dev.ffmtrace.ipc.Invocation;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.Message;
import dev.ffmtrace.protozero.MessageFactory;
import dev.ffmtrace.protozero.TypedProtoDecoder;
import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;
import java.util.function.Supplier;

/** Decoding a consumer's request and encoding a reply, the same way for every method of the port. */
final class Requests {
    private Requests() {
    }

    /** The invocation's arguments as a {@code D}, or null after failing it if they do not parse. */
    static <D extends TypedProtoDecoder> D parse(Invocation invocation, Supplier<D> decoder) {
        D parsed = decoder.get();
        parsed.reset(MemorySegment.ofArray(invocation.args()));
        if (parsed.hasError()) {
            invocation.fail();
            return null;
        }
        return parsed;
    }

    /** A reply message of {@code factory}'s type, as {@code fill} writes it. */
    static <M extends Message> byte[] message(MessageFactory<M> factory, Consumer<M> fill) {
        HeapBuffered<M> message = new HeapBuffered<>(factory);
        fill.accept(message.get());
        return message.toByteArray();
    }
}
