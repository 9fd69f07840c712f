package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.heapprofd.wire.AllocMetadata;
import dev.ffmtrace.protozero.VarIntReader;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads a Java stack payload ({@link AllocMetadata#ARCH_JAVA}) into frame names, keeping
 * the frames one connection defined. Everything in it is the client's, so untrusted: an
 * id used before it is defined, a redefinition, a length past the payload, a varint
 * that does not end or a stack past the limits {@link AllocMetadata} states makes the
 * whole stack unreadable (null), and nothing of it is kept.
 * One per connection, used by its thread only.
 */
final class JavaStackDecoder {

    /** The frames the connection defined, by id: made once, booked by every stack that uses them. */
    private final List<Frame> frames = new ArrayList<>();
    private final FrameBuffer stack = new FrameBuffer(AllocMetadata.MAX_JAVA_STACK_DEPTH);
    private final VarIntReader varint = new VarIntReader();

    /**
     * The frames of the stack in the {@code size} bytes at {@code offset}, innermost first,
     * in a buffer the next decode fills again; null if they are not a valid stack.
     */
    List<Frame> decode(MemorySegment payload, long offset, long size) {
        stack.clear();
        int definedBefore = frames.size();
        long at = offset;
        long end = offset + size;
        while (at < end) {
            at = varint.read(payload, at, end);
            if (at < 0 || stack.size() == AllocMetadata.MAX_JAVA_STACK_DEPTH) {
                return undo(definedBefore);
            }
            long id = varint.value() >>> 1;
            if ((varint.value() & 1) != 0) {
                at = varint.read(payload, at, end);
                long length = varint.value();
                // The length is unsigned: one of 2^63 or more, negative as a long, is too long too.
                if (at < 0 || id != frames.size() || frames.size() == AllocMetadata.MAX_JAVA_FRAMES
                        || Long.compareUnsigned(length, AllocMetadata.MAX_JAVA_FRAME_NAME_BYTES) > 0
                        || length > end - at) {
                    return undo(definedBefore);
                }
                frames.add(Frame.java(
                        new String(payload.asSlice(at, length).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8)));
                at += length;
            } else if (id >= frames.size()) {
                return undo(definedBefore);
            }
            stack.add(frames.get((int) id));
        }
        return stack;
    }

    /** Forgets the frames a rejected stack defined: the client takes them back too. */
    private List<Frame> undo(int definedBefore) {
        frames.subList(definedBefore, frames.size()).clear();
        return null;
    }
}
