/**
 * The JVM in its own timeline: Java Flight Recorder's events mapped to Perfetto packets
 * (thread and GC slices, counters, CPU samples, an allocation heap profile), and a
 * converter from .jfr files to Perfetto traces, and the SDK's live {@code jvm} data source.
 */
module dev.ffmtrace.jvm {
    requires transitive jdk.jfr;
    requires transitive dev.ffmtrace.tracing.sdk;
    requires transitive java.instrument;

    exports dev.ffmtrace.jvm;
}
