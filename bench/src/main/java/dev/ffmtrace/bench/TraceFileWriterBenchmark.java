package dev.ffmtrace.bench;

import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.tracing.trackevent.TraceFileWriter;
import java.io.OutputStream;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One packet the size of a slice's begin (timestamp, sequence flags, a TrackEvent with its
 * type, track and interned name) written through a {@link TraceFileWriter}, the sink of
 * traces made without a service ({@code ffmtrace jfr}), into a stream that keeps nothing:
 * the sink's own cost per packet (framing, copy, write).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class TraceFileWriterBenchmark {
    private final TraceFileWriter sink = new TraceFileWriter(OutputStream.nullOutputStream(), 2);
    // Fields rather than constants so the JIT cannot fold the inputs into the code.
    private long timestamp = 1_764_000_000_000_000_000L;
    private long trackUuid = 0x7234_5678_90ab_cdefL;

    @Benchmark
    public void slicePacket() {
        TracePacket packet = sink.newTracePacket();
        packet.setTimestamp(timestamp++);
        packet.setSequenceFlags(TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE.number());
        TrackEvent event = packet.setTrackEvent();
        event.setType(TrackEvent.Type.TYPE_SLICE_BEGIN);
        event.setTrackUuid(trackUuid);
        event.setNameIid(3);
        sink.finishTracePacket();
    }
}
