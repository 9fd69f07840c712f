package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.perfetto.protos.DataSourceConfig;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** Named trace buffers, every case and error of the design, and the rest of the session config. */
class SessionConfigTest {
    /** A buffer: size in KiB and an optional name. */
    record B(int sizeKb, String name) {
    }

    /** A data source: its name, and target_buffer / target_buffer_name when not null. */
    record D(String name, Integer index, String bufferName) {
    }

    static MemorySegment config(List<B> buffers, List<D> sources, Consumer<TraceConfig> more) {
        HeapBuffered<TraceConfig> heap = new HeapBuffered<>(TraceConfig.FACTORY);
        TraceConfig config = heap.get();
        for (B b : buffers) {
            TraceConfig.BufferConfig buffer = config.addBuffers();
            buffer.setSizeKb(b.sizeKb());
            if (b.name() != null) {
                buffer.setName(b.name());
            }
        }
        for (D d : sources) {
            DataSourceConfig source = config.addDataSources().setConfig();
            source.setName(d.name());
            if (d.index() != null) {
                source.setTargetBuffer(d.index());
            }
            if (d.bufferName() != null) {
                source.setTargetBufferName(d.bufferName());
            }
        }
        more.accept(config);
        return MemorySegment.ofArray(heap.toByteArray());
    }

    static SessionConfig parse(List<B> buffers, List<D> sources) throws InvalidConfigException {
        return SessionConfig.parse(config(buffers, sources, c -> { }));
    }

    static String refusal(List<B> buffers, List<D> sources) {
        return assertThrows(InvalidConfigException.class, () -> parse(buffers, sources)).getMessage();
    }

    @Test
    void indexOnlyAsBefore() throws Exception {
        SessionConfig session = parse(List.of(new B(1024, null), new B(4096, null)), List.of(new D("linux.ftrace", 1, null)));
        assertEquals(List.of(new SessionConfig.DataSource("linux.ftrace", 1)), session.dataSources());
        assertEquals(4096 * 1024, session.buffers().get(1).sizeBytes());
    }

    @Test
    void nameOnly() throws Exception {
        SessionConfig session = parse(List.of(new B(1024, "small"), new B(4096, "ftrace")),
                List.of(new D("linux.ftrace", null, "ftrace")));
        assertEquals(1, session.dataSources().get(0).targetBuffer());
        assertEquals("ftrace", session.buffers().get(1).name());
    }

    @Test
    void bothAgreeingForBackwardsCompatibility() throws Exception {
        SessionConfig session = parse(List.of(new B(1024, "small"), new B(4096, "ftrace")),
                List.of(new D("linux.ftrace", 1, "ftrace")));
        assertEquals(1, session.dataSources().get(0).targetBuffer());
    }

    @Test
    void neitherWritesToBufferZero() throws Exception {
        assertEquals(0, parse(List.of(new B(64, "a"), new B(64, "b")), List.of(new D("track_event", null, null)))
                .dataSources().get(0).targetBuffer());
    }

    @Test
    void namesResolveAmongPartlyNamedBuffers() throws Exception {
        SessionConfig session = parse(List.of(new B(64, null), new B(64, "mid"), new B(64, null)),
                List.of(new D("a", null, "mid"), new D("b", 2, null), new D("c", 1, "mid")));
        assertEquals(List.of(1, 2, 1), session.dataSources().stream().map(SessionConfig.DataSource::targetBuffer).toList());
        assertEquals(null, session.buffers().get(0).name());
    }

    @Test
    void duplicateBufferNamesAreRefused() {
        assertEquals("duplicate buffer name \"ftrace\": buffers #0 and #2",
                refusal(List.of(new B(64, "ftrace"), new B(64, "small"), new B(64, "ftrace")), List.of()));
    }

    @Test
    void aNameMatchingNoBufferIsRefused() {
        assertEquals("data source \"linux.ftrace\" (#1): target_buffer_name \"frace\" matches no buffer (named buffers: [ftrace, small])",
                refusal(List.of(new B(64, "small"), new B(64, "ftrace")),
                        List.of(new D("track_event", 0, null), new D("linux.ftrace", null, "frace"))));
    }

    @Test
    void indexAndNameDisagreeingAreRefused() {
        assertEquals("data source \"linux.ftrace\" (#0): target_buffer 0 is buffer #0 \"small\" but target_buffer_name \"ftrace\" is buffer #1 \"ftrace\"",
                refusal(List.of(new B(64, "small"), new B(64, "ftrace")), List.of(new D("linux.ftrace", 0, "ftrace"))));
    }

