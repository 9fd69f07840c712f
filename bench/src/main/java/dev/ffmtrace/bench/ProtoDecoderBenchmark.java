package dev.ffmtrace.bench;

import dev.ffmtrace.perfetto.protos.DebugAnnotation;
import dev.ffmtrace.perfetto.protos.EventName;
import dev.ffmtrace.perfetto.protos.InternedData;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TrackDescriptor;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.ProtoDecoder;
import dev.ffmtrace.protozero.ProtoField;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.protozero.RepeatedScalarIterator;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Decoding a track-event trace the way a trace reader does: a {@code Trace} of
 * {@value #PACKETS} packets (a track descriptor, interned event names and categories
 * every 100 packets, then slice begin/end events, a third with a debug annotation),
 * each packet's fields read through the generated decoders. Reported per packet; the
 * decoders are reused, so the loop allocates nothing (strings are read as views).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class ProtoDecoderBenchmark {
    private static final int PACKETS = 1000;

    private Arena arena;
    private MemorySegment trace;

    private final ProtoDecoder packets = new ProtoDecoder();
    private final TracePacket.Decoder packet = new TracePacket.Decoder();
    private final TrackEvent.Decoder event = new TrackEvent.Decoder();
    private final DebugAnnotation.Decoder annotation = new DebugAnnotation.Decoder();
    private final InternedData.Decoder interned = new InternedData.Decoder();
    private final EventName.Decoder eventName = new EventName.Decoder();
    private final TrackDescriptor.Decoder track = new TrackDescriptor.Decoder();
    private final RepeatedScalarIterator scalars = new RepeatedScalarIterator();
    private final RepeatedFieldIterator fields = new RepeatedFieldIterator();

    @Setup
    public void setUp() {
        HeapBuffered<Trace> buffered = new HeapBuffered<>(Trace.FACTORY);
        long timestamp = 1_000_000;
        for (int i = 0; i < PACKETS; i++) {
            TracePacket p = buffered.get().addPacket();
            p.setTimestamp(timestamp += 1000 + (i * 37) % 500);
            p.setTrustedPacketSequenceId(7);
            if (i % 100 == 0) {
                p.setSequenceFlags(TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED.number());
                InternedData data = p.setInternedData();
                for (int n = 1; n <= 8; n++) {
                    var name = data.addEventNames();
                    name.setIid(n);
                    name.setName("event_name_" + n);
                }
                var category = data.addEventCategories();
                category.setIid(1);
                category.setName("benchmark");
                continue;
            }
            if (i % 100 == 1) {
                TrackDescriptor descriptor = p.setTrackDescriptor();
                descriptor.setUuid(0x1234_5678L);
                descriptor.setName("worker thread");
                descriptor.setChildOrdering(TrackDescriptor.ChildTracksOrdering.CHRONOLOGICAL);
                continue;
            }
            p.setSequenceFlags(TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE.number());
            TrackEvent e = p.setTrackEvent();
            e.setType(i % 2 == 0 ? TrackEvent.Type.TYPE_SLICE_BEGIN : TrackEvent.Type.TYPE_SLICE_END);
            e.setTrackUuid(0x1234_5678L);
            e.addCategoryIids(1);
            e.setNameIid(1 + i % 8);
            if (i % 3 == 0) {
                DebugAnnotation a = e.addDebugAnnotations();
                a.setName("count");
                a.setIntValue(i);
            }
        }
        byte[] bytes = buffered.toByteArray();
        arena = Arena.ofShared();
        trace = arena.allocate(bytes.length);
        MemorySegment.copy(MemorySegment.ofArray(bytes), 0, trace, 0, bytes.length);
    }

    @TearDown
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    @OperationsPerInvocation(PACKETS)
    public long decodeTrackEventTrace() {
        long sum = 0;
        ProtoDecoder d = packets.reset(trace);
        while (d.nextWithId(Trace.PACKET_FIELD_NUMBER)) {
            packet.reset(d.field());
            sum += packet.timestamp() + packet.trustedPacketSequenceId() + packet.sequenceFlags();
            if (packet.trackEvent(event)) {
                sum += event.type() + event.trackUuid() + event.nameIid();
                for (RepeatedScalarIterator it = event.categoryIids(scalars); it.next(); ) {
                    sum += it.value();
                }
                for (RepeatedFieldIterator it = event.debugAnnotations(fields); it.next(); ) {
                    annotation.reset(it.field());
                    sum += annotation.intValue() + annotation.field(DebugAnnotation.NAME_FIELD_NUMBER).length();
                }
            } else if (packet.internedData(interned)) {
                for (RepeatedFieldIterator it = interned.eventNames(fields); it.next(); ) {
                    eventName.reset(it.field());
                    ProtoField name = eventName.field(EventName.NAME_FIELD_NUMBER);
                    sum += eventName.iid() + name.length();
                }
            } else if (packet.trackDescriptor(track)) {
                sum += track.uuid() + track.childOrdering();
            }
        }
        return d.hasError() ? -1 : sum;
    }
}
