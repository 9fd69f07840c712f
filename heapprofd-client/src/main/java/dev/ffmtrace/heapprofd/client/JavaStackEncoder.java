package dev.ffmtrace.heapprofd.client;

import dev.ffmtrace.heapprofd.wire.AllocMetadata;
import dev.ffmtrace.protozero.ProtoWire;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The calling thread's Java stack as a Malloc record's payload, in the encoding
 * {@link AllocMetadata#ARCH_JAVA} describes: frames interned per connection, each defined
 * in the first record that uses it. A definition counts only once its record is written
 * ({@link #commit}); a record that was not written takes its definitions back
 * ({@link #rollback}), so the service never sees an id it was not told. Not thread-safe:
 * the client uses it under its lock. Only sampled allocations walk the stack.
 */
final class JavaStackEncoder {
    /** The deepest stack recorded: the innermost frames, where the allocation was made. */
    static final int MAX_FRAMES = 64;

    private static final StackWalker WALKER = StackWalker.getInstance();
    /** The client's own classes: their frames are where the allocation was reported, not made. */
    private static final List<String> CLIENT_CLASSES = List.of(JavaStackEncoder.class.getName(),
            HeapprofdClient.class.getName(), ProfiledArena.class.getName());
    private static final String FFM_PACKAGE = "java.lang.foreign.";

    private final Map<String, Integer> ids = new HashMap<>();
    private final String[] newInThisRecord = new String[MAX_FRAMES];
    private int newCount;
    private byte[] bytes = new byte[1024];
    private int length;

    /** Encodes the caller's stack, the client's own frames left out; returns the payload's length. */
    int encode() {
        length = 0;
        newCount = 0;
        WALKER.walk(this::encodeFrames);
        return length;
    }

    /** The payload of the last {@link #encode}. */
    byte[] bytes() {
        return bytes;
    }

    /** The record was written: its definitions stand. */
    void commit() {
        newCount = 0;
    }

    /** The record was not written: its definitions are forgotten, to be made again. */
    void rollback() {
        for (int i = 0; i < newCount; i++) {
            ids.remove(newInThisRecord[i]);
        }
        newCount = 0;
    }

    private Void encodeFrames(Stream<StackWalker.StackFrame> frames) {
        frames.dropWhile(frame -> isClientFrame(frame.getClassName()))
                .limit(MAX_FRAMES)
                .forEach(this::encodeFrame);
        return null;
    }

    /** A frame of the client, or of the FFM allocator methods that lead into a {@link ProfiledArena}. */
    private static boolean isClientFrame(String className) {
        if (className.startsWith(FFM_PACKAGE)) {
            return true;
        }
        for (String client : CLIENT_CLASSES) {
            if (className.startsWith(client) && (className.length() == client.length()
                    || className.charAt(client.length()) == '$')) {
                return true;
            }
        }
        return false;
    }

    private void encodeFrame(StackWalker.StackFrame frame) {
        String name = frame.getClassName() + "." + frame.getMethodName() + "(" + frame.getFileName() + ":"
                + frame.getLineNumber() + ")";
        Integer id = ids.get(name);
        if (id != null) {
            putVarInt((long) id << 1);
            return;
        }
        int newId = ids.size();
        ids.put(name, newId);
        newInThisRecord[newCount++] = name;
        byte[] utf8 = name.getBytes(StandardCharsets.UTF_8);
        putVarInt(((long) newId << 1) | 1);
        putVarInt(utf8.length);
        ensure(utf8.length);
        System.arraycopy(utf8, 0, bytes, length, utf8.length);
        length += utf8.length;
    }

    private void putVarInt(long value) {
        ensure(10);
        length = ProtoWire.writeVarInt(bytes, length, value);
    }

    private void ensure(int more) {
        if (bytes.length - length < more) {
            bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, length + more));
        }
    }
}
