package dev.ffmtrace.tracing.service;

import dev.ffmtrace.perfetto.protos.DataSourceConfig;
import dev.ffmtrace.protozero.ProtoWire;
import java.util.Arrays;

/**
 * The DataSourceConfig a producer in another process is started with: the one the
 * session's TraceConfig holds, with the fields only the service can fill, as Perfetto's
 * service sets them. They are appended to the config's own bytes: for a field that is
 * not repeated, a protobuf reader keeps the last value, so these override what the
 * consumer wrote, and every field the service does not know reaches the producer as is.
 */
final class DataSourceConfigs {
    private DataSourceConfigs() {
    }

    /** Data source {@code configIndex} of {@code session}, to write into the service's buffer {@code bufferId}. */
    static byte[] forProducer(TracingSession session, int configIndex, int bufferId) {
        SessionConfig config = session.config();
        byte[] own = config.dataSourceConfig(configIndex);
        byte[] out = Arrays.copyOf(own, own.length + 5 * 11);
        int at = own.length;
        at = putVarint(out, at, DataSourceConfig.TRACE_DURATION_MS_FIELD_NUMBER, config.durationMs());
        at = putVarint(out, at, DataSourceConfig.STOP_TIMEOUT_MS_FIELD_NUMBER, config.effectiveDataSourceStopTimeoutMs());
        // A consumer must not pass its session off as the system's.
        at = putVarint(out, at, DataSourceConfig.SESSION_INITIATOR_FIELD_NUMBER,
                DataSourceConfig.SessionInitiator.SESSION_INITIATOR_UNSPECIFIED.number());
        at = putVarint(out, at, DataSourceConfig.TRACING_SESSION_ID_FIELD_NUMBER, session.id());
        at = putVarint(out, at, DataSourceConfig.TARGET_BUFFER_FIELD_NUMBER, Integer.toUnsignedLong(bufferId));
        return Arrays.copyOf(out, at);
    }

    private static int putVarint(byte[] into, int at, int field, long value) {
        return ProtoWire.writeVarInt(into, ProtoWire.writeVarInt(into, at,
                ProtoWire.makeTag(field, ProtoWire.WIRE_TYPE_VARINT)), value);
    }
}
