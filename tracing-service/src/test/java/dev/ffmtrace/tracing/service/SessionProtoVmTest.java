package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.perfetto.protos.ProtoVms;
import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TraceProvenance;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.protozero.RepeatedScalarIterator;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.producer.ProducerConnection;
import dev.ffmtrace.tracing.producer.internal.DataSourceHandler;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import dev.ffmtrace.tracing.smb.TraceWriter;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A session whose config gives a data source a {@code protovm_config}, with a producer that
 * registered a program for it: what its ring buffer overwrites reaches the VM, and the
 * trace carries the VM's state in a {@code protovms} packet and says whose sequences are
 * whose in {@code trace_provenance}, as Perfetto's service writes them.
 */
class SessionProtoVmTest {
    /** A VmProgram of one instruction: merge the whole packet into the state's root. */
    static final byte[] MERGE_ALL = HexFormat.of().parseHex("0801" + "1202" + "1a00");
    private static final int PACKETS = 2000;

    /** What a trace says: the protovms instances, the provenance, and the first timestamp left per sequence. */
    record Decoded(List<byte[]> programs, List<String> states, List<Integer> limits, List<int[]> producers,
                           List<long[]> provenance, long firstTimestamp, int sequenceId) {
    }

    static Decoded decode(byte[] trace) {
        Trace.Decoder decoder = new Trace.Decoder();
        decoder.reset(MemorySegment.ofArray(trace));
        RepeatedFieldIterator packets = decoder.packet(new RepeatedFieldIterator());
        TracePacket.Decoder packet = new TracePacket.Decoder();
        List<byte[]> programs = new ArrayList<>();
        List<String> states = new ArrayList<>();
        List<Integer> limits = new ArrayList<>();
        List<int[]> producers = new ArrayList<>();
        List<long[]> provenance = new ArrayList<>();
        long firstTimestamp = -1;
        int sequenceId = 0;
        while (packets.next()) {
            packet.reset(packets.field());
            ProtoVms.Decoder vms = new ProtoVms.Decoder();
            TraceProvenance.Decoder prov = new TraceProvenance.Decoder();
            if (packet.protovms(vms)) {
                RepeatedFieldIterator instances = vms.instance(new RepeatedFieldIterator());
                ProtoVms.Instance.Decoder instance = new ProtoVms.Instance.Decoder();
                while (instances.next()) {
                    instance.reset(instances.field());
                    programs.add(instance.program());
                    TracePacket.Decoder state = new TracePacket.Decoder();
                    assertTrue(instance.state(state), "the state is always there");
                    TrackEvent.Decoder event = new TrackEvent.Decoder();
                    states.add(state.timestamp() + " " + (state.trackEvent(event) ? event.name() : "-"));
                    limits.add(instance.memoryLimitKb());
                    List<Integer> ids = new ArrayList<>();
                    RepeatedScalarIterator producerIds = instance.producerId(new RepeatedScalarIterator());
                    while (producerIds.next()) {
                        ids.add((int) producerIds.value());
                    }
                    producers.add(ids.stream().mapToInt(Integer::intValue).toArray());
                }
            } else if (packet.traceProvenance(prov)) {
                RepeatedFieldIterator buffers = prov.buffers(new RepeatedFieldIterator());
                TraceProvenance.Buffer.Decoder buffer = new TraceProvenance.Buffer.Decoder();
                TraceProvenance.Sequence.Decoder sequence = new TraceProvenance.Sequence.Decoder();
                while (buffers.next()) {
                    buffer.reset(buffers.field());
                    RepeatedFieldIterator sequences = buffer.sequences(new RepeatedFieldIterator());
                    while (sequences.next()) {
                        sequence.reset(sequences.field());
                        provenance.add(new long[] {Integer.toUnsignedLong(sequence.id()), sequence.producerId()});
                    }
                }
            } else if (packet.hasTrackEvent() && firstTimestamp < 0) {
                firstTimestamp = packet.timestamp();
                sequenceId = packet.trustedPacketSequenceId();
            }
        }
        return new Decoded(programs, states, limits, producers, provenance, firstTimestamp, sequenceId);
    }

