package dev.ffmtrace.cli.stress;

import dev.ffmtrace.perfetto.protos.TestEvent;
import dev.ffmtrace.perfetto.protos.TracePacket;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;

/**
 * The stress packet, which Java writers here and the C stress producer
 * ({@code native/src/stress_producer.c}) both write: a {@code TracePacket} whose
 * {@code for_testing} ({@code TestEvent}) says who wrote it and proves its content.
 *
 * <pre>
 * TracePacket
 *   timestamp (8)             CLOCK_BOOTTIME ns (not checked)
 *   for_testing (900)         TestEvent
 *     str (1)                 "producer/writer", decimal: the writer's identity
 *     counter (3)             the writer's sequence number: 0, 1, 2, ... one per packet
 *                             attempted, written or dropped for want of a chunk
 *     seq_value (2)           FNV-1a 32 of str, counter (8 bytes little-endian) and the
 *                             payload's strings in pre-order
 *     is_last (4)             the last packet of a writer that stopped cleanly
 *     payload (5)             TestPayload { str (1)*, nested (2)* TestPayload }
 * </pre>
 *
 * <p>Pre-order: a TestPayload's own {@code str} strings in order, then each of its
 * {@code nested} payloads, recursively, in order. Field order on the wire is free.
 *
 * <p>The size mix: <em>small</em> packets hold one string of 8–48 bytes; <em>medium</em>
 * 2–4 strings of 100–900 bytes in all, one of them nested; <em>large</em> 2–16 KiB in
 * strings of at most 1 KiB over payloads nested two deep, so that on 4 KiB pages they
 * span chunks and have their nested size fields patched.
 */
public final class StressPacket {
    static final int FNV_OFFSET_BASIS = 0x811C9DC5;
    static final int FNV_PRIME = 0x01000193;
    private static final int FILLER_SIZE = 64 * 1024;
    private static final int MAX_STRING = 1024;

    /** A size class and its weight in the mix. */
    public enum Size { SMALL, MEDIUM, LARGE }

    /** The weights of small, medium and large packets, e.g. "small:70,medium:25,large:5". */
    public record Mix(int small, int medium, int large) {
        public static final Mix DEFAULT = new Mix(70, 25, 5);

        public Mix {
            if (small < 0 || medium < 0 || large < 0 || small + medium + large == 0) {
                throw new IllegalArgumentException("size weights must be non-negative and not all 0");
            }
        }

        /** Parses "small:70,medium:25,large:5"; classes left out weigh 0. */
        public static Mix parse(String text) {
            int[] weights = new int[3];
            for (String part : text.split(",")) {
                String[] pair = part.trim().split(":");
                if (pair.length != 2) {
                    throw new IllegalArgumentException("expected class:weight, got \"" + part + "\"");
                }
                Size size;
                try {
                    size = Size.valueOf(pair[0].trim().toUpperCase(java.util.Locale.ROOT));
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("no size class \"" + pair[0] + "\" (small, medium, large)");
                }
                try {
                    weights[size.ordinal()] = Integer.parseInt(pair[1].trim());
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("not a weight: \"" + pair[1] + "\"");
                }
            }
            return new Mix(weights[0], weights[1], weights[2]);
        }

        Size pick(SplittableRandom random) {
            int roll = random.nextInt(small + medium + large);
            return roll < small ? Size.SMALL : roll < small + medium ? Size.MEDIUM : Size.LARGE;
        }

        @Override
        public String toString() {
            return "small:" + small + ",medium:" + medium + ",large:" + large;
        }
    }

    private StressPacket() {
    }

    /** The writer identity a packet's {@code str} carries. */
    public static String writerName(int producer, int writer) {
        return producer + "/" + writer;
    }

    static int fnv(int hash, MemorySegment bytes) {
        for (long i = 0; i < bytes.byteSize(); i++) {
            hash = (hash ^ (bytes.get(ValueLayout.JAVA_BYTE, i) & 0xFF)) * FNV_PRIME;
        }
        return hash;
    }

    static int fnv(int hash, byte[] bytes) {
        for (byte b : bytes) {
            hash = (hash ^ (b & 0xFF)) * FNV_PRIME;
        }
        return hash;
    }

    static int fnvLong(int hash, long value) {
        for (int i = 0; i < 8; i++) {
            hash = (hash ^ (int) ((value >>> (8 * i)) & 0xFF)) * FNV_PRIME;
        }
        return hash;
    }

    /** The checksum of a packet's identity and counter, to be continued over its payload strings. */
    static int headerChecksum(byte[] name, long counter) {
        return fnvLong(fnv(FNV_OFFSET_BASIS, name), counter);
    }

    /**
     * Writes stress packets for one writer: its identity, a filler of printable bytes drawn
     * once from the seed, and the size mix. Not thread-safe: one per writer.
     */
    public static final class Generator {
        private final String name;
        private final byte[] nameBytes;
        private final Mix mix;
        private final SplittableRandom random;
        private final MemorySegment filler;
        private int checksum;

        public Generator(int producer, int writer, Mix mix, long seed) {
            this.name = writerName(producer, writer);
            this.nameBytes = name.getBytes(StandardCharsets.US_ASCII);
            this.mix = mix;
            this.random = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + producer * 1_000_003L + writer);
            byte[] bytes = new byte[FILLER_SIZE];
            for (int i = 0; i < bytes.length; i++) {
                bytes[i] = (byte) (' ' + random.nextInt(95));
            }
            this.filler = MemorySegment.ofArray(bytes);
        }

        /** Writes packet number {@code counter} into {@code packet}. */
        public void write(TracePacket packet, long counter, long timestamp, boolean last) {
            packet.setTimestamp(timestamp);
            TestEvent event = packet.setForTesting();
            event.setStr(name);
            event.setCounter(counter);
            checksum = headerChecksum(nameBytes, counter);
            TestEvent.TestPayload payload = event.setPayload();
            switch (mix.pick(random)) {
                case SMALL -> addString(payload, 8 + random.nextInt(41));
                case MEDIUM -> {
                    int total = 100 + random.nextInt(801);
                    int strings = 2 + random.nextInt(3);
                    for (int i = 0; i < strings - 1; i++) {
                        addString(payload, total / strings);
                    }
                    TestEvent.TestPayload nested = payload.addNested();
                    nested.setRemainingNestingDepth(0);
                    addString(nested, total - (strings - 1) * (total / strings));
                }
                case LARGE -> addTree(payload, 2048 + random.nextInt(14 * 1024 + 1), 2);
            }
            // Pre-order is the order written: every payload's strings precede its nested ones.
            event.setSeqValue(checksum);
            if (last) {
                event.setIsLast(true);
            }
        }

        /** {@code bytes} of strings under {@code payload}, split between it and nested payloads {@code depth} deep. */
        private void addTree(TestEvent.TestPayload payload, int bytes, int depth) {
            payload.setRemainingNestingDepth(depth);
            int own = depth == 0 ? bytes : bytes / 3;
            for (int left = own; left > 0; left -= MAX_STRING) {
                addString(payload, Math.min(left, MAX_STRING));
            }
            if (depth > 0) {
                int rest = bytes - own;
                addTree(payload.addNested(), rest / 2, depth - 1);
                addTree(payload.addNested(), rest - rest / 2, depth - 1);
            }
        }

        private void addString(TestEvent.TestPayload payload, int length) {
            MemorySegment text = filler.asSlice(random.nextInt(FILLER_SIZE - length + 1), length);
            payload.addStr(text);
            checksum = fnv(checksum, text);
        }
    }
}
