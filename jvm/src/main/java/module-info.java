/**
 * The JVM in its own timeline: Java Flight Recorder's events mapped to Perfetto packets
 * (thread and GC slices, counters, CPU samples, an allocation heap profile), and a
 * converter from .jfr files to Perfetto traces.
 */
module dev.ffmtrace.jvm {
    requires transitive jdk.jfr;
    requires transitive dev.ffmtrace.tracing.trackevent;

    exports dev.ffmtrace.jvm;
}