    /** Packets 0 to PACKETS - 1: event i at timestamp i. */
    private static void writeEvents(TraceWriter<TracePacket> writer) {
        for (int i = 0; i < PACKETS; i++) {
            TracePacket packet = writer.newTracePacket();
            packet.setTimestamp(i);
            packet.setTrackEvent().setName("event " + i);
            writer.finishTracePacket();
        }
    }

    @Test
    void theVmKeepsWhatTheRingOverwroteAndTheTraceCarriesItsState() throws Exception {
        try (TracingService service = new TracingService()) {
            Producer producer = service.connectProducer(ProducerOptions.of("app"));
            DataSource source = producer.registerDataSource("deltas");
            source.protoVmProgram(MERGE_ALL);
            SessionConfig config = SessionConfig.builder().buffer(16, OverwritePolicy.RING_BUFFER)
                    .dataSourceWithProtoVm("deltas", 0, 64).build();
            TracingSession session = service.startSession(config);
            try (TraceWriter<TracePacket> writer = source.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                writeEvents(writer);
            }
            session.flush();
            ByteArrayOutputStream file = new ByteArrayOutputStream();
            session.writeTrace(file);
            Decoded trace = decode(file.toByteArray());

            assertTrue(trace.firstTimestamp() > 0, "the ring overwrote the first packets");
            assertEquals(1, trace.programs().size());
            assertArrayEquals(MERGE_ALL, trace.programs().getFirst());
            assertEquals(64, trace.limits().getFirst());
            assertArrayEquals(new int[] {producer.id()}, trace.producers().getFirst());
            // The state is the last packet the ring overwrote: the one before the first left.
            long last = trace.firstTimestamp() - 1;
            assertEquals(last + " event " + last, trace.states().getFirst());
            assertTrue(trace.provenance().stream().anyMatch(
                    s -> s[0] == Integer.toUnsignedLong(trace.sequenceId()) && s[1] == producer.id()),
                    "trace_provenance names the writer's sequence and its producer");
            session.close();
        }
    }

    /** What a session of a remote producer that registered {@code program} gives. */
    record RemoteRun(Decoded trace, long violations) {
    }

    /**
     * A remote producer, through Perfetto's IPC: ffmtrace's ProducerConnection registers
     * {@code program} in its DataSourceDescriptor and writes through its own SMB.
     */
    private static RemoteRun remoteRun(byte[] program) throws Exception {
        UnixAddress address = UnixAddress.abstractName("ffmtrace-protovm-" + System.nanoTime());
        CountDownLatch written = new CountDownLatch(1);
        DataSourceHandler writer = instance -> Thread.ofPlatform().start(() -> {
            try (TraceWriter<TracePacket> out = instance.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                writeEvents(out);
                out.flush();
            } finally {
                written.countDown();
            }
        });
        try (TracingService service = new TracingService();
             ProducerPort port = ProducerPort.listen(service, address);
             ProducerConnection connection = ProducerConnection.connect(
                     ProducerConnection.Options.named("deltas-app").withSocket(address))) {
            assertTrue(connection.awaitConnected(Duration.ofSeconds(10)));
            connection.registerDataSource(DataSourceDescriptor.named("deltas").withProtoVmProgram(program), writer);
            assertTrue(connection.sync().get(10, TimeUnit.SECONDS), "the registration reached the service");
            TracingSession session = service.startSession(SessionConfig.builder()
                    .buffer(16, OverwritePolicy.RING_BUFFER).dataSourceWithProtoVm("deltas", 0, 64).build());
            assertTrue(written.await(30, TimeUnit.SECONDS), "the producer wrote its packets");
            session.flush();
            ByteArrayOutputStream file = new ByteArrayOutputStream();
            session.writeTrace(file);
            session.close();
            return new RemoteRun(decode(file.toByteArray()), port.violations());
        }
    }

