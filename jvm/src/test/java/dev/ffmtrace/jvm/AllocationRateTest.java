package dev.ffmtrace.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ffmtrace.perfetto.protos.CounterDescriptor;
import dev.ffmtrace.tracing.trackevent.TraceFileWriter;
import dev.ffmtrace.tracing.trackevent.TrackEventReader;
import java.io.ByteArrayOutputStream;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Allocation weights summed per second, written once settled, with 0 after a second with none. */
class AllocationRateTest {
    private static final long S = 1_000_000_000L;

    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final JvmPacketWriter writer = new JvmPacketWriter(new TraceFileWriter(bytes, 2));
    private final JvmTrack track = JvmTrack.counter(JvmTrack.process(0, 42, "p"), "rate",
            CounterDescriptor.Unit.UNIT_SIZE_BYTES);
    private final AllocationRate rate = new AllocationRate();

    private List<String> written() {
        return JvmTraceContent.decode(bytes.toByteArray()).events().events().stream()
                .filter(e -> e.counterValue() != null)
                .map(e -> e.timestamp() / S + "s=" + e.counterValue()).toList();
    }

    @Test
    void eachSecondIsWrittenOnceALaterSecondHasSettledIt() {
        rate.add(10 * S + 1, 100, writer, track);
        rate.add(11 * S, 50, writer, track);
        rate.add(10 * S + 999_999_999, 20, writer, track);
        assertEquals(List.of(), written(), "nothing is settled yet");
        rate.add((11 + AllocationRate.SETTLE_SECONDS) * S, 7, writer, track);
        assertEquals(List.of("10s=120"), written(), "second 11 can still get samples");
        rate.add((12 + AllocationRate.SETTLE_SECONDS) * S, 3, writer, track);
        assertEquals(List.of("10s=120", "11s=50", "12s=0"), written());
        rate.finish(writer, track);
        assertEquals(List.of("10s=120", "11s=50", "12s=0", "16s=7", "17s=3", "18s=0"), written());
    }

    @Test
    void aSampleForASecondAlreadyWrittenIsCountedNotWritten() {
        rate.add(10 * S, 100, writer, track);
        rate.add(20 * S, 100, writer, track);
        rate.add(10 * S + 5, 1, writer, track);
        rate.add(11 * S, 1, writer, track);
        assertEquals(2, rate.lateSamples());
        rate.finish(writer, track);
        assertEquals(List.of("10s=100", "11s=0", "20s=100", "21s=0"), written());
        assertEquals(0, TrackEventReader.read(java.lang.foreign.MemorySegment.ofArray(bytes.toByteArray()))
                .undecodable());
    }
}
