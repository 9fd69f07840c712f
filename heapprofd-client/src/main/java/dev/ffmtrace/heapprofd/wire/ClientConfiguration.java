package dev.ffmtrace.heapprofd.wire;

import dev.ffmtrace.memory.Layouts;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

import static dev.ffmtrace.heapprofd.wire.HeapprofdWireDescriptor.*;

/**
 * What heapprofd tells a client when it connects: the sampling intervals of its heaps, and
 * how to behave when the ring is full. Sent as {@value #SIZE} raw bytes over the control
 * socket, Perfetto's {@code ClientConfiguration} byte for byte ({@link #encodeTo}, {@link #decode}).
 *
 * @param defaultInterval the interval of every heap not listed, when {@code allHeaps}
 * @param blockClientTimeoutUs how long a blocking client retries a full ring; 0 for ever
 * @param adaptiveSamplingShmemThreshold below this many free bytes in the ring, a sampled
 *                                       allocation doubles its heap's interval; 0 never
 * @param adaptiveSamplingMaxSamplingIntervalBytes the interval adaptive sampling stops at; 0 no limit
 * @param heaps the heaps to profile by name, at most {@value #MAX_HEAPS}
 * @param blockClient whether a client waits for room in a full ring rather than giving up
 * @param disableForkTeardown whether a forked child keeps profiling
 * @param disableVforkDetection whether vfork children are not told apart
 * @param allHeaps whether heaps not listed are profiled too, at {@code defaultInterval}
 */
