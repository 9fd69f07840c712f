package dev.ffmtrace.heapprofd.wire;

import dev.ffmtrace.memory.Layouts;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class ClientConfigurationTest {
    private static MemorySegment encoded(ClientConfiguration configuration) {
        MemorySegment bytes = MemorySegment.ofArray(new byte[ClientConfiguration.SIZE]);
        configuration.encodeTo(bytes, 0);
        return bytes;
    }

    @Test
    void aHeapsIntervalIsItsListedOneElseTheDefaultWithAllHeapsElseNone() {
        ClientConfiguration listed = HeapprofdWireGoldenTest.sampleConfiguration();
        assertEquals(1024, listed.samplingInterval("java.ffm"));
        assertEquals(0, listed.samplingInterval("other"), "not listed and not all heaps: not profiled");
        ClientConfiguration all = new ClientConfiguration(8192, 0, 0, 0, listed.heaps(), false, false, false, true);
        assertEquals(4096, all.samplingInterval("libc.malloc"));
        assertEquals(8192, all.samplingInterval("other"));
    }

    @Test
    void aConfigurationThatCannotBeRightIsRefused() {
        MemorySegment bytes = encoded(HeapprofdWireGoldenTest.sampleConfiguration());
        assertEquals("a client configuration is 4656 bytes, not 4655", assertThrows(WireFormatException.class,
                () -> ClientConfiguration.decode(bytes.asSlice(1), 0)).getMessage());
        bytes.set(Layouts.LONG_UNALIGNED, 16, 65);
        assertEquals("num_heaps 65 is more than 64",
                assertThrows(WireFormatException.class, () -> ClientConfiguration.decode(bytes, 0)).getMessage());
        bytes.set(Layouts.LONG_UNALIGNED, 16, -1);
        assertEquals("num_heaps 18446744073709551615 is more than 64",
                assertThrows(WireFormatException.class, () -> ClientConfiguration.decode(bytes, 0)).getMessage());
        bytes.set(Layouts.LONG_UNALIGNED, 16, 3);
        assertEquals("heaps[2].name is empty",
                assertThrows(WireFormatException.class, () -> ClientConfiguration.decode(bytes, 0)).getMessage());
        bytes.set(Layouts.LONG_UNALIGNED, 16, 2);
        bytes.asSlice(40 + 72, 64).fill((byte) 'x');
        assertEquals("heaps[1].name is not NUL-terminated",
                assertThrows(WireFormatException.class, () -> ClientConfiguration.decode(bytes, 0)).getMessage());
        MemorySegment bool = encoded(HeapprofdWireGoldenTest.sampleConfiguration());
        bool.set(ValueLayout.JAVA_BYTE, 4651, (byte) 2);
        assertEquals("all_heaps is 2, not a bool",
                assertThrows(WireFormatException.class, () -> ClientConfiguration.decode(bool, 0)).getMessage());
    }

    @Test
    void heapsMustFitTheirFields() {
        assertThrows(IllegalArgumentException.class, () -> new ClientConfiguration.Heap("x".repeat(64), 1));
        assertThrows(IllegalArgumentException.class, () -> new ClientConfiguration.Heap("", 1));
        assertThrows(IllegalArgumentException.class, () -> new ClientConfiguration.Heap("a\0b", 1));
        assertEquals(63, new ClientConfiguration.Heap("x".repeat(63), 1).name().length());
        List<ClientConfiguration.Heap> tooMany = java.util.Collections.nCopies(65, new ClientConfiguration.Heap("h", 1));
        assertThrows(IllegalArgumentException.class,
                () -> new ClientConfiguration(1, 0, 0, 0, tooMany, false, false, false, false));
    }
}
