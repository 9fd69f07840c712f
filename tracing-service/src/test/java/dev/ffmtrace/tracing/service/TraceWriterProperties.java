package dev.ffmtrace.tracing.service;

import static dev.ffmtrace.tracing.smb.abi.SharedMemoryAbiDescriptor.chunksPerLayout;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ffmtrace.tracing.service.InProcessService.ReadPacket;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.SharedMemoryArbiter;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.time.Duration;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

/**
 * Random packets (empty to several chunks, nested up to 4 deep) through random page
 * sizes and layouts: reassembling the committed chunks, with the patches applied,
 * yields exactly the packets written.
 */
class TraceWriterProperties {
    record PacketSpec(int size, int depth) {
    }

    @Provide
    Arbitrary<List<PacketSpec>> packets() {
        Arbitrary<Integer> size = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(3, Arbitraries.integers().between(0, 64)),
                net.jqwik.api.Tuple.of(1, Arbitraries.integers().between(0, 40_000)));
        return Combinators.combine(size, Arbitraries.integers().between(0, 4)).as(PacketSpec::new)
                .list().ofMinSize(1).ofMaxSize(60);
    }

    @Property(tries = 60)
    void reassembledPacketsEqualThoseWritten(@ForAll @IntRange(min = 1, max = 16) int pagesOf4k,
                                             @ForAll @IntRange(min = 1, max = 5) int layout,
                                             @ForAll("packets") List<PacketSpec> specs) {
        int pageSize = pagesOf4k * 4096;
        try (InProcessService service = new InProcessService(32 * pageSize, pageSize, 64 << 20)) {
            SharedMemoryArbiter arbiter = new SharedMemoryArbiter(service.abi.segment(), service.abi.pageSize(), chunksPerLayout(layout), service, Duration.ofSeconds(10));
            TraceWriter<TestPacket> writer = arbiter.createTraceWriter(0, BufferExhaustedPolicy.STALL, new TestPacket());
            for (int i = 0; i < specs.size(); i++) {
                TraceWriterTest.write(writer.newTracePacket(), TraceWriterTest.pattern(specs.get(i).size(), i), specs.get(i).depth());
                if (i % 3 == 0) {
                    writer.finishTracePacket();
                }
            }
            writer.flush();
            List<ReadPacket> read = service.readAll();
            assertEquals(specs.size(), read.size());
            for (int i = 0; i < specs.size(); i++) {
                byte[] expected = TraceWriterTest.contiguous(TraceWriterTest.pattern(specs.get(i).size(), i), specs.get(i).depth());
                assertArrayEquals(WireCanonical.of(expected), WireCanonical.of(read.get(i).bytes()), "packet " + i);
                assertEquals(0, read.get(i).droppedReasons());
            }
            assertEquals(0, service.patchesRejected);
        }
    }
}
