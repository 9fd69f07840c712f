/**
 * The SDK, as Perfetto's is to C++: {@code Tracing.initialize} once with the backends to
 * use (a tracing service in this process, the system's over its producer socket, or both),
 * then data sources written once and traced into from any thread, platform or virtual,
 * into every session that started them.
 */
module dev.ffmtrace.tracing.sdk {
    requires transitive dev.ffmtrace.tracing.client;
    requires transitive dev.ffmtrace.tracing.service;

    exports dev.ffmtrace.tracing.sdk;
}
