package dev.ffmtrace.tracing.service;

import dev.ffmtrace.perfetto.protos.DataSourceConfig;
import dev.ffmtrace.perfetto.protos.ProtoVmConfig;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.buffer.TraceBufferV2;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * What a tracing session is made of, read from a binary {@code TraceConfig} and checked:
 * its buffers, its data sources each bound to the index of the buffer it writes to, and
 * the periods the session keeps. Made by {@link #parse} from a TraceConfig, or by a
 * {@link #builder()} for Java users; both check the same way, and a config that exists
 * is known good, so a session started from it allocates nothing in vain.
 *
 * <p>Buffers may be named ({@code BufferConfig.name}) and data sources may address them
 * by name ({@code DataSourceConfig.target_buffer_name}), by index ({@code target_buffer})
 * or both, as Perfetto's named trace buffers do: names must be unique; a name must match
 * a buffer; an index must be in range; when both are given they must agree, which lets
 * one config serve services that know names and services that do not. A data source
 * with neither writes to buffer 0. Every refusal is an {@link InvalidConfigException}
 * naming the offending field, buffer or data source.
 *
 * <p>Periods, as Perfetto's service keeps them: {@code duration_ms} 0 runs until the
 * session is stopped; {@code file_write_period_ms} applies with {@code write_into_file},
 * 0 meaning {@value #DEFAULT_FILE_WRITE_PERIOD_MS} ms and less than
 * {@value #MIN_FILE_WRITE_PERIOD_MS} ms meaning {@value #MIN_FILE_WRITE_PERIOD_MS}.
 *
 * <p>A config is immutable and may be shared between threads and sessions.
 */
public final class SessionConfig {
    /** Perfetto's default {@code file_write_period_ms}. */
    public static final long DEFAULT_FILE_WRITE_PERIOD_MS = 5000;
    /** Perfetto's shortest {@code file_write_period_ms}: shorter asks are raised to it. */
    public static final long MIN_FILE_WRITE_PERIOD_MS = 100;
    /** Perfetto's default {@code data_source_stop_timeout_ms}. */
    public static final long DEFAULT_DATA_SOURCE_STOP_TIMEOUT_MS = 5000;
    /** Perfetto's default {@code flush_timeout_ms}: how long a flush waits for producers in other processes. */
    public static final long DEFAULT_FLUSH_TIMEOUT_MS = 5000;

    private final List<Buffer> buffers;
    private final List<DataSource> dataSources;
    private final long durationMs;
    private final boolean writeIntoFile;
    private final boolean traceAllMachines;
    private final long fileWritePeriodMs;
    private final long maxFileSizeBytes;
    private final long flushPeriodMs;
    private final long incrementalStateClearPeriodMs;
    private final long dataSourceStopTimeoutMs;
    private final long flushTimeoutMs;
    private final TriggerConfig triggerConfig;
    private final boolean deferredStart;
    private final byte[] traceConfig;

    /**
     * A trace buffer of the session.
     *
     * @param index its index in the config, which {@code target_buffer} names
     * @param name its {@code name}, or null for an unnamed buffer
     * @param sizeBytes its size: {@code size_kb} times 1024
     * @param overwritePolicy what it does when full: its {@code fill_policy}
     */
    public record Buffer(int index, String name, long sizeBytes, OverwritePolicy overwritePolicy) {
        /** How the buffer is named in messages: {@code #1 "ftrace"} or {@code #1}. */
        public String describe() {
            return name == null ? "#" + index : "#" + index + " \"" + name + "\"";
        }
    }

    /**
     * A data source of the session and the index of the buffer it writes to.
     *
     * @param name the data source's name, which producers register
     * @param targetBuffer the index of the buffer it writes to, resolved from its name or index
     * @param protoVmMemoryLimitKb its {@code protovm_config.memory_limit_kb}, or
     *                             {@link #NO_PROTOVM} when the config names no ProtoVM limit
     * @param machineNameFilter    its {@code machine_name_filter}: the machines whose producers
     *                             it starts on ("host" is this one); empty for the session's default
     */
    public record DataSource(String name, int targetBuffer, long protoVmMemoryLimitKb,
                             List<String> machineNameFilter) {
        /** A data source whose overwritten packets go to no ProtoVM. */
        public static final long NO_PROTOVM = -1;

        public DataSource {
            machineNameFilter = List.copyOf(machineNameFilter);
        }

        /** A data source with no ProtoVM. */
        public DataSource(String name, int targetBuffer) {
            this(name, targetBuffer, NO_PROTOVM);
        }

        /** A data source for the session's default machines. */
        public DataSource(String name, int targetBuffer, long protoVmMemoryLimitKb) {
            this(name, targetBuffer, protoVmMemoryLimitKb, List.of());
        }

        /**
         * Whether it starts on a producer of machine {@code machineName} ({@code remote}
         * unless it is this one), in a session that {@code traceAllMachines} or not, as
         * traced decides: its filter if it has one (where "host" names this machine), else
         * this machine only, unless the session traces all machines.
         */
        public boolean startsOn(boolean remote, String machineName, boolean traceAllMachines) {
            if (!machineNameFilter.isEmpty()) {
                return machineNameFilter.contains(machineName) || (!remote && machineNameFilter.contains("host"));
            }
            return !remote || traceAllMachines;
        }

        /** Whether its producers' ProtoVM programs run on its overwritten packets. */
        public boolean hasProtoVm() {
            return protoVmMemoryLimitKb != NO_PROTOVM;
        }
    }

    private SessionConfig(List<Buffer> buffers, List<DataSource> dataSources, TraceConfig.Decoder config,
                          long incrementalStateClearPeriodMs, TriggerConfig triggerConfig, byte[] traceConfig) {
        this.buffers = List.copyOf(buffers);
        this.dataSources = List.copyOf(dataSources);
        this.durationMs = Integer.toUnsignedLong(config.durationMs());
        this.writeIntoFile = config.writeIntoFile();
        this.traceAllMachines = config.traceAllMachines();
        this.fileWritePeriodMs = Integer.toUnsignedLong(config.fileWritePeriodMs());
        this.maxFileSizeBytes = config.maxFileSizeBytes();
        this.flushPeriodMs = Integer.toUnsignedLong(config.flushPeriodMs());
        this.incrementalStateClearPeriodMs = incrementalStateClearPeriodMs;
        this.dataSourceStopTimeoutMs = Integer.toUnsignedLong(config.dataSourceStopTimeoutMs());
        this.flushTimeoutMs = Integer.toUnsignedLong(config.flushTimeoutMs());
        this.triggerConfig = triggerConfig;
        this.deferredStart = config.deferredStart();
        this.traceConfig = traceConfig;
    }

    /** A builder of a config, for Java users: {@link SessionConfigBuilder#build()} checks it as {@link #parse} does. */
    public static SessionConfigBuilder builder() {
        return new SessionConfigBuilder();
    }

    /** The session's trace buffers, in config order. */
    public List<Buffer> buffers() {
        return buffers;
    }

    /** The data sources it starts, each with the index of its buffer. */
    public List<DataSource> dataSources() {
        return dataSources;
    }

    /** {@code duration_ms}: how long the session records; 0 if unset (until stopped). */
    public long durationMs() {
        return durationMs;
    }

    /** {@code deferred_start}: the session waits for {@link TracingSession#startTracing()} (or a START_TRACING trigger). */
    public boolean deferredStart() {
        return deferredStart;
    }

    /** {@code trigger_config}; {@link TriggerConfig#NONE} without one. */
    public TriggerConfig triggerConfig() {
        return triggerConfig;
    }

    /**
     * How long the session records once started: {@code duration_ms}, except that a
     * STOP_TRACING or CLONE_SNAPSHOT session waits {@code trigger_timeout_ms} instead, as
     * Perfetto's service sets it (0: until stopped).
     */
    public long effectiveDurationMs() {
        return switch (triggerConfig.mode()) {
            case STOP_TRACING, CLONE_SNAPSHOT -> triggerConfig.timeoutMs();
            case UNSPECIFIED, START_TRACING -> durationMs;
        };
    }

    /**
     * {@code trace_all_machines}: whether data sources without a machine filter start on
     * producers of other machines too (those a relay forwards), not this one's only.
     */
    public boolean traceAllMachines() {
        return traceAllMachines;
    }

    /** {@code write_into_file}: whether the trace is written out periodically while the session runs. */
    public boolean writeIntoFile() {
        return writeIntoFile;
    }

    /** {@code file_write_period_ms} as the config says it; 0 if unset. */
    public long fileWritePeriodMs() {
        return fileWritePeriodMs;
    }

    /** How often the service writes the trace out with {@code write_into_file}, defaults and minimum applied. */
    public long effectiveFileWritePeriodMs() {
        return fileWritePeriodMs == 0 ? DEFAULT_FILE_WRITE_PERIOD_MS
                : Math.max(fileWritePeriodMs, MIN_FILE_WRITE_PERIOD_MS);
    }

    /** {@code max_file_size_bytes}: with {@code write_into_file}, the session stops before the file would reach it; 0 if unset. */
    public long maxFileSizeBytes() {
        return maxFileSizeBytes;
    }

    /** {@code flush_period_ms}; 0 if unset. */
    public long flushPeriodMs() {
        return flushPeriodMs;
    }

    /** {@code incremental_state_config.clear_period_ms}; 0 if unset. */
    public long incrementalStateClearPeriodMs() {
        return incrementalStateClearPeriodMs;
    }

    /** {@code data_source_stop_timeout_ms}; 0 if unset. */
    public long dataSourceStopTimeoutMs() {
        return dataSourceStopTimeoutMs;
    }

    /**
     * How long stopping waits for the data sources' stop handlers: the default applied,
     * at most {@value Guardrails#MAX_DATA_SOURCE_STOP_TIMEOUT_MS} ms.
     */
    public long effectiveDataSourceStopTimeoutMs() {
        return dataSourceStopTimeoutMs == 0 ? DEFAULT_DATA_SOURCE_STOP_TIMEOUT_MS
                : Math.min(dataSourceStopTimeoutMs, Guardrails.MAX_DATA_SOURCE_STOP_TIMEOUT_MS);
    }

    /**
     * How long a flush waits for producers in other processes to commit: {@code flush_timeout_ms},
     * the default applied, at most {@value Guardrails#MAX_FLUSH_TIMEOUT_MS} ms.
     */
    public long effectiveFlushTimeoutMs() {
        return flushTimeoutMs == 0 ? DEFAULT_FLUSH_TIMEOUT_MS : clampFlushTimeoutMs(flushTimeoutMs);
    }

    /** {@code timeoutMs}, a flush's (the config's or a Flush request's), at most {@value Guardrails#MAX_FLUSH_TIMEOUT_MS}. */
    public static long clampFlushTimeoutMs(long timeoutMs) {
        return Math.min(timeoutMs, Guardrails.MAX_FLUSH_TIMEOUT_MS);
    }

    /**
     * The {@code DataSourceConfig} of data source {@code index} as the TraceConfig holds it,
     * for a producer in another process: it gets the whole config, including the parts only
     * it understands.
     */
    byte[] dataSourceConfig(int index) {
        TraceConfig.Decoder config = new TraceConfig.Decoder();
        config.reset(MemorySegment.ofArray(traceConfig));
        RepeatedFieldIterator entries = config.dataSources(new RepeatedFieldIterator());
        TraceConfig.DataSource.Decoder entry = new TraceConfig.DataSource.Decoder();
        for (int i = 0; entries.next(); i++) {
            if (i == index) {
                entry.reset(entries.field());
                return entry.hasConfig() ? entry.field(TraceConfig.DataSource.CONFIG_FIELD_NUMBER).asBytes() : new byte[0];
            }
        }
        throw new IndexOutOfBoundsException("data source " + index + " of " + dataSources.size());
    }

    /** The binary {@code TraceConfig} this config was read from (or the builder wrote), for the trace's {@code trace_config} packet. */
    public MemorySegment traceConfig() {
        return MemorySegment.ofArray(traceConfig).asReadOnly();
    }

    /** Reads and checks a binary {@code TraceConfig}. */
    public static SessionConfig parse(MemorySegment traceConfig) throws InvalidConfigException {
        TraceConfig.Decoder config = new TraceConfig.Decoder();
        config.reset(traceConfig);
        if (config.hasError()) {
            throw new InvalidConfigException("TraceConfig is not a valid protobuf message: " + config.status());
        }
        List<Buffer> buffers = parseBuffers(config);
        Map<String, Integer> bufferByName = new HashMap<>();
        for (Buffer buffer : buffers) {
            if (buffer.name() != null) {
                Integer earlier = bufferByName.putIfAbsent(buffer.name(), buffer.index());
                if (earlier != null) {
                    throw new InvalidConfigException("duplicate buffer name \"" + buffer.name() + "\": buffers #"
                            + earlier + " and #" + buffer.index());
                }
            }
        }
        List<DataSource> dataSources = new ArrayList<>();
        RepeatedFieldIterator entries = config.dataSources(new RepeatedFieldIterator());
        TraceConfig.DataSource.Decoder entry = new TraceConfig.DataSource.Decoder();
        DataSourceConfig.Decoder source = new DataSourceConfig.Decoder();
        for (int i = 0; entries.next(); i++) {
            entry.reset(entries.field());
            if (entry.hasError() || !entry.config(source) || source.hasError()) {
                throw new InvalidConfigException("data source #" + i + " has no valid config");
            }
            if (!source.hasName() || source.name().isEmpty()) {
                throw new InvalidConfigException("data source #" + i + " has no name");
            }
            List<String> machines = new ArrayList<>();
            RepeatedFieldIterator machineNames = entry.machineNameFilter(new RepeatedFieldIterator());
            while (machineNames.next()) {
                machines.add(machineNames.field().asString());
            }
            dataSources.add(new DataSource(source.name(), resolveTargetBuffer(source, i, buffers, bufferByName),
                    protoVmMemoryLimitKb(source, i), machines));
        }
        long clearPeriodMs = 0;
        TraceConfig.IncrementalStateConfig.Decoder incrementalState = new TraceConfig.IncrementalStateConfig.Decoder();
        if (config.incrementalStateConfig(incrementalState)) {
            if (incrementalState.hasError()) {
                throw new InvalidConfigException("incremental_state_config is not valid: " + incrementalState.status());
            }
            clearPeriodMs = Integer.toUnsignedLong(incrementalState.clearPeriodMs());
        }
        TriggerConfig triggers = parseTriggerConfig(config);
        if (config.writeIntoFile() && (triggers.mode() == TriggerConfig.Mode.STOP_TRACING
                || triggers.mode() == TriggerConfig.Mode.CLONE_SNAPSHOT)) {
            throw new InvalidConfigException("trigger_mode " + triggers.mode()
                    + " and write_into_file together are not supported (nor are they by Perfetto)");
        }
        return new SessionConfig(buffers, dataSources, config, clearPeriodMs, triggers,
                traceConfig.toArray(ValueLayout.JAVA_BYTE));
    }

    /**
     * A data source's {@code protovm_config.memory_limit_kb}; {@link DataSource#NO_PROTOVM}
     * without one, as Perfetto sets up no ProtoVM for a config without a limit.
     */
    private static long protoVmMemoryLimitKb(DataSourceConfig.Decoder source, int index) throws InvalidConfigException {
        ProtoVmConfig.Decoder protoVm = new ProtoVmConfig.Decoder();
        if (!source.protovmConfig(protoVm)) {
            return DataSource.NO_PROTOVM;
        }
        if (protoVm.hasError()) {
            throw new InvalidConfigException("data source #" + index + ": protovm_config is not valid: "
                    + protoVm.status());
        }
        return protoVm.hasMemoryLimitKb() ? Integer.toUnsignedLong(protoVm.memoryLimitKb()) : DataSource.NO_PROTOVM;
    }

    /** Perfetto's longest trace, and trigger wait: 7 days, or 24 hours with {@code enable_extra_guardrails}. */
    private static long maxDurationMs(TraceConfig.Decoder config) {
        return (config.enableExtraGuardrails() ? 24L : 7 * 24L) * 3600 * 1000;
    }

    /** Reads {@code trigger_config} with the checks of Perfetto's EnableTracing. */
    private static TriggerConfig parseTriggerConfig(TraceConfig.Decoder config) throws InvalidConfigException {
        TraceConfig.TriggerConfig.Decoder triggers = new TraceConfig.TriggerConfig.Decoder();
        if (!config.triggerConfig(triggers)) {
            return TriggerConfig.NONE;
        }
        if (triggers.hasError()) {
            throw new InvalidConfigException("trigger_config is not valid: " + triggers.status());
        }
        TriggerConfig.Mode mode = switch (triggers.triggerModeEnum()) {
            case UNSPECIFIED -> TriggerConfig.Mode.UNSPECIFIED;
            case START_TRACING -> TriggerConfig.Mode.START_TRACING;
            case STOP_TRACING -> TriggerConfig.Mode.STOP_TRACING;
            case CLONE_SNAPSHOT -> TriggerConfig.Mode.CLONE_SNAPSHOT;
            case null -> throw new InvalidConfigException("trigger_config has an unknown trigger_mode "
                    + triggers.triggerMode());
        };
        if (triggers.useCloneSnapshotIfAvailable()) {
            if (mode != TriggerConfig.Mode.STOP_TRACING) {
                throw new InvalidConfigException(
                        "trigger_config: trigger_mode must be STOP_TRACING with use_clone_snapshot_if_available");
            }
            mode = TriggerConfig.Mode.CLONE_SNAPSHOT;
        }
        long timeoutMs = Integer.toUnsignedLong(triggers.triggerTimeoutMs());
        if (mode != TriggerConfig.Mode.UNSPECIFIED && (timeoutMs == 0 || timeoutMs > maxDurationMs(config))) {
            throw new InvalidConfigException("trigger_config: a " + mode + " session needs a trigger_timeout_ms"
                    + " in (0, " + maxDurationMs(config) + "], got " + timeoutMs);
        }
        List<TriggerConfig.Trigger> list = new ArrayList<>();
        RepeatedFieldIterator entries = triggers.triggers(new RepeatedFieldIterator());
        TraceConfig.TriggerConfig.Trigger.Decoder trigger = new TraceConfig.TriggerConfig.Trigger.Decoder();
        for (int i = 0; entries.next(); i++) {
            trigger.reset(entries.field());
            if (trigger.hasError() || !trigger.hasName() || trigger.name().isEmpty()) {
                throw new InvalidConfigException("trigger_config.triggers[" + i + "] has no valid name");
            }
            Pattern producers = null;
            if (trigger.hasProducerNameRegex() && !trigger.producerNameRegex().isEmpty()) {
                try {
                    producers = Pattern.compile(trigger.producerNameRegex());
                } catch (PatternSyntaxException e) {
                    throw new InvalidConfigException("trigger_config.triggers[" + i + "] \"" + trigger.name()
                            + "\": producer_name_regex does not compile: " + e.getDescription());
                }
            }
            double skip = trigger.skipProbability();
            if (Double.isNaN(skip)) {
                throw new InvalidConfigException("trigger_config.triggers[" + i + "] \"" + trigger.name()
                        + "\": skip_probability is NaN");
            }
            list.add(new TriggerConfig.Trigger(trigger.name(), producers, Integer.toUnsignedLong(trigger.stopDelayMs()),
                    Integer.toUnsignedLong(trigger.maxPer24H()), skip));
        }
        return new TriggerConfig(mode, list, timeoutMs);
    }

    private static List<Buffer> parseBuffers(TraceConfig.Decoder config) throws InvalidConfigException {
        List<Buffer> buffers = new ArrayList<>();
        RepeatedFieldIterator entries = config.buffers(new RepeatedFieldIterator());
        TraceConfig.BufferConfig.Decoder buffer = new TraceConfig.BufferConfig.Decoder();
        for (int i = 0; entries.next(); i++) {
            buffer.reset(entries.field());
            if (buffer.hasError()) {
                throw new InvalidConfigException("buffer #" + i + " is not a valid BufferConfig: " + buffer.status());
            }
            String name = buffer.hasName() && !buffer.name().isEmpty() ? buffer.name() : null;
            String label = name == null ? "buffer #" + i : "buffer #" + i + " \"" + name + "\"";
            long sizeBytes = Integer.toUnsignedLong(buffer.sizeKb()) * 1024;
            if (sizeBytes == 0) {
                throw new InvalidConfigException(label + " has no size_kb");
            }
            if (sizeBytes > TraceBufferV2.MAX_BUFFER_SIZE) {
                throw new InvalidConfigException(label + " has size_kb " + Integer.toUnsignedLong(buffer.sizeKb())
                        + ", more than the " + TraceBufferV2.MAX_BUFFER_SIZE / 1024 + " a buffer can hold");
            }
            OverwritePolicy policy = switch (buffer.fillPolicyEnum()) {
                case UNSPECIFIED, RING_BUFFER -> OverwritePolicy.RING_BUFFER;
                case DISCARD -> OverwritePolicy.DISCARD;
                case null -> throw new InvalidConfigException(label + " has an unknown fill_policy " + buffer.fillPolicy());
            };
            buffers.add(new Buffer(i, name, sizeBytes, policy));
        }
        if (buffers.isEmpty()) {
            throw new InvalidConfigException("TraceConfig has no buffers");
        }
        return buffers;
    }

    private static int resolveTargetBuffer(DataSourceConfig.Decoder source, int index, List<Buffer> buffers,
                                           Map<String, Integer> bufferByName) throws InvalidConfigException {
        String label = "data source \"" + source.name() + "\" (#" + index + ")";
        Integer byName = null;
        if (source.hasTargetBufferName()) {
            byName = bufferByName.get(source.targetBufferName());
            if (byName == null) {
                throw new InvalidConfigException(label + ": target_buffer_name \"" + source.targetBufferName()
                        + "\" matches no buffer (named buffers: " + bufferByName.keySet().stream().sorted().toList() + ")");
            }
        }
        if (!source.hasTargetBuffer()) {
            return byName != null ? byName : 0;
        }
        long byIndex = Integer.toUnsignedLong(source.targetBuffer());
        if (byIndex >= buffers.size()) {
            throw new InvalidConfigException(label + ": target_buffer " + byIndex + " is out of range (the session has "
                    + buffers.size() + " buffers)");
        }
        if (byName != null && byName != byIndex) {
            throw new InvalidConfigException(label + ": target_buffer " + byIndex + " is buffer "
                    + buffers.get((int) byIndex).describe() + " but target_buffer_name \"" + source.targetBufferName()
                    + "\" is buffer " + buffers.get(byName).describe());
        }
        return (int) byIndex;
    }
}
