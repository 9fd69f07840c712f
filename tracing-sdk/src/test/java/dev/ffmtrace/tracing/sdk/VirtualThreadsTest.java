package dev.ffmtrace.tracing.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.perfetto.protos.Trace;
import dev.ffmtrace.perfetto.protos.TracePacket;
import dev.ffmtrace.perfetto.protos.TrackEvent;
import dev.ffmtrace.protozero.ProtoDecoder;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.producer.DataSourceDescriptor;
import dev.ffmtrace.tracing.service.SessionConfig;
import dev.ffmtrace.tracing.service.TracingService;
import dev.ffmtrace.tracing.service.TracingSession;
import dev.ffmtrace.tracing.smb.BufferExhaustedPolicy;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.BitSet;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Many virtual threads tracing at once through a small SMB under STALL: they share the few
 * writers an instance lends, so the SMB is never exhausted, every event reaches the trace,
 * and no carrier is pinned (JFR's jdk.VirtualThreadPinned, recorded at any duration).
 * {@code -Dffmtrace.virtualThreads=100000 -Dffmtrace.virtualThreadEvents=100} runs issue
 * #26's size (10 million events, about 10 s on 2 cores) instead of the default one.
 */
class VirtualThreadsTest {
    private static final int THREADS = Integer.getInteger("ffmtrace.virtualThreads", 10_000);
    private static final int EVENTS = Integer.getInteger("ffmtrace.virtualThreadEvents", 20);
    /** Room for every event in a buffer that discards when full: a name of up to 8 digits is a packet of under 32 bytes. */
    private static final int BUFFER_KB = (int) Math.max(64 * 1024, (long) THREADS * EVENTS * 32 / 1024);

    @TempDir
    Path dir;

    @Test
    void manyVirtualThreadsWriteEveryEventAndPinNoCarrier() throws Exception {
        BlockingQueue<Long> started = new LinkedBlockingQueue<>();
        DataSource<Long> source = DataSource.register(DataSourceDescriptor.named("sdk.virtual"),
                new DataSourceCallbacks<Long>() {
                    @Override
                    public Long onSetup(InstanceSetup setup) {
                        return setup.instanceId();
                    }

                    @Override
                    public void onStart(Long id) {
                        started.add(id);
                    }
                }, BufferExhaustedPolicy.STALL);
        try (Recording pinning = new Recording(); TracingService service = new TracingService()) {
            pinning.enable("jdk.VirtualThreadPinned").withThreshold(java.time.Duration.ZERO);
            pinning.start();
            assertTrue(Tracing.initialize(TracingOptions.named("virtual-test").withInProcessBackend(service)
                    .withSmbSize(4 << 20)));
            try {
                TracingSession session = service.startSession(SessionConfig.builder()
                        .buffer(BUFFER_KB, OverwritePolicy.DISCARD).dataSource("sdk.virtual").build());
                assertNotNull(started.poll(10, TimeUnit.SECONDS), "the instance started");
                try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
                    for (int t = 0; t < THREADS; t++) {
                        int thread = t;
                        threads.submit(() -> {
                            for (int i = 0; i < EVENTS; i++) {
                                int event = thread * EVENTS + i;
                                source.trace(ctx -> ctx.newTracePacket().setTrackEvent().setName(Integer.toString(event)));
                            }
                        });
                    }
                }
                session.stop();
                ByteArrayOutputStream trace = new ByteArrayOutputStream();
                session.writeTrace(trace);
                BitSet seen = new BitSet();
                assertEquals(0, duplicates(trace.toByteArray(), seen), "no event twice");
                assertEquals(THREADS * EVENTS, seen.cardinality(), "every event of every thread");
                assertEquals(0, source.packetsDiscarded());
                session.close();
            } finally {
                Tracing.shutdown();
            }
            pinning.stop();
            assertEquals(0, pinnedEvents(pinning, "workload"), "no carrier pinned");
        }
    }

    /** The recording above sees a pinned carrier when there is one: a virtual thread parked in a class's initializer. */
    @Test
    void theRecordingSeesAPinnedCarrier() throws Exception {
        try (Recording pinning = new Recording()) {
            pinning.enable("jdk.VirtualThreadPinned").withThreshold(java.time.Duration.ZERO);
            pinning.start();
            Thread.ofVirtual().start(ParksWhileInitializing::touch).join();
            pinning.stop();
            assertTrue(pinnedEvents(pinning, "control") > 0, "JFR recorded the pinned park");
        }
    }

    /** Parks in its static initializer, which pins a virtual thread's carrier. */
    private static final class ParksWhileInitializing {
        static {
            java.util.concurrent.locks.LockSupport.parkNanos(20_000_000);
        }

        static void touch() {
        }
    }

    private int pinnedEvents(Recording recording, String name) throws java.io.IOException {
        Path file = dir.resolve(name + ".jfr");
        recording.dump(file);
        return RecordingFile.readAllEvents(file).size();
    }

    /** Marks each event's number in {@code seen}; returns how many came more than once. */
    private static int duplicates(byte[] trace, BitSet seen) {
        int twice = 0;
        ProtoDecoder packets = new ProtoDecoder().reset(MemorySegment.ofArray(trace));
        TracePacket.Decoder packet = new TracePacket.Decoder();
        TrackEvent.Decoder event = new TrackEvent.Decoder();
        while (packets.next()) {
            if (packets.field().id() == Trace.PACKET_FIELD_NUMBER) {
                packet.reset(packets.field());
                if (packet.trackEvent(event) && event.hasName()) {
                    int number = Integer.parseInt(event.name());
                    if (seen.get(number)) {
                        twice++;
                    }
                    seen.set(number);
                }
            }
        }
        return twice;
    }
}
