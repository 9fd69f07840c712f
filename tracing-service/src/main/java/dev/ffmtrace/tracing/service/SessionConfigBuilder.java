package dev.ffmtrace.tracing.service;

import dev.ffmtrace.perfetto.protos.DataSourceConfig;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.protozero.HeapBuffered;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Builds a {@link SessionConfig} field by field, as a TraceConfig would say it: at least
 * one buffer, data sources addressing buffers by name or index, and the periods.
 * {@link #build()} writes the TraceConfig and checks it as {@link SessionConfig#parse} does; values
 * a TraceConfig field cannot hold are refused there too, naming the field.
 */
public final class SessionConfigBuilder {
    private record BufferEntry(String name, long sizeKb, OverwritePolicy policy) {
    }

    private record SourceEntry(String name, Long targetBuffer, String targetBufferName, Long protoVmMemoryLimitKb) {
        SourceEntry(String name, Long targetBuffer, String targetBufferName) {
            this(name, targetBuffer, targetBufferName, null);
        }
    }

    private final List<BufferEntry> buffers = new ArrayList<>();
    private final List<SourceEntry> dataSources = new ArrayList<>();
    private long durationMs;
    private boolean writeIntoFile;
    private long fileWritePeriodMs;
    private long maxFileSizeBytes;
    private long flushPeriodMs;
    private long clearPeriodMs;
    private long dataSourceStopTimeoutMs;
    private TriggerConfig triggerConfig = TriggerConfig.NONE;
    private boolean deferredStart;
    private boolean traceAllMachines;

    SessionConfigBuilder() {
    }

    /** Sets {@code deferred_start}: the session's data sources wait for {@link TracingSession#startTracing()}. */
    public SessionConfigBuilder deferredStart() {
        this.deferredStart = true;
        return this;
    }

    /** Sets {@code trace_all_machines}: data sources of relayed machines start too, not only this machine's. */
    public SessionConfigBuilder traceAllMachines() {
        this.traceAllMachines = true;
        return this;
    }

    /** Sets {@code trigger_config}: what producers' triggers do to the session. */
    public SessionConfigBuilder triggerConfig(TriggerConfig triggerConfig) {
        this.triggerConfig = Objects.requireNonNull(triggerConfig, "triggerConfig");
        return this;
    }

    /** Adds an unnamed buffer of {@code sizeKb} KiB. */
    public SessionConfigBuilder buffer(long sizeKb, OverwritePolicy policy) {
        return buffer(null, sizeKb, policy);
    }

    /** Adds a buffer of {@code sizeKb} KiB, named {@code name} (null for none). */
    public SessionConfigBuilder buffer(String name, long sizeKb, OverwritePolicy policy) {
        buffers.add(new BufferEntry(name, sizeKb, Objects.requireNonNull(policy, "policy")));
        return this;
    }

    /** Adds a data source writing to buffer 0. */
    public SessionConfigBuilder dataSource(String name) {
        dataSources.add(new SourceEntry(name, null, null));
        return this;
    }

    /** Adds a data source writing to the buffer named {@code targetBufferName}. */
    public SessionConfigBuilder dataSource(String name, String targetBufferName) {
        dataSources.add(new SourceEntry(name, null, Objects.requireNonNull(targetBufferName, "targetBufferName")));
        return this;
    }

    /** Adds a data source writing to buffer {@code targetBuffer}, by index. */
    public SessionConfigBuilder dataSource(String name, long targetBuffer) {
        dataSources.add(new SourceEntry(name, targetBuffer, null));
        return this;
    }

    /** Sets {@code duration_ms}: the session stops itself after it (0, the default: when told). */
    public SessionConfigBuilder durationMs(long durationMs) {
        this.durationMs = durationMs;
        return this;
    }

    /** Sets {@code flush_period_ms}: the session flushes its producers this often (0: only when told). */
    public SessionConfigBuilder flushPeriodMs(long flushPeriodMs) {
        this.flushPeriodMs = flushPeriodMs;
        return this;
    }

    /** Sets {@code incremental_state_config.clear_period_ms} (0: never). */
    public SessionConfigBuilder incrementalStateClearPeriodMs(long clearPeriodMs) {
        this.clearPeriodMs = clearPeriodMs;
        return this;
    }

    /** Sets {@code data_source_stop_timeout_ms}: how long stopping waits for the data sources' stop handlers (0: the default). */
    public SessionConfigBuilder dataSourceStopTimeoutMs(long timeoutMs) {
        this.dataSourceStopTimeoutMs = timeoutMs;
        return this;
    }

    /**
     * Sets {@code write_into_file} with {@code file_write_period_ms} (0: the default) and
     * {@code max_file_size_bytes} (0: no limit): the session writes its trace out to the
     * output it is started with while it runs.
     */
    public SessionConfigBuilder writeIntoFile(long fileWritePeriodMs, long maxFileSizeBytes) {
        this.writeIntoFile = true;
        this.fileWritePeriodMs = fileWritePeriodMs;
        this.maxFileSizeBytes = maxFileSizeBytes;
        return this;
    }

    /**
     * Adds a data source writing to buffer {@code targetBuffer}, by index, whose
     * producers' ProtoVM programs run on its overwritten packets within
     * {@code memoryLimitKb} KiB ({@code protovm_config}).
     */
    public SessionConfigBuilder dataSourceWithProtoVm(String name, long targetBuffer, long memoryLimitKb) {
        dataSources.add(new SourceEntry(name, targetBuffer, null, memoryLimitKb));
        return this;
    }

    /** Checks and makes the config. */
    public SessionConfig build() throws InvalidConfigException {
        HeapBuffered<TraceConfig> heap = new HeapBuffered<>(TraceConfig.FACTORY);
        TraceConfig config = heap.get();
        for (int i = 0; i < buffers.size(); i++) {
            BufferEntry entry = buffers.get(i);
            TraceConfig.BufferConfig buffer = config.addBuffers();
            buffer.setSizeKb(uint32("buffers[" + i + "].size_kb", entry.sizeKb()));
            buffer.setFillPolicy(entry.policy() == OverwritePolicy.DISCARD
                    ? TraceConfig.BufferConfig.FillPolicy.DISCARD : TraceConfig.BufferConfig.FillPolicy.RING_BUFFER);
            if (entry.name() != null) {
                buffer.setName(entry.name());
            }
        }
        for (int i = 0; i < dataSources.size(); i++) {
            SourceEntry entry = dataSources.get(i);
            DataSourceConfig source = config.addDataSources().setConfig();
            if (entry.name() != null) {
                source.setName(entry.name());
            }
            if (entry.targetBuffer() != null) {
                source.setTargetBuffer(uint32("data_sources[" + i + "].config.target_buffer", entry.targetBuffer()));
            }
            if (entry.protoVmMemoryLimitKb() != null) {
                source.setProtovmConfig().setMemoryLimitKb(uint32(
                        "data_sources[" + i + "].config.protovm_config.memory_limit_kb", entry.protoVmMemoryLimitKb()));
            }
            if (entry.targetBufferName() != null) {
                source.setTargetBufferName(entry.targetBufferName());
            }
        }
        config.setDurationMs(uint32("duration_ms", durationMs));
        config.setFlushPeriodMs(uint32("flush_period_ms", flushPeriodMs));
        config.setDataSourceStopTimeoutMs(uint32("data_source_stop_timeout_ms", dataSourceStopTimeoutMs));
        if (clearPeriodMs != 0) {
            config.setIncrementalStateConfig().setClearPeriodMs(
                    uint32("incremental_state_config.clear_period_ms", clearPeriodMs));
        }
        if (triggerConfig != TriggerConfig.NONE) {
            writeTriggerConfig(config.setTriggerConfig());
        }
        if (deferredStart) {
            config.setDeferredStart(true);
        }
        if (traceAllMachines) {
            config.setTraceAllMachines(true);
        }
        if (writeIntoFile) {
            config.setWriteIntoFile(true);
            config.setFileWritePeriodMs(uint32("file_write_period_ms", fileWritePeriodMs));
            if (maxFileSizeBytes < 0) {
                throw new InvalidConfigException("max_file_size_bytes: " + maxFileSizeBytes + " is negative");
            }
            config.setMaxFileSizeBytes(maxFileSizeBytes);
        }
        return SessionConfig.parse(heap.toSegment());
    }

    private void writeTriggerConfig(TraceConfig.TriggerConfig config) throws InvalidConfigException {
        config.setTriggerMode(switch (triggerConfig.mode()) {
            case UNSPECIFIED -> TraceConfig.TriggerConfig.TriggerMode.UNSPECIFIED;
            case START_TRACING -> TraceConfig.TriggerConfig.TriggerMode.START_TRACING;
            case STOP_TRACING -> TraceConfig.TriggerConfig.TriggerMode.STOP_TRACING;
            case CLONE_SNAPSHOT -> TraceConfig.TriggerConfig.TriggerMode.CLONE_SNAPSHOT;
        });
        for (int i = 0; i < triggerConfig.triggers().size(); i++) {
            TriggerConfig.Trigger entry = triggerConfig.triggers().get(i);
            TraceConfig.TriggerConfig.Trigger trigger = config.addTriggers();
            trigger.setName(entry.name());
            if (entry.producerNameRegex() != null) {
                trigger.setProducerNameRegex(entry.producerNameRegex().pattern());
            }
            String label = "trigger_config.triggers[" + i + "].";
            trigger.setStopDelayMs(uint32(label + "stop_delay_ms", entry.stopDelayMs()));
            trigger.setMaxPer24H(uint32(label + "max_per_24_h", entry.maxPer24h()));
            if (entry.skipProbability() != 0) {
                trigger.setSkipProbability(entry.skipProbability());
            }
        }
        config.setTriggerTimeoutMs(uint32("trigger_config.trigger_timeout_ms", triggerConfig.timeoutMs()));
    }

    private static int uint32(String field, long value) throws InvalidConfigException {
        if (value < 0 || value > 0xFFFF_FFFFL) {
            throw new InvalidConfigException(field + ": " + value + " is not in [0, 4294967295]");
        }
        return (int) value;
    }
}