    @Test
    void anIndexOutOfRangeIsRefused() {
        assertEquals("data source \"linux.ftrace\" (#0): target_buffer 2 is out of range (the session has 2 buffers)",
                refusal(List.of(new B(64, null), new B(64, null)), List.of(new D("linux.ftrace", 2, null))));
        assertEquals("data source \"x\" (#0): target_buffer 4294967295 is out of range (the session has 1 buffers)",
                refusal(List.of(new B(64, null)), List.of(new D("x", -1, null))));
    }

    @Test
    void buffersAndDataSourcesMustBeComplete() {
        assertEquals("TraceConfig has no buffers", refusal(List.of(), List.of()));
        assertEquals("buffer #1 \"big\" has no size_kb", refusal(List.of(new B(64, null), new B(0, "big")), List.of()));
        assertEquals("data source #0 has no name", refusal(List.of(new B(64, null)), List.of(new D("", 0, null))));
    }

    @Test
    void fillPolicyDurationsAndFileOptions() throws Exception {
        SessionConfig session = SessionConfig.parse(config(List.of(new B(64, "ring"), new B(128, "discard")), List.of(), c -> {
            c.setDurationMs(10_000);
            c.setWriteIntoFile(true);
            c.setFileWritePeriodMs(2500);
            c.setFlushPeriodMs(1000);
            c.setIncrementalStateConfig().setClearPeriodMs(5000);
        }));
        assertEquals(OverwritePolicy.RING_BUFFER, session.buffers().get(0).overwritePolicy());
        assertEquals(10_000, session.durationMs());
        assertTrue(session.writeIntoFile());
        assertEquals(2500, session.fileWritePeriodMs());
        assertEquals(1000, session.flushPeriodMs());
        assertEquals(5000, session.incrementalStateClearPeriodMs());

        HeapBuffered<TraceConfig> heap = new HeapBuffered<>(TraceConfig.FACTORY);
        TraceConfig.BufferConfig buffer = heap.get().addBuffers();
        buffer.setSizeKb(64);
        buffer.setFillPolicy(TraceConfig.BufferConfig.FillPolicy.DISCARD);
        SessionConfig discard = SessionConfig.parse(MemorySegment.ofArray(heap.toByteArray()));
        assertEquals(OverwritePolicy.DISCARD, discard.buffers().get(0).overwritePolicy());
        assertFalse(discard.writeIntoFile());
        assertEquals(0, discard.incrementalStateClearPeriodMs(), "no periodic clears unless asked");
    }

    @Test
    void aFillPolicyThisProtoDoesNotDefineIsRefused() {
        HeapBuffered<TraceConfig> heap = new HeapBuffered<>(TraceConfig.FACTORY);
        TraceConfig.BufferConfig buffer = heap.get().addBuffers();
        buffer.setSizeKb(64);
        buffer.appendInt32(TraceConfig.BufferConfig.FILL_POLICY_FIELD_NUMBER, 7);
        assertEquals("buffer #0 has an unknown fill_policy 7", assertThrows(InvalidConfigException.class,
                () -> SessionConfig.parse(MemorySegment.ofArray(heap.toByteArray()))).getMessage());
    }

    @Test
    void garbageIsRefusedNotThrown() {
        byte[] garbage = {0x0a, 0x7f, 0x01};
        assertEquals("TraceConfig is not a valid protobuf message: LENGTH_PAST_END",
                assertThrows(InvalidConfigException.class, () -> SessionConfig.parse(MemorySegment.ofArray(garbage))).getMessage());
    }

    @Test
    void theBuilderWritesATraceConfigAndChecksItAsParseDoes() throws Exception {
        SessionConfig built = SessionConfig.builder()
                .buffer("main", 1024, OverwritePolicy.RING_BUFFER)
                .buffer("late", 256, OverwritePolicy.DISCARD)
                .dataSource("track_event", "main")
                .dataSource("linux.ftrace", 1)
                .dataSource("counters")
                .durationMs(10_000).flushPeriodMs(1000).incrementalStateClearPeriodMs(5000)
                .writeIntoFile(20, 1 << 20)
                .build();
        assertEquals(List.of(new SessionConfig.Buffer(0, "main", 1 << 20, OverwritePolicy.RING_BUFFER),
                new SessionConfig.Buffer(1, "late", 256 << 10, OverwritePolicy.DISCARD)), built.buffers());
        assertEquals(List.of(new SessionConfig.DataSource("track_event", 0), new SessionConfig.DataSource("linux.ftrace", 1),
                new SessionConfig.DataSource("counters", 0)), built.dataSources());
        assertEquals(10_000, built.durationMs());
        assertEquals(1000, built.flushPeriodMs());
        assertEquals(5000, built.incrementalStateClearPeriodMs());
        assertTrue(built.writeIntoFile());
        assertEquals(20, built.fileWritePeriodMs());
        assertEquals(SessionConfig.MIN_FILE_WRITE_PERIOD_MS, built.effectiveFileWritePeriodMs());
        assertEquals(1 << 20, built.maxFileSizeBytes());

        SessionConfig reparsed = SessionConfig.parse(built.traceConfig());
        assertEquals(built.buffers(), reparsed.buffers());
        assertEquals(built.dataSources(), reparsed.dataSources());
        assertEquals(built.maxFileSizeBytes(), reparsed.maxFileSizeBytes());
        assertEquals(SessionConfig.DEFAULT_FILE_WRITE_PERIOD_MS, SessionConfig.builder()
                .buffer(64, OverwritePolicy.RING_BUFFER).writeIntoFile(0, 0).build().effectiveFileWritePeriodMs());
    }

