package dev.ffmtrace.protozero;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Random and mutated input never makes the decoders throw. Each input is decoded from
 * a segment of exactly its size, so a read outside it would throw and fail the test.
 * The normal run decodes about 2.4 x 10^6 inputs (a few seconds); {@code -Dprotozero.fuzz.factor=N}
 * multiplies that.
 */
class DecoderFuzzTest {
    private static final int FACTOR = Integer.getInteger("protozero.fuzz.factor", 4);
    private static final int MUTATIONS_PER_SEED = 1500 * FACTOR;
    private static final int RANDOM_PER_TRY = 300 * FACTOR;

    private final ProtoDecoder[] decoders = new ProtoDecoder[9];
    private final DecoderTest.PacketDecoder typed = new DecoderTest.PacketDecoder();
    private final DecoderTest.EventDecoder event = new DecoderTest.EventDecoder();
    private final RepeatedScalarIterator scalars = new RepeatedScalarIterator();
    private final RepeatedFieldIterator fields = new RepeatedFieldIterator();

    DecoderFuzzTest() {
        for (int i = 0; i < decoders.length; i++) {
            decoders[i] = new ProtoDecoder();
        }
    }

    @Provide
    Arbitrary<byte[]> validMessages() {
        return WireConformanceTest.op(4).list().ofMaxSize(8).map(ops -> {
            HeapBuffered<WireConformanceTest.Root> buffered =
                    new HeapBuffered<>(WireConformanceTest.Root.FACTORY, 32, 256);
            WireConformanceTest.write(buffered.get(), ops);
            return buffered.toByteArray();
        });
    }

    @Property(tries = 200)
    void mutatedMessagesNeverThrow(@ForAll("validMessages") byte[] seed, @ForAll long randomSeed) {
        SplittableRandom random = new SplittableRandom(randomSeed);
        try (Arena arena = Arena.ofConfined()) {
            for (int i = 0; i < MUTATIONS_PER_SEED; i++) {
                decodeEverything(arena, mutate(seed, random));
            }
        }
    }

    @Property(tries = 1000)
    void randomBytesNeverThrow(@ForAll long randomSeed) {
        SplittableRandom random = new SplittableRandom(randomSeed);
        try (Arena arena = Arena.ofConfined()) {
            for (int i = 0; i < RANDOM_PER_TRY; i++) {
                byte[] bytes = new byte[random.nextInt(48)];
                random.nextBytes(bytes);
                decodeEverything(arena, bytes);
            }
        }
    }

    private static byte[] mutate(byte[] seed, SplittableRandom random) {
        byte[] b = seed.length == 0 ? new byte[] {(byte) random.nextInt()} : seed.clone();
        int edits = 1 + random.nextInt(4);
        for (int e = 0; e < edits; e++) {
            int at = random.nextInt(b.length);
            switch (random.nextInt(6)) {
                case 0 -> b[at] = (byte) random.nextInt();
                case 1 -> b[at] ^= (byte) (1 << random.nextInt(8));
                case 2 -> b = Arrays.copyOf(b, at);
                case 3 -> b[at] = (byte) 0xFF;
                case 4 -> {
                    byte[] grown = Arrays.copyOf(b, b.length + 12);
                    Arrays.fill(grown, b.length, grown.length, (byte) 0xFF);
                    b = grown;
                }
                default -> b[at] = (byte) (b[at] & 0x7F);
            }
            if (b.length == 0) {
                return b;
            }
        }
        return b;
    }

    private void decodeEverything(Arena arena, byte[] bytes) {
        MemorySegment exact = arena.allocate(Math.max(1, bytes.length)).asSlice(0, bytes.length);
        MemorySegment.copy(bytes, 0, exact, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, bytes.length);
        walk(exact, 0, bytes.length, 0);

        typed.reset(exact);
        typed.trackEvent(event);
        event.name();
        for (RepeatedScalarIterator it = typed.packedVarInts(scalars); it.next(); ) {
            it.value();
        }
        for (RepeatedScalarIterator it = typed.packedFixed32s(scalars); it.next(); ) {
            it.value();
        }
        for (RepeatedFieldIterator it = typed.strings(fields); it.next(); ) {
            assertTrue(it.field().offset() + it.field().length() <= bytes.length);
        }
    }

    /** Decodes every length-delimited field as a nested message too, to depth 8. */
    private void walk(MemorySegment segment, long offset, long length, int depth) {
        ProtoDecoder d = decoders[depth].reset(segment, offset, length);
        while (d.next()) {
            ProtoField f = d.field();
            assertTrue(f.id() > 0);
            if (f.wireType() == ProtoWire.WIRE_TYPE_LENGTH_DELIMITED) {
                assertTrue(f.offset() >= offset && f.offset() + f.length() <= offset + length);
                if (depth + 1 < decoders.length) {
                    walk(segment, f.offset(), f.length(), depth + 1);
                    d = decoders[depth];
                }
            }
        }
        assertTrue(d.bytesLeft() == 0 || d.hasError());
    }
}
