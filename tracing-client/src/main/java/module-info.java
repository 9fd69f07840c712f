/**
 * The clients of a Perfetto tracing service over its IPC, as Perfetto's
 * {@code src/tracing/ipc}: {@code ProducerConnection} joins the producer socket and writes
 * into the shared memory buffer it is given; {@code ConsumerConnection} starts, flushes,
 * reads and clones sessions on the consumer socket; {@code RelayService} forwards this
 * machine's producers to a host on another machine, as {@code traced_relay}. Each works
 * against a real {@code traced} or ffmtrace's service, and needs neither in this process.
 */
module dev.ffmtrace.tracing.client {
    requires transitive dev.ffmtrace.tracing.core;
    requires transitive dev.ffmtrace.ipc;

    exports dev.ffmtrace.tracing.producer;
    exports dev.ffmtrace.tracing.consumer;
    exports dev.ffmtrace.tracing.relay;
    // The producer's data-source handlers: the SDK builds its DataSource on them, the service
    // its warm-up, the stress suite its Java writers; applications register the SDK's DataSource.
    exports dev.ffmtrace.tracing.producer.internal to dev.ffmtrace.tracing.sdk, dev.ffmtrace.tracing.service,
            dev.ffmtrace.cli;
}
