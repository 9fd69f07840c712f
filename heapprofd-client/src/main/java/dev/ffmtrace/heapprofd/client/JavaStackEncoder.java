package dev.ffmtrace.heapprofd.client;

import dev.ffmtrace.heapprofd.wire.AllocMetadata;
import dev.ffmtrace.protozero.ProtoWire;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.stream.Stream;

/**
 * The calling thread's Java stack as a Malloc record's payload, in the encoding
 * {@link AllocMetadata#ARCH_JAVA} describes: frames interned per connection, each defined
 * in the first record that uses it. The client writes every record it encodes or stops
 * for good, so a definition is never lost to a record that was not written. Not
 * thread-safe: the client uses it under its lock. Only sampled allocations walk the stack.
 *
 * <p>A frame is known by its {@link StackTraceElement}'s class, method, file and line, the
 * parts of its name: the walk asks each frame for that element alone, which the JVM makes
 * in one step, and looks it up without building the name. Asking a frame for its method
 * name and then its line, as {@code StackFrame}'s getters do, costs the JVM two steps per
 * frame; building the name for every frame of every sample cost as much again. Only a
 * frame seen for the first time builds its name.
 *
 * <p>It keeps to the service's limits ({@link AllocMetadata#MAX_JAVA_FRAMES} and the
 * others): a name too long is cut, and once a connection has defined all the frames it may,
 * a stack ends before its first frame that is not yet defined.
 */
final class JavaStackEncoder {
    /** The deepest stack recorded: the innermost frames, where the allocation was made. */
    static final int MAX_FRAMES = 64;

    private static final StackWalker WALKER = StackWalker.getInstance();
    /** The client's own classes: their frames are where the allocation was reported, not made. */
    private static final List<String> CLIENT_CLASSES = List.of(JavaStackEncoder.class.getName(),
            HeapprofdClient.class.getName(), ProfiledArena.class.getName());
    private static final String FFM_PACKAGE = "java.lang.foreign.";

    final FrameTable frames = new FrameTable();
    /** Made once: a method reference made per walk would be an allocation per sample. */
    private final Function<Stream<StackWalker.StackFrame>, Void> encodeFrames = this::encodeFrames;
    private final Consumer<StackWalker.StackFrame> encodeFrame = this::encodeFrame;
    private byte[] bytes = new byte[1024];
    private int length;
    /** Whether this stack met a new frame after the connection had defined all it may. */
    private boolean ended;

    /** Encodes the caller's stack, the client's own frames left out; returns the payload's length. */
    int encode() {
        length = 0;
        ended = false;
        WALKER.walk(encodeFrames);
        return length;
    }

    /** The payload of the last {@link #encode}. */
    byte[] bytes() {
        return bytes;
    }

    private Void encodeFrames(Stream<StackWalker.StackFrame> stack) {
        stack.dropWhile(JavaStackEncoder::isClientFrame).limit(MAX_FRAMES).forEach(encodeFrame);
        return null;
    }

    /** A frame of the client, or of the FFM allocator methods that lead into a {@link ProfiledArena}. */
    private static boolean isClientFrame(StackWalker.StackFrame frame) {
        // The class name alone: the JVM has it without making the frame's element.
        String className = frame.getClassName();
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
        if (ended) {
            return;
        }
        StackTraceElement element = frame.toStackTraceElement();
        int id = frames.find(element);
        if (id >= 0) {
            putVarInt((long) id << 1);
            return;
        }
        if (frames.size() == AllocMetadata.MAX_JAVA_FRAMES) {
            ended = true;
            return;
        }
        id = frames.add(element);
        byte[] utf8 = (element.getClassName() + "." + element.getMethodName() + "(" + element.getFileName() + ":"
                + element.getLineNumber() + ")").getBytes(StandardCharsets.UTF_8);
        int nameLength = nameLength(utf8);
        putVarInt(((long) id << 1) | 1);
        putVarInt(nameLength);
        ensure(nameLength);
        System.arraycopy(utf8, 0, bytes, length, nameLength);
        length += nameLength;
    }

    /** The name's length, or the service's limit cut back to the start of a character. */
    static int nameLength(byte[] utf8) {
        if (utf8.length <= AllocMetadata.MAX_JAVA_FRAME_NAME_BYTES) {
            return utf8.length;
        }
        int cut = AllocMetadata.MAX_JAVA_FRAME_NAME_BYTES;
        while ((utf8[cut] & 0xC0) == 0x80) {
            cut--;
        }
        return cut;
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

    /**
     * The frames defined so far, by class, method, file and line: an open-addressing table
     * of the elements' strings, looked up with an element's own fields so that a known frame
     * costs no allocation. It keeps the strings only, not the element, which would hold its
     * class and keep it from being unloaded. Ids are given from 0 in order of definition.
     */
    static final class FrameTable {
        private String[] classNames = new String[256];
        private String[] methodNames = new String[256];
        private String[] fileNames = new String[256];
        private int[] lines = new int[256];
        private int[] ids = new int[256];
        private int size;

        /** The id of {@code element}'s frame, or -1 if it has none yet. */
        int find(StackTraceElement element) {
            int mask = ids.length - 1;
            for (int slot = hash(element) & mask; classNames[slot] != null; slot = (slot + 1) & mask) {
                if (lines[slot] == element.getLineNumber() && classNames[slot].equals(element.getClassName())
                        && methodNames[slot].equals(element.getMethodName())
                        && Objects.equals(fileNames[slot], element.getFileName())) {
                    return ids[slot];
                }
            }
            return -1;
        }

        /** Gives {@code element}'s frame, which {@link #find} did not know, the next id. */
        int add(StackTraceElement element) {
            if (2 * (size + 1) > ids.length) {
                grow();
            }
            put(element.getClassName(), element.getMethodName(), element.getFileName(), element.getLineNumber(), size);
            return size++;
        }

        int size() {
            return size;
        }

        private void put(String className, String methodName, String fileName, int line, int id) {
            int mask = ids.length - 1;
            int slot = hash(className, methodName, fileName, line) & mask;
            while (classNames[slot] != null) {
                slot = (slot + 1) & mask;
            }
            classNames[slot] = className;
            methodNames[slot] = methodName;
            fileNames[slot] = fileName;
            lines[slot] = line;
            ids[slot] = id;
        }

        private void grow() {
            String[] oldClassNames = classNames;
            String[] oldMethodNames = methodNames;
            String[] oldFileNames = fileNames;
            int[] oldLines = lines;
            int[] oldIds = ids;
            int capacity = 2 * oldIds.length;
            classNames = new String[capacity];
            methodNames = new String[capacity];
            fileNames = new String[capacity];
            lines = new int[capacity];
            ids = new int[capacity];
            for (int i = 0; i < oldIds.length; i++) {
                if (oldClassNames[i] != null) {
                    put(oldClassNames[i], oldMethodNames[i], oldFileNames[i], oldLines[i], oldIds[i]);
                }
            }
        }

        private static int hash(StackTraceElement element) {
            return hash(element.getClassName(), element.getMethodName(), element.getFileName(), element.getLineNumber());
        }

        /** The strings' own hashes, which each string keeps once computed. */
        private static int hash(String className, String methodName, String fileName, int line) {
            int h = className.hashCode();
            h = 31 * h + methodName.hashCode();
            h = 31 * h + Objects.hashCode(fileName);
            h = 31 * h + line;
            return h ^ (h >>> 16);
        }
    }
}