    @Test
    void theBuilderNamesTheFieldItRefuses() {
        assertEquals("TraceConfig has no buffers",
                assertThrows(InvalidConfigException.class, () -> SessionConfig.builder().build()).getMessage());
        assertEquals("buffer #0 \"main\" has no size_kb", assertThrows(InvalidConfigException.class,
                () -> SessionConfig.builder().buffer("main", 0, OverwritePolicy.RING_BUFFER).build()).getMessage());
        assertEquals("buffers[0].size_kb: 4294967296 is not in [0, 4294967295]", assertThrows(InvalidConfigException.class,
                () -> SessionConfig.builder().buffer(1L << 32, OverwritePolicy.RING_BUFFER).build()).getMessage());
        assertEquals("duration_ms: -1 is not in [0, 4294967295]", assertThrows(InvalidConfigException.class,
                () -> SessionConfig.builder().buffer(64, OverwritePolicy.RING_BUFFER).durationMs(-1).build()).getMessage());
        assertEquals("data source \"track_event\" (#0): target_buffer_name \"mian\" matches no buffer (named buffers: "
                + "[main])", assertThrows(InvalidConfigException.class, () -> SessionConfig.builder()
                .buffer("main", 64, OverwritePolicy.RING_BUFFER).dataSource("track_event", "mian").build()).getMessage());
        assertEquals("data source #0 has no name", assertThrows(InvalidConfigException.class,
                () -> SessionConfig.builder().buffer(64, OverwritePolicy.RING_BUFFER).dataSource(null).build()).getMessage());
        assertEquals("max_file_size_bytes: -5 is negative", assertThrows(InvalidConfigException.class,
                () -> SessionConfig.builder().buffer(64, OverwritePolicy.RING_BUFFER).writeIntoFile(0, -5).build())
                .getMessage());
    }

    /**
     * Issue #27, item 3: the longest timeouts a config can say (2^32 - 1 ms, 49 days) are
     * clamped, so a producer that never acknowledges holds a stop on the service's timer
     * for at most the documented maximum; a Flush request's timeout too.
     */
    @Test
    void timeoutsAreClampedToTheirDocumentedMaximum() throws Exception {
        HeapBuffered<TraceConfig> config = new HeapBuffered<>(TraceConfig.FACTORY);
        config.get().addBuffers().setSizeKb(64);
        config.get().setFlushTimeoutMs(-1);
        config.get().setDataSourceStopTimeoutMs(-1);
        SessionConfig longest = SessionConfig.parse(config.toSegment());
        assertEquals(4294967295L, longest.dataSourceStopTimeoutMs(), "the config's own value is kept");
        assertEquals(Guardrails.MAX_FLUSH_TIMEOUT_MS, longest.effectiveFlushTimeoutMs());
        assertEquals(Guardrails.MAX_DATA_SOURCE_STOP_TIMEOUT_MS, longest.effectiveDataSourceStopTimeoutMs());
        assertEquals(Guardrails.MAX_FLUSH_TIMEOUT_MS, SessionConfig.clampFlushTimeoutMs(4294967295L));
        assertEquals(1234, SessionConfig.clampFlushTimeoutMs(1234), "a timeout under the maximum is kept");

        HeapBuffered<TraceConfig> shorter = new HeapBuffered<>(TraceConfig.FACTORY);
        shorter.get().addBuffers().setSizeKb(64);
        shorter.get().setFlushTimeoutMs(7000);
        shorter.get().setDataSourceStopTimeoutMs(9000);
        SessionConfig kept = SessionConfig.parse(shorter.toSegment());
        assertEquals(7000, kept.effectiveFlushTimeoutMs());
        assertEquals(9000, kept.effectiveDataSourceStopTimeoutMs());
    }
}
