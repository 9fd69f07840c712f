package dev.ffmtrace.tracing.service;

import dev.ffmtrace.perfetto.protos.DataSourceConfig;
import dev.ffmtrace.perfetto.protos.TraceConfig;
import dev.ffmtrace.protozero.RepeatedFieldIterator;
import dev.ffmtrace.tracing.buffer.OverwritePolicy;
import dev.ffmtrace.tracing.buffer.TraceBufferV2;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What a tracing session is made of, read from a binary {@code TraceConfig} and checked:
 * its buffers, and its data sources each bound to the index of the buffer it writes to.
 *
 * <p>Buffers may be named ({@code BufferConfig.name}) and data sources may address them
 * by name ({@code DataSourceConfig.target_buffer_name}), by index ({@code target_buffer})
 * or both, as Perfetto's named trace buffers do: names must be unique; a name must match
 * a buffer; an index must be in range; when both are given they must agree, which lets
 * one config serve services that know names and services that do not. A data source
 * with neither writes to buffer 0. Every refusal is an {@link InvalidConfigException}
 * naming the offending buffer or data source.
 *
 * <p>A config is immutable and may be shared between threads and sessions.
 *
 * @param buffers the session's trace buffers, in config order
 * @param dataSources the data sources it starts, each with the index of its buffer
 * @param durationMs {@code duration_ms}: how long whoever runs the session records; 0 if unset
 * @param writeIntoFile {@code write_into_file}: whether the trace is written out periodically
 * @param fileWritePeriodMs {@code file_write_period_ms}; 0 if unset
 * @param flushPeriodMs {@code flush_period_ms}; 0 if unset
 * @param incrementalStateClearPeriodMs {@code incremental_state_config.clear_period_ms}; 0 if unset
 */
public record SessionConfig(List<Buffer> buffers, List<DataSource> dataSources, long durationMs,
                            boolean writeIntoFile, long fileWritePeriodMs, long flushPeriodMs,
                            long incrementalStateClearPeriodMs) {

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
     */
    public record DataSource(String name, int targetBuffer) {
    }

    /** Copies the lists: a config never changes. */
    public SessionConfig {
        buffers = List.copyOf(buffers);
        dataSources = List.copyOf(dataSources);
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
            dataSources.add(new DataSource(source.name(), resolveTargetBuffer(source, i, buffers, bufferByName)));
        }
        long clearPeriodMs = 0;
        TraceConfig.IncrementalStateConfig.Decoder incrementalState = new TraceConfig.IncrementalStateConfig.Decoder();
        if (config.incrementalStateConfig(incrementalState)) {
            if (incrementalState.hasError()) {
                throw new InvalidConfigException("incremental_state_config is not valid: " + incrementalState.status());
            }
            clearPeriodMs = Integer.toUnsignedLong(incrementalState.clearPeriodMs());
        }
        return new SessionConfig(buffers, dataSources, Integer.toUnsignedLong(config.durationMs()),
                config.writeIntoFile(), Integer.toUnsignedLong(config.fileWritePeriodMs()),
                Integer.toUnsignedLong(config.flushPeriodMs()), clearPeriodMs);
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
