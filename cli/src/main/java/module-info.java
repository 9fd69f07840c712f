/** The ffmtrace command line: record, serve, relay, produce, heapprofd, convert, jfr, jvm, dump, protovm, demo and stress. */
@SuppressWarnings("requires-automatic")
module dev.ffmtrace.cli {
    requires dev.ffmtrace.perfetto.protos.java;
    requires dev.ffmtrace.tracing.service;
    requires dev.ffmtrace.protovm;
    requires dev.ffmtrace.tracing.client;
    requires dev.ffmtrace.tracing.sdk;
    requires dev.ffmtrace.heapprofd.service;
    requires dev.ffmtrace.shmring;
    requires dev.ffmtrace.jvm;
    requires jdk.attach;
    requires info.picocli;

    // picocli sets the commands' annotated fields reflectively.
    opens dev.ffmtrace.cli to info.picocli;
}
