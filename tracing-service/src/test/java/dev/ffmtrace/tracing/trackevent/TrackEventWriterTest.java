package dev.ffmtrace.tracing.trackevent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.Native;
import dev.ffmtrace.perfetto.protos.EventCategory;
import dev.ffmtrace.perfetto.protos.EventName;
import dev.ffmtrace.perfetto.protos.InternedData;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TrackDescriptor;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.protozero.RepeatedScalarIterator;
import dev.ffmtrace.tracing.buffer.ClientIdentity;
import dev.ffmtrace.tracing.service.DataSource;
import dev.ffmtrace.tracing.service.Producer;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.smb.SharedMemoryArbiter.BufferExhaustedPolicy;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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
        Producer producer = service.connectProducer("app", new ClientIdentity(Native.getuid(), 1), 1 << 20, 4096);
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

    /** One decoded packet: what it describes or the event it holds, names resolved through the interned data. */
    record Event(String kind, long track, long parent, String name, String category, int flags, boolean first,
                 long counter, List<Long> flows, List<Long> terminatingFlows) {
    }

    List<Event> readBack() throws Exception {
        session.flush();
        ByteArrayOutputStream file = new ByteArrayOutputStream();
        session.writeTrace(file);
        Trace.Decoder trace = new Trace.Decoder();
        trace.reset(MemorySegment.ofArray(file.toByteArray()));
        RepeatedFieldIterator packets = trace.packet(new RepeatedFieldIterator());
        TracePacket.Decoder packet = new TracePacket.Decoder();
        TrackEvent.Decoder event = new TrackEvent.Decoder();
        TrackDescriptor.Decoder descriptor = new TrackDescriptor.Decoder();
        InternedData.Decoder interned = new InternedData.Decoder();
        Map<Long, String> names = new HashMap<>();
        Map<Long, String> categories = new HashMap<>();
        List<Event> out = new ArrayList<>();
        while (packets.next()) {
            packet.reset(packets.field());
            if (packet.hasTraceStats()) {
                continue;
            }
            if (packet.internedData(interned)) {
                RepeatedFieldIterator it = interned.eventNames(new RepeatedFieldIterator());
                EventName.Decoder name = new EventName.Decoder();
                while (it.next()) {
                    name.reset(it.field());
                    names.put(name.iid(), name.name());
                }
                it = interned.eventCategories(new RepeatedFieldIterator());
                EventCategory.Decoder category = new EventCategory.Decoder();
                while (it.next()) {
                    category.reset(it.field());
                    categories.put(category.iid(), category.name());
                }
            }
            if (packet.trackDescriptor(descriptor)) {
                out.add(new Event("descriptor", descriptor.uuid(), descriptor.parentUuid(), descriptor.name(), null,
                        packet.sequenceFlags(), packet.firstPacketOnSequence(), 0, List.of(), List.of()));
            } else if (packet.trackEvent(event)) {
                RepeatedScalarIterator cats = event.categoryIids(new RepeatedScalarIterator());
                String category = cats.next() ? categories.get(cats.value()) : null;
                out.add(new Event(switch (event.type()) {
                    case TrackEvent.Type.TYPE_SLICE_BEGIN -> "begin";
                    case TrackEvent.Type.TYPE_SLICE_END -> "end";
                    case TrackEvent.Type.TYPE_INSTANT -> "instant";
                    case TrackEvent.Type.TYPE_COUNTER -> "counter";
                    default -> "?";
                }, event.trackUuid(), 0, event.hasNameIid() ? names.get(event.nameIid()) : null, category,
                        packet.sequenceFlags(), packet.firstPacketOnSequence(), event.counterValue(),
                        values(event.flowIds(new RepeatedScalarIterator())),
                        values(event.terminatingFlowIds(new RepeatedScalarIterator()))));
            }
        }
        return out;
    }

    static List<Long> values(RepeatedScalarIterator it) {
        List<Long> values = new ArrayList<>();
        while (it.next()) {
            values.add(it.value());
        }
        return values;
    }

    @Test
    void nestedSlicesInstantsCountersAndFlowsOnDescribedTracks() throws Exception {
        Track process = Track.process(4242, "checkout");
        Track thread = Track.thread(process, 4243, "worker");
        Track queue = Track.named(process, "payment queue", Track.ChildOrdering.EXPLICIT, 2);
        Track depth = Track.counter(process, "queue depth");
        try (TrackEventWriter writer = new TrackEventWriter(events.newTraceWriter(BufferExhaustedPolicy.STALL))) {
            long outer = writer.beginSlice(RPC, thread, HANDLE, 99, 0);
            long inner = writer.beginSlice(RPC, thread, VALIDATE, ITEMS, 3);
            writer.instant(RPC, thread, CACHE_MISS);
            writer.endSlice(thread, inner);
            writer.counter(depth, 5);
            long charge = writer.beginSlice(RPC, queue, HANDLE, 0, 99);
            writer.endSlice(queue, charge);
            writer.endSlice(thread, outer);
        }
        List<Event> events = readBack();
        List<String> expected = List.of("descriptor " + process.uuid(), "descriptor " + thread.uuid(),
                "begin " + thread.uuid(), "begin " + thread.uuid(), "instant " + thread.uuid(), "end " + thread.uuid(),
                "descriptor " + depth.uuid(), "counter " + depth.uuid(), "descriptor " + queue.uuid(),
                "begin " + queue.uuid(), "end " + queue.uuid(), "end " + thread.uuid());
        assertEquals(expected, events.stream().map(e -> e.kind() + " " + e.track()).toList(),
                "each descriptor once, parents first, right before the first event on its track");
        assertEquals(List.of("HandleRequest", "ValidateCart", "cache miss"),
                events.subList(2, 5).stream().map(Event::name).toList());
        Event first = events.get(0);
        assertTrue(first.first(), "first_packet_on_sequence on the first packet");
        assertEquals(TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED, first.flags() & 1);
        assertEquals(process.uuid(), first.track());
        assertEquals(process.uuid(), events.get(1).parent());
        Event begin = events.get(2);
        assertEquals("rpc", begin.category());
        assertEquals(TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE, begin.flags());
        assertEquals(List.of(99L), begin.flows());
        assertEquals(5, events.get(7).counter());
        assertEquals(List.of(99L), events.get(9).terminatingFlows());
        assertEquals("HandleRequest", events.get(9).name(), "the interned name is reused, not written again");
    }

    @Test
    void misnestedEndsAreUsageErrorsAndWriteNothing() throws Exception {
        Track process = Track.process(1, "p");
        Track thread = Track.thread(process, 2, "t");
        try (TrackEventWriter writer = new TrackEventWriter(events.newTraceWriter(BufferExhaustedPolicy.STALL))) {
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
        long ends = readBack().stream().filter(ev -> ev.kind().equals("end")).count();
        assertEquals(2, ends, "only the two valid ends were written");
    }

    @Test
    void aDisabledCategoryWritesNothing() throws Exception {
        Category off = new Category("off");
        off.setEnabled(false);
        Track thread = Track.thread(Track.process(1, "p"), 2, "t");
        try (TrackEventWriter writer = new TrackEventWriter(events.newTraceWriter(BufferExhaustedPolicy.STALL))) {
            long slice = writer.beginSlice(off, thread, HANDLE);
            assertEquals(0, slice);
            writer.instant(off, thread, CACHE_MISS);
            writer.endSlice(thread, slice);
        }
        assertEquals(List.of(), readBack());
    }
}