public record ClientConfiguration(long defaultInterval, long blockClientTimeoutUs, long adaptiveSamplingShmemThreshold,
                                  long adaptiveSamplingMaxSamplingIntervalBytes, List<Heap> heaps, boolean blockClient,
                                  boolean disableForkTeardown, boolean disableVforkDetection, boolean allHeaps) {
    /** The size of the encoded configuration. */
    public static final int SIZE = CLIENT_CONFIGURATION_SIZE;
    /** The most heaps a configuration lists. */
    public static final int MAX_HEAPS = CONFIG_MAX_HEAPS;
    /** The longest heap name, in bytes: its field has room for one more, the terminating NUL. */
    public static final int MAX_HEAP_NAME_BYTES = HEAP_NAME_CAPACITY - 1;

    /**
     * A heap to profile and its sampling interval (0: not profiled).
     *
     * @param name at most {@value ClientConfiguration#MAX_HEAP_NAME_BYTES} bytes of UTF-8, no NUL
     */
    public record Heap(String name, long interval) {
        /** Checks the name fits its field. */
        public Heap {
            checkHeapName(name);
        }
    }

    /** Checks the heaps fit the encoding and copies them. */
    public ClientConfiguration {
        heaps = List.copyOf(heaps);
        if (heaps.size() > MAX_HEAPS) {
            throw new IllegalArgumentException("at most " + MAX_HEAPS + " heaps, not " + heaps.size());
        }
    }

    /** Checks that {@code name} fits a heap name field: non-empty UTF-8 of at most 63 bytes, without NUL. */
    static byte[] checkHeapName(String name) {
        Objects.requireNonNull(name, "name");
        byte[] bytes = name.getBytes(StandardCharsets.UTF_8);
        if (bytes.length == 0 || bytes.length > MAX_HEAP_NAME_BYTES || name.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("a heap name is 1 to " + MAX_HEAP_NAME_BYTES
                    + " bytes of UTF-8 without NUL: \"" + name + "\"");
        }
        return bytes;
    }

    /**
     * The sampling interval of heap {@code name}, as Perfetto's client looks it up: the
     * first listed heap of that name; else {@code defaultInterval} with {@code allHeaps};
     * else 0, not profiled.
     */
    public long samplingInterval(String name) {
        for (Heap heap : heaps) {
            if (heap.name().equals(name)) {
                return heap.interval();
            }
        }
        return allHeaps ? defaultInterval : 0;
    }

    /** Writes the {@value #SIZE} bytes at {@code offset}, zeros in every byte no field uses. */
    public void encodeTo(MemorySegment dst, long offset) {
        MemorySegment out = dst.asSlice(offset, SIZE);
        out.fill((byte) 0);
        out.set(Layouts.LONG_UNALIGNED, CONFIG_DEFAULT_INTERVAL_OFFSET, defaultInterval);
        out.set(Layouts.LONG_UNALIGNED, CONFIG_BLOCK_CLIENT_TIMEOUT_US_OFFSET, blockClientTimeoutUs);
        out.set(Layouts.LONG_UNALIGNED, CONFIG_NUM_HEAPS_OFFSET, heaps.size());
        out.set(Layouts.LONG_UNALIGNED, CONFIG_ADAPTIVE_THRESHOLD_OFFSET, adaptiveSamplingShmemThreshold);
        out.set(Layouts.LONG_UNALIGNED, CONFIG_ADAPTIVE_MAX_INTERVAL_OFFSET, adaptiveSamplingMaxSamplingIntervalBytes);
        for (int i = 0; i < heaps.size(); i++) {
            long heap = CONFIG_HEAPS_OFFSET + (long) CONFIG_HEAP_SIZE * i;
            byte[] name = heaps.get(i).name().getBytes(StandardCharsets.UTF_8);
            MemorySegment.copy(name, 0, out, ValueLayout.JAVA_BYTE, heap, name.length);
            out.set(Layouts.LONG_UNALIGNED, heap + CONFIG_HEAP_INTERVAL_OFFSET, heaps.get(i).interval());
        }
        out.set(ValueLayout.JAVA_BOOLEAN, CONFIG_BLOCK_CLIENT_OFFSET, blockClient);
        out.set(ValueLayout.JAVA_BOOLEAN, CONFIG_DISABLE_FORK_TEARDOWN_OFFSET, disableForkTeardown);
        out.set(ValueLayout.JAVA_BOOLEAN, CONFIG_DISABLE_VFORK_DETECTION_OFFSET, disableVforkDetection);
        out.set(ValueLayout.JAVA_BOOLEAN, CONFIG_ALL_HEAPS_OFFSET, allHeaps);
    }

    /**
     * Reads a configuration from {@value #SIZE} bytes at {@code offset}, copied first, so
     * bytes that change while they are read cannot make it inconsistent.
     *
     * @throws WireFormatException if fewer than {@value #SIZE} bytes are there, more than
     *                             {@value #MAX_HEAPS} heaps are listed, a listed heap's name
     *                             is empty, unterminated or not UTF-8, or a bool is neither 0 nor 1
     */
    public static ClientConfiguration decode(MemorySegment src, long offset) throws WireFormatException {
        if (offset < 0 || src.byteSize() - offset < SIZE) {
            throw new WireFormatException("a client configuration is " + SIZE + " bytes, not "
                    + Math.max(0, src.byteSize() - Math.max(0, offset)));
        }
        MemorySegment in = MemorySegment.ofArray(new byte[SIZE]);
        MemorySegment.copy(src, offset, in, 0, SIZE);
        long numHeaps = in.get(Layouts.LONG_UNALIGNED, CONFIG_NUM_HEAPS_OFFSET);
        if (numHeaps < 0 || numHeaps > MAX_HEAPS) {
            throw new WireFormatException("num_heaps " + Long.toUnsignedString(numHeaps) + " is more than " + MAX_HEAPS);
        }
        List<Heap> heaps = new ArrayList<>();
        for (int i = 0; i < numHeaps; i++) {
            long heap = CONFIG_HEAPS_OFFSET + (long) CONFIG_HEAP_SIZE * i;
            heaps.add(new Heap(cString(in, heap, "heaps[" + i + "].name"),
                    in.get(Layouts.LONG_UNALIGNED, heap + CONFIG_HEAP_INTERVAL_OFFSET)));
        }
        return new ClientConfiguration(in.get(Layouts.LONG_UNALIGNED, CONFIG_DEFAULT_INTERVAL_OFFSET),
                in.get(Layouts.LONG_UNALIGNED, CONFIG_BLOCK_CLIENT_TIMEOUT_US_OFFSET),
                in.get(Layouts.LONG_UNALIGNED, CONFIG_ADAPTIVE_THRESHOLD_OFFSET),
                in.get(Layouts.LONG_UNALIGNED, CONFIG_ADAPTIVE_MAX_INTERVAL_OFFSET), heaps,
                bool(in, CONFIG_BLOCK_CLIENT_OFFSET, "block_client"),
                bool(in, CONFIG_DISABLE_FORK_TEARDOWN_OFFSET, "disable_fork_teardown"),
                bool(in, CONFIG_DISABLE_VFORK_DETECTION_OFFSET, "disable_vfork_detection"),
                bool(in, CONFIG_ALL_HEAPS_OFFSET, "all_heaps"));
    }

    /** The NUL-terminated heap name of at most 63 bytes at {@code offset}. */
    static String cString(MemorySegment in, long offset, String field) throws WireFormatException {
        int length = 0;
        while (length < HEAP_NAME_CAPACITY && in.get(ValueLayout.JAVA_BYTE, offset + length) != 0) {
            length++;
        }
        if (length == 0 || length == HEAP_NAME_CAPACITY) {
            throw new WireFormatException(field + " is " + (length == 0 ? "empty" : "not NUL-terminated"));
        }
        byte[] bytes = in.asSlice(offset, length).toArray(ValueLayout.JAVA_BYTE);
        String name = new String(bytes, StandardCharsets.UTF_8);
        if (!Arrays.equals(bytes, name.getBytes(StandardCharsets.UTF_8))) {
            throw new WireFormatException(field + " is not UTF-8");
        }
        return name;
    }

    private static boolean bool(MemorySegment in, long offset, String field) throws WireFormatException {
        byte value = in.get(ValueLayout.JAVA_BYTE, offset);
        if (value != 0 && value != 1) {
            throw new WireFormatException(field + " is " + (value & 0xFF) + ", not a bool");
        }
        return value == 1;
    }
}
