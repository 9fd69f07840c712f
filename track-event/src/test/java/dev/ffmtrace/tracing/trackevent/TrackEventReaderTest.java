package dev.ffmtrace.tracing.trackevent;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.protozero.HeapBuffered;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/** {@link TrackEventReader}'s count of data losses, as Perfetto's trace processor counts them. */
class TrackEventReaderTest {
    /**
     * traced's buffer flags the first packet it reads of every sequence (it cannot know
     * what came before): that is no loss. A flag on a later packet of the sequence is.
     */
    @Test
    void aFlagOnTheFirstPacketOfASequenceIsNoLossOnALaterOneItIs() {
        HeapBuffered<Trace> trace = new HeapBuffered<>(Trace.FACTORY);
        packet(trace, 1, 1);
        packet(trace, 2, 1);
        packet(trace, 1, 0);
        packet(trace, 2, 1 | 64);
        packet(trace, 1, 1 | 2);
        assertEquals(2, TrackEventReader.read(MemorySegment.ofArray(trace.toByteArray())).lossMarkers());
    }

    private static void packet(HeapBuffered<Trace> trace, int sequence, int previousPacketDropped) {
        TracePacket packet = trace.get().addPacket();
        packet.setTrustedPacketSequenceId(sequence);
        if (previousPacketDropped != 0) {
            packet.setPreviousPacketDropped(previousPacketDropped);
        }
    }
}
