package dev.ffmtrace.tracing.sdk;

/**
 * What a session asks of one instance of a data source.
 *
 * @param backend      where the session runs
 * @param index        the instance's place among the data source's
 *                     {@value DataSource#MAX_INSTANCES}, free again once it stops (as
 *                     Perfetto's {@code internal_instance_index})
 * @param instanceId   the service's id of the instance
 * @param targetBuffer the service's id of the buffer its packets go to
 * @param config       the instance's serialized {@code DataSourceConfig}, with the fields
 *                     the service sets (a copy)
 */
public record InstanceSetup(Backend backend, int index, long instanceId, int targetBuffer, byte[] config) {
}
