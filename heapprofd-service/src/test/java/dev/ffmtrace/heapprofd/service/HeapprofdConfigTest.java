package dev.ffmtrace.heapprofd.service;

import dev.ffmtrace.heapprofd.wire.ClientConfiguration;
import dev.ffmtrace.perfetto.protos.HeapprofdConfig.Decoder;
import org.junit.jupiter.api.Test;
import perfetto.protos.HeapprofdConfigOuterClass.HeapprofdConfig;

import java.lang.foreign.MemorySegment;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A session's heapprofd_config as the clients' configuration, ring size and filter. */
class HeapprofdConfigTest {
    private static Decoder decoded(HeapprofdConfig config) {
        Decoder decoder = new Decoder();
        decoder.reset(MemorySegment.ofArray(config.toByteArray()));
        return decoder;
    }

    @Test
    void theClientsGetTheSessionsIntervalsHeapsAndBlocking() {
        ClientConfiguration configuration = HeapprofdDataSource.clientConfiguration(decoded(HeapprofdConfig.newBuilder()
                .setSamplingIntervalBytes(512).addHeaps("libc.malloc").addHeaps("java.ffm").addHeaps("")
                .addHeapSamplingIntervals(0).addHeapSamplingIntervals(64).setBlockClient(true)
                .setBlockClientTimeoutUs(250).build()));
        assertEquals(List.of(new ClientConfiguration.Heap("libc.malloc", 512), new ClientConfiguration.Heap("java.ffm", 64)),
                configuration.heaps(), "an interval of 0 is the default one; an empty name is no heap");
        assertEquals(512, configuration.defaultInterval());
        assertTrue(configuration.blockClient());
        assertEquals(250, configuration.blockClientTimeoutUs());
        assertFalse(configuration.allHeaps());
    }

    @Test
    void withoutHeapsOrIntervalPerfettosDefaultsApply() {
        ClientConfiguration none = HeapprofdDataSource.clientConfiguration(decoded(HeapprofdConfig.getDefaultInstance()));
        assertEquals(List.of(new ClientConfiguration.Heap("libc.malloc", 4096)), none.heaps());
        ClientConfiguration all = HeapprofdDataSource.clientConfiguration(decoded(HeapprofdConfig.newBuilder()
                .setAllHeaps(true).setSamplingIntervalBytes(8).build()));
        assertEquals(List.of(), all.heaps());
        assertEquals(8, all.samplingInterval("anything"));
    }

    @Test
    void theRingIsThePowerOfTwoAtOrAboveShmemSizeBytesWithinBounds() {
        assertEquals(8 << 20, HeapprofdDataSource.ringSize(0));
        assertEquals(1 << 20, HeapprofdDataSource.ringSize(1 << 20));
        assertEquals(2 << 20, HeapprofdDataSource.ringSize((1 << 20) + 1));
        assertEquals(4096, HeapprofdDataSource.ringSize(1));
        assertEquals(1L << 30, HeapprofdDataSource.ringSize(Long.MAX_VALUE));
    }

    @Test
    void pidsAndCommandLinesChooseTheClients() {
        HeapprofdService.ClientFilter filter = HeapprofdDataSource.filter(decoded(HeapprofdConfig.newBuilder()
                .addPid(42).addProcessCmdline("heapprofd_pattern").addProcessCmdline("/usr/bin/app").build()));
        assertTrue(filter.accepts(42, "anything"));
        assertTrue(filter.accepts(7, "/some/dir/heapprofd_pattern"));
        assertTrue(filter.accepts(7, "/usr/bin/app"));
        assertFalse(filter.accepts(7, "/usr/bin/other"));
        assertFalse(filter.accepts(7, ""));
        HeapprofdService.ClientFilter everyone = HeapprofdDataSource.filter(decoded(HeapprofdConfig.getDefaultInstance()));
        assertTrue(everyone.accepts(7, ""));
        assertTrue(HeapprofdDataSource.filter(decoded(HeapprofdConfig.newBuilder().addPid(42).setAll(true).build()))
                .accepts(7, "x"));
    }
}