    @Test
    void aRemoteProducersProgramRunsOnItsOverwrittenPackets() throws Exception {
        RemoteRun run = remoteRun(MERGE_ALL);
        Decoded trace = run.trace();
        assertTrue(trace.firstTimestamp() > 0, "the ring overwrote the first packets");
        assertArrayEquals(MERGE_ALL, trace.programs().getFirst());
        long last = trace.firstTimestamp() - 1;
        assertEquals(last + " event " + last, trace.states().getFirst());
        assertEquals(1, trace.producers().getFirst().length);
        assertEquals(0, run.violations());
    }

    /**
     * traced keeps a program re-serialised by its cppgen classes; so does ffmtrace: the
     * same program with a 4-byte length and a padded version runs and is emitted as
     * {@link #MERGE_ALL}.
     */
    @Test
    void aProgramIsRunAndEmittedAsTracedReserialisesIt() throws Exception {
        byte[] padded = HexFormat.of().parseHex("088100" + "1282808000" + "1a00");
        RemoteRun run = remoteRun(padded);
        assertArrayEquals(MERGE_ALL, run.trace().programs().getFirst());
        long last = run.trace().firstTimestamp() - 1;
        assertEquals(last + " event " + last, run.trace().states().getFirst());
    }

    /** A program traced would read a pointer from is refused: counted, and no VM runs. */
    @Test
    void aProgramTracedWouldMisreadIsCountedAndRunsNoVm() throws Exception {
        RemoteRun run = remoteRun(HexFormat.of().parseHex("0a0101" + "1202" + "1a00"));
        assertEquals(List.of(), run.trace().programs());
        assertEquals(1, run.violations());
        assertTrue(run.trace().firstTimestamp() > 0, "the data source still traced, without a VM");
    }

    /** A data source registered with its program after the session started gets its VM too. */
    @Test
    void aLateRegistrationWithAProgramRunsIt() throws Exception {
        try (TracingService service = new TracingService()) {
            Producer producer = service.connectProducer(ProducerOptions.of("app"));
            TracingSession session = service.startSession(SessionConfig.builder()
                    .buffer(16, OverwritePolicy.RING_BUFFER).dataSourceWithProtoVm("deltas", 0, 64).build());
            DataSource source = producer.registerDataSource("deltas", MERGE_ALL);
            assertTrue(source.isStarted(), "the registration started it");
            try (TraceWriter<TracePacket> writer = source.newTraceWriter(BufferExhaustedPolicy.STALL)) {
                writeEvents(writer);
            }
            session.flush();
            ByteArrayOutputStream file = new ByteArrayOutputStream();
            session.writeTrace(file);
            Decoded trace = decode(file.toByteArray());
            assertArrayEquals(MERGE_ALL, trace.programs().getFirst());
            long last = trace.firstTimestamp() - 1;
            assertEquals(last + " event " + last, trace.states().getFirst());
            session.close();
        }
    }

    @Test
    void withoutAProgramOrWithoutAConfigNoVmIsSetUp() throws Exception {
        try (TracingService service = new TracingService()) {
            Producer producer = service.connectProducer(ProducerOptions.of("app"));
            producer.registerDataSource("no-program");
            producer.registerDataSource("no-config").protoVmProgram(MERGE_ALL);
            SessionConfig config = SessionConfig.builder().buffer(16, OverwritePolicy.RING_BUFFER)
                    .dataSourceWithProtoVm("no-program", 0, 64).dataSource("no-config").build();
            TracingSession session = service.startSession(config);
            ByteArrayOutputStream file = new ByteArrayOutputStream();
            session.writeTrace(file);
            assertTrue(decode(file.toByteArray()).programs().isEmpty(), "no protovms packet without a VM");
            assertFalse(session.stats().isEmpty());
            session.close();
        }
    }
}
