package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.perfetto.protos.DebugAnnotation;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TracePacketDefaults;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.perfetto.protos.TrackEventDefaults;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.ProtoDecoder;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.tracing.buffer.ClientIdentity;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.trackevent.Category;
import dev.ffmtrace.tracing.trackevent.InternedName;
import dev.ffmtrace.tracing.trackevent.TraceClock;
import dev.ffmtrace.tracing.trackevent.TraceFileWriter;
import dev.ffmtrace.tracing.trackevent.Track;
import dev.ffmtrace.tracing.trackevent.TrackEventReader;
import dev.ffmtrace.tracing.trackevent.TrackEventWriter;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class TrackEventWriterTest {
    static final Category RPC = new Category("rpc");
    static final InternedName HANDLE = InternedName.of("HandleRequest");
    static final InternedName VALIDATE = InternedName.of("ValidateCart");
    static final InternedName CACHE_MISS = InternedName.of("cache miss");
    static final InternedName ITEMS = InternedName.of("items");

    TracingService service;
    TracingSession session;
    DataSource events;

    @BeforeEach
    void start() throws Exception {
        service = new TracingService();
        Producer producer = service.connectProducer(ProducerOptions.of("app").withIdentity(new ClientIdentity(Os.uid(), 1)).withSmbSize(1 << 20));
        events = producer.registerDataSource("track_event");
        HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
        config.get().addBuffers().setSizeKb(4096);
        config.get().addDataSources().setConfig().setName("track_event");
        session = service.startSession(SessionConfig.parse(MemorySegment.ofArray(config.toByteArray())));
    }

    @AfterEach
    void stop() {
        service.close();
    }

    private byte[] traceFile;

    /** The session's trace, read once (reading consumes the buffers). */
    byte[] traceFile() throws Exception {
        if (traceFile == null) {
            session.flush();
            ByteArrayOutputStream file = new ByteArrayOutputStream();
            session.writeTrace(file);
            traceFile = file.toByteArray();
        }
        return traceFile;
    }

    TrackEventReader.Decoded readBack() throws Exception {
        return TrackEventReader.read(MemorySegment.ofArray(traceFile()));
    }

    /** Every packet of the trace, as the protozero decoder sees it (for what TrackEventReader resolves away). */
    List<TracePacket.Decoder> rawPackets() throws Exception {
        Trace.Decoder trace = new Trace.Decoder();
        trace.reset(MemorySegment.ofArray(traceFile()));
        RepeatedFieldIterator packets = trace.packet(new RepeatedFieldIterator());
        List<TracePacket.Decoder> out = new ArrayList<>();
        while (packets.next()) {
            TracePacket.Decoder packet = new TracePacket.Decoder();
            packet.reset(packets.field());
            out.add(packet);
        }
        return out;
    }

    /** The producer's packets (not the service's clock snapshot and stats), each named by what it holds. */
    List<String> packetKinds() throws Exception {
        List<String> kinds = new ArrayList<>();
        for (TracePacket.Decoder packet : rawPackets()) {
            if (packet.trustedPacketSequenceId() == TracingSession.SERVICE_SEQUENCE_ID) {
                continue;
            }
            kinds.add(packet.hasTrackDescriptor() ? "descriptor"
                    : packet.hasTrackEvent() ? "event"
                    : packet.hasClockSnapshot() ? "clock"
                    : (packet.sequenceFlags() & TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED.number()) != 0 ? "state"
                    : "?");
        }
        return kinds;
    }

    TrackEventWriter newWriter(TrackEventWriter.Config config) {
        return events.newTrackEventWriter(BufferExhaustedPolicy.STALL, config);
    }

    @Test
    void nestedSlicesInstantsCountersAndFlowsOnDescribedTracks() throws Exception {
        Track process = Track.process(4242, "checkout");
        Track thread = Track.thread(process, 4243, "worker");
        Track queue = Track.named(process, "payment queue", Track.ChildOrdering.EXPLICIT, 2);
        Track depth = Track.counter(process, "queue depth");
        long before = System.nanoTime();
        try (TrackEventWriter writer = newWriter(TrackEventWriter.Config.DEFAULT)) {
            long outer = writer.beginSlice(RPC, thread, HANDLE, 99, 0);
            long inner = writer.beginSlice(RPC, thread, VALIDATE, ITEMS, 3);
            writer.instant(RPC, thread, CACHE_MISS);
            writer.endSlice(thread, inner);
            writer.counter(depth, 5);
            long charge = writer.beginSlice(RPC, queue, HANDLE, 0, 99);
            writer.endSlice(queue, charge);
            writer.endSlice(thread, outer);
        }
        long after = System.nanoTime();
        assertEquals(List.of("state", "descriptor", "descriptor", "clock", "event", "event", "event", "event",
                        "descriptor", "event", "descriptor", "event", "event", "event"), packetKinds(),
                "state first; each descriptor once, parents first, right before the first event on its track");
        TrackEventReader.Decoded trace = readBack();
        assertEquals(List.of(process.uuid(), thread.uuid(), depth.uuid(), queue.uuid()),
                List.copyOf(trace.tracks().keySet()));
        assertEquals(process.uuid(), trace.tracks().get(thread.uuid()).parentUuid());
        assertEquals("worker", trace.tracks().get(thread.uuid()).threadName());
        assertEquals(Integer.valueOf(2), trace.tracks().get(queue.uuid()).siblingOrderRank());
        assertTrue(trace.tracks().get(depth.uuid()).counter());
        List<TrackEventReader.Event> events = trace.events();
        assertEquals(List.of("HandleRequest", "ValidateCart", "cache miss"),
                events.subList(0, 3).stream().map(TrackEventReader.Event::name).toList());
        assertEquals(List.of(TrackEvent.Type.TYPE_SLICE_BEGIN, TrackEvent.Type.TYPE_SLICE_BEGIN,
                TrackEvent.Type.TYPE_INSTANT, TrackEvent.Type.TYPE_SLICE_END, TrackEvent.Type.TYPE_COUNTER,
                TrackEvent.Type.TYPE_SLICE_BEGIN, TrackEvent.Type.TYPE_SLICE_END, TrackEvent.Type.TYPE_SLICE_END),
                events.stream().map(TrackEventReader.Event::typeEnum).toList());
        assertEquals(List.of("rpc"), events.get(0).categories());
        assertEquals(List.of(99L), events.get(0).flowIds());
        assertEquals(List.of("items=3"), events.get(1).debugAnnotations());
        assertEquals(5L, events.get(4).counterValue());
        assertEquals(List.of(99L), events.get(5).terminatingFlowIds());
        assertEquals("HandleRequest", events.get(5).name(), "the interned name is reused");
        long previous = before;
        for (TrackEventReader.Event event : events) {
            assertEquals(TraceClock.MONOTONIC.id, event.clockId(), "deltas resolve onto the monotonic clock");
            assertTrue(event.timestamp() >= previous && event.timestamp() <= after,
                    event.timestamp() + " within [" + previous + ", " + after + "]");
            previous = event.timestamp();
        }
        assertEquals(0, trace.undecodable());
    }

    @Test
    void eventsOnTheDefaultTrackAreSmallPacketsOfDeltas() throws Exception {
        Track thread = Track.thread(Track.process(1, "p"), 2, "t");
        try (TrackEventWriter writer = newWriter(TrackEventWriter.Config.forThread(thread))) {
            for (int i = 0; i < 10; i++) {
                writer.beginSlice(RPC, thread, HANDLE);
            }
        }
        List<TracePacket.Decoder> packets = rawPackets().stream()
                .filter(p -> p.trustedPacketSequenceId() != TracingSession.SERVICE_SEQUENCE_ID).toList();
        TracePacket.Decoder state = packets.get(0);
        TracePacketDefaults.Decoder defaults = new TracePacketDefaults.Decoder();
        TrackEventDefaults.Decoder trackDefaults = new TrackEventDefaults.Decoder();
        assertTrue(state.firstPacketOnSequence());
        assertTrue(state.tracePacketDefaults(defaults));
        assertEquals(TrackEventWriter.INCREMENTAL_CLOCK_ID, defaults.timestampClockId());
        assertTrue(defaults.trackEventDefaults(trackDefaults));
        assertEquals(thread.uuid(), trackDefaults.trackUuid());
        TracePacket.Decoder last = packets.get(packets.size() - 1);
        TrackEvent.Decoder event = new TrackEvent.Decoder();
        assertTrue(last.trackEvent(event));
        assertFalse(event.hasTrackUuid(), "an event on the default track names no track");
        assertFalse(last.hasTimestampClockId());
        assertTrue(last.timestamp() < 1L << 21, "a delta, not an absolute time: " + last.timestamp());
        TrackEventReader.Decoded trace = readBack();
        assertEquals(10, trace.events().size());
        assertTrue(trace.events().stream().allMatch(e -> e.trackUuid() == thread.uuid() && e.name().equals("HandleRequest")));
    }

    @Test
    void aTimestampBeforeThePreviousIsWrittenAbsolute() throws Exception {
        Track thread = Track.thread(Track.process(1, "p"), 2, "t");
        long now = System.nanoTime();
        try (TrackEventWriter writer = newWriter(TrackEventWriter.Config.forThread(thread))) {
            writer.atTimestamp(now).instant(RPC, thread, HANDLE);
            writer.atTimestamp(now + 500).instant(RPC, thread, HANDLE);
            writer.atTimestamp(now - 1000).instant(RPC, thread, HANDLE);
            writer.atTimestamp(now + 700).instant(RPC, thread, HANDLE);
            writer.completeSlice(RPC, thread, VALIDATE, now - 5000, 250);
        }
        assertEquals(List.of(now, now + 500, now - 1000, now + 700, now - 5000, now - 4750),
                readBack().events().stream().map(TrackEventReader.Event::timestamp).toList());
    }

    @Test
    void aTimestampGivenToADisabledEventIsSpent() throws Exception {
        Category off = new Category("off");
        off.setEnabled(false);
        Track thread = Track.thread(Track.process(1, "p"), 2, "t");
        long before = System.nanoTime();
        try (TrackEventWriter writer = newWriter(TrackEventWriter.Config.forThread(thread))) {
            writer.atTimestamp(1).instant(off, thread, HANDLE);
            writer.instant(RPC, thread, HANDLE);
        }
        List<TrackEventReader.Event> events = readBack().events();
        assertEquals(1, events.size());
        assertTrue(events.get(0).timestamp() >= before, "read from the clock, not the disabled event's 1");
    }

    @Test
    void absoluteBoottimeTimestampsNeedNoClockState() throws Exception {
        Track thread = Track.thread(Track.process(1, "p"), 2, "t");
        try (TrackEventWriter writer = newWriter(new TrackEventWriter.Config(null, TraceClock.BOOTTIME, false))) {
            writer.atTimestamp(200).instant(RPC, thread, HANDLE);
            writer.instant(RPC, thread, HANDLE);
        }
        assertEquals(List.of("state", "descriptor", "descriptor", "event", "event"), packetKinds());
        List<TrackEventReader.Event> events = readBack().events();
        assertEquals(200, events.get(0).timestamp());
        assertEquals(TrackEventReader.DEFAULT_CLOCK_ID, events.get(1).clockId());
        long boottime = Os.clockNanos(Os.CLOCK_BOOTTIME);
        assertTrue(events.get(1).timestamp() > 200 && events.get(1).timestamp() <= boottime);
    }

    @Test
    void systemNanoTimeIsClockMonotonic() {
        for (int i = 0; i < 100; i++) {
            long before = Os.clockNanos(Os.CLOCK_MONOTONIC);
            long nano = System.nanoTime();
            long after = Os.clockNanos(Os.CLOCK_MONOTONIC);
            assertTrue(before <= nano && nano <= after, "TraceClock.MONOTONIC relies on this");
        }
    }

    @Test
    void theServiceAskingToClearStateMakesTheWriterWriteItAgain() throws Exception {
        Track thread = Track.thread(Track.process(1, "p"), 2, "t");
        try (TrackEventWriter writer = newWriter(TrackEventWriter.Config.forThread(thread))) {
            writer.instant(RPC, thread, HANDLE);
            writer.instant(RPC, thread, HANDLE);
            session.clearIncrementalState();
            writer.instant(RPC, thread, HANDLE);
        }
        assertEquals(List.of("state", "descriptor", "descriptor", "clock", "event", "event",
                "state", "descriptor", "descriptor", "clock", "event"), packetKinds());
        TracePacket.Decoder last = rawPackets().stream()
                .filter(p -> p.trustedPacketSequenceId() != TracingSession.SERVICE_SEQUENCE_ID)
                .reduce((a, b) -> b).orElseThrow();
        assertTrue(last.hasInternedData(), "names interned again after the clear");
        assertFalse(last.firstPacketOnSequence());
        assertEquals(3, readBack().events().stream().filter(e -> "HandleRequest".equals(e.name())).count());
    }

    @Test
    void aBufferThatLosesDataMakesItsWritersClearTheirState() throws Exception {
        service.close();
        service = new TracingService();
        Producer producer = service.connectProducer(ProducerOptions.of("app").withIdentity(new ClientIdentity(Os.uid(), 1)).withSmbSize(1 << 20));
        events = producer.registerDataSource("track_event");
        HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
        config.get().addBuffers().setSizeKb(64);
        config.get().addDataSources().setConfig().setName("track_event");
        session = service.startSession(SessionConfig.parse(MemorySegment.ofArray(config.toByteArray())));
        Track thread = Track.thread(Track.process(1, "p"), 2, "t");
        InternedName last = InternedName.of("the last event");
        try (TrackEventWriter writer = newWriter(TrackEventWriter.Config.forThread(thread))) {
            for (int i = 0; i < 20_000 && events.incrementalStateClears() == 0; i++) {
                writer.beginSlice(RPC, thread, HANDLE, ITEMS, "a string long enough to fill chunks quickly " + i);
            }
            assertTrue(events.incrementalStateClears() > 0, "the ring wrapped and the service asked for a clear");
            writer.instant(RPC, thread, last);
        }
        TrackEventReader.Decoded trace = readBack();
        assertTrue(session.stats().get(0).chunksOverwritten() > 0);
        TrackEventReader.Event end = trace.events().get(trace.events().size() - 1);
        assertEquals("the last event", end.name(), "decodable: its state was written again after the loss");
        assertEquals(thread.uuid(), end.trackUuid());
        assertTrue(trace.tracks().containsKey(thread.uuid()), "the descriptor was written again too");
    }

    @Test
    void debugAnnotationsOfTheCommonTypes() throws Exception {
        Track thread = Track.thread(Track.process(1, "p"), 2, "t");
        InternedName ratio = InternedName.of("ratio");
        InternedName cached = InternedName.of("cached");
        InternedName user = InternedName.of("user");
        try (TrackEventWriter writer = newWriter(TrackEventWriter.Config.forThread(thread))) {
            long a = writer.beginSlice(RPC, thread, HANDLE, ITEMS, -3L);
            long b = writer.beginSlice(RPC, thread, HANDLE, ratio, 0.25);
            long c = writer.beginSlice(RPC, thread, HANDLE, cached, true);
            long d = writer.beginSlice(RPC, thread, HANDLE, user, "ada");
            long e = writer.beginSlice(RPC, thread, HANDLE, user, "grace");
            for (long slice : new long[] {e, d, c, b, a}) {
                writer.endSlice(thread, slice);
            }
        }
        assertEquals(List.of(List.of("items=-3"), List.of("ratio=0.25"), List.of("cached=true"), List.of("user=ada"),
                        List.of("user=grace")),
                readBack().events().stream().filter(ev -> ev.typeEnum() == TrackEvent.Type.TYPE_SLICE_BEGIN)
                        .map(TrackEventReader.Event::debugAnnotations).toList());
    }

    /**
     * Events without flows or string annotations are encoded by hand, not through the
     * nested TrackEvent message: their bytes must be exactly what the generated writer
     * makes of the same fields.
     */
    @Test
    void handEncodedEventsAreByteForByteTheGeneratedWritersBytes() throws Exception {
        Track track = Track.named(null, "t").withUuid(0x1234_5678_9abcL);
        InternedName ratio = InternedName.of("ratio");
        InternedName cached = InternedName.of("cached");
        ByteArrayOutputStream file = new ByteArrayOutputStream();
        try (TrackEventWriter writer = new TrackEventWriter(new TraceFileWriter(file, 7),
                new TrackEventWriter.Config(null, TraceClock.BOOTTIME, false))) {
            long a = writer.atTimestamp(100).beginSlice(RPC, track, HANDLE, ITEMS, -5L);
            long b = writer.atTimestamp(200).beginSlice(RPC, track, HANDLE, ITEMS, 300L);
            long c = writer.atTimestamp(300).beginSlice(RPC, track, HANDLE, ratio, -0.5);
            long d = writer.atTimestamp(400).beginSlice(RPC, track, HANDLE, cached, true);
            long e = writer.atTimestamp(500).beginSlice(RPC, track, HANDLE);
            writer.atTimestamp(600).instant(RPC, track, HANDLE);
            for (long slice : new long[] {e, d, c, b, a}) {
                writer.atTimestamp(700).endSlice(track, slice);
            }
        }
        List<byte[]> packets = new ArrayList<>();
        Trace.Decoder trace = new Trace.Decoder();
        trace.reset(MemorySegment.ofArray(file.toByteArray()));
        RepeatedFieldIterator it = trace.packet(new RepeatedFieldIterator());
        while (it.next()) {
            packets.add(it.field().asBytes());
        }
        // state, descriptor, then the events; the interned ids: rpc 1, HandleRequest 2, items 3, ratio 4, cached 5
        List<byte[]> events = packets.subList(packets.size() - 11, packets.size());
        assertArrayEquals(expected(200, TrackEvent.Type.TYPE_SLICE_BEGIN, track, true, 3, a -> a.setIntValue(300)),
                events.get(1));
        assertArrayEquals(expected(300, TrackEvent.Type.TYPE_SLICE_BEGIN, track, true, 4, a -> a.setDoubleValue(-0.5)),
                withoutInternedData(events.get(2)));
        assertArrayEquals(expected(400, TrackEvent.Type.TYPE_SLICE_BEGIN, track, true, 5, a -> a.setBoolValue(true)),
                withoutInternedData(events.get(3)));
        assertArrayEquals(expected(500, TrackEvent.Type.TYPE_SLICE_BEGIN, track, true, 0, null), events.get(4));
        assertArrayEquals(expected(600, TrackEvent.Type.TYPE_INSTANT, track, true, 0, null), events.get(5));
        assertArrayEquals(expected(700, TrackEvent.Type.TYPE_SLICE_END, track, false, 0, null), events.get(6));
        TrackEventReader.Event first = TrackEventReader.read(MemorySegment.ofArray(file.toByteArray())).events().get(0);
        assertEquals(List.of("items=-5"), first.debugAnnotations(), "a negative value is a 10-byte varint");
    }

    private static byte[] expected(long timestamp, TrackEvent.Type type, Track track, boolean named, long annotationIid,
                                   Consumer<DebugAnnotation> value) {
        HeapBuffered<TracePacket> packet = new HeapBuffered<>(TracePacket.FACTORY);
        packet.get().setTimestamp(timestamp);
        packet.get().setSequenceFlags(TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE.number());
        TrackEvent event = packet.get().setTrackEvent();
        event.setType(type);
        event.setTrackUuid(track.uuid());
        if (named) {
            event.addCategoryIids(1);
            event.setNameIid(2);
        }
        if (value != null) {
            DebugAnnotation annotation = event.addDebugAnnotations();
            annotation.setNameIid(annotationIid);
            value.accept(annotation);
        }
        packet.get().setTrustedPacketSequenceId(7);
        return packet.toByteArray();
    }

    /** The packet without its interned_data field (the first event of a new annotation name carries one). */
    private static byte[] withoutInternedData(byte[] packet) {
        ByteArrayOutputStream kept = new ByteArrayOutputStream();
        ProtoDecoder decoder = new ProtoDecoder().reset(MemorySegment.ofArray(packet));
        while (decoder.next()) {
            if (decoder.field().id() != TracePacket.INTERNED_DATA_FIELD_NUMBER) {
                kept.write(packet, (int) decoder.fieldStart(), (int) (decoder.position() - decoder.fieldStart()));
            }
        }
        return kept.toByteArray();
    }

    @Test
    void misnestedEndsAreUsageErrorsAndWriteNothing() throws Exception {
        Track process = Track.process(1, "p");
        Track thread = Track.thread(process, 2, "t");
        try (TrackEventWriter writer = newWriter(TrackEventWriter.Config.DEFAULT)) {
            assertThrows(IllegalStateException.class, () -> writer.endSlice(thread, 1L << 32 | 1));
            long outer = writer.beginSlice(RPC, thread, HANDLE);
            long inner = writer.beginSlice(RPC, thread, VALIDATE);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> writer.endSlice(thread, outer));
            assertTrue(e.getMessage().contains("slices on a track must nest"), e.getMessage());
            writer.endSlice(thread, inner);
            writer.endSlice(thread, outer);
            assertThrows(IllegalStateException.class, () -> writer.endSlice(thread, outer), "ending twice");
            assertThrows(IllegalArgumentException.class, () -> writer.counter(thread, 1));
        }
        long ends = readBack().events().stream().filter(ev -> ev.typeEnum() == TrackEvent.Type.TYPE_SLICE_END).count();
        assertEquals(2, ends, "only the two valid ends were written");
    }

    @Test
    void aDataSourceNoSessionStartedHandsOutADiscardingWriter() {
        DataSource idle = service.connectProducer(ProducerOptions.of("late")).registerDataSource("not_in_the_config");
        Track track = Track.named(null, "idle").withUuid(6);
        try (TrackEventWriter writer = idle.newTrackEventWriter(BufferExhaustedPolicy.STALL, TrackEventWriter.Config.DEFAULT)) {
            assertFalse(writer.isOpen());
            writer.instant(RPC, track, HANDLE);
            try (var scope = writer.slice(RPC, track, HANDLE)) {
                writer.counter(Track.counter(track, "depth"), 2.5);
            }
            assertEquals(3, writer.discardedEvents());
        }
    }

    @Test
    void aWriterOutlivingItsProducerNeverThrows() {
        Track track = Track.named(null, "outlives").withUuid(5);
        TrackEventWriter writer = newWriter(TrackEventWriter.Config.DEFAULT);
        writer.instant(RPC, track, HANDLE);
        assertTrue(writer.isOpen());
        service.close();
        writer.instant(RPC, track, HANDLE);
        long slice = writer.beginSlice(RPC, track, HANDLE);
        writer.endSlice(track, slice);
        try (var scope = writer.slice(RPC, track, "dynamic")) {
            writer.counter(Track.counter(track, "depth"), 1);
        }
        writer.flush();
        writer.close();
        assertFalse(writer.isOpen());
        assertEquals(4, writer.discardedEvents(), "instant, begin, scoped begin, counter");
    }

    @Test
    void aDisabledCategoryWritesNothing() throws Exception {
        Category off = new Category("off");
        off.setEnabled(false);
        Track thread = Track.thread(Track.process(1, "p"), 2, "t");
        try (TrackEventWriter writer = newWriter(TrackEventWriter.Config.DEFAULT)) {
            long slice = writer.beginSlice(off, thread, HANDLE);
            assertEquals(0, slice);
            writer.instant(off, thread, CACHE_MISS);
            writer.endSlice(thread, slice);
        }
        assertEquals(List.of(), packetKinds());
    }
}
