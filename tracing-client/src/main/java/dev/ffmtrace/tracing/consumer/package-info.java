/**
 * A Java program as a consumer of a Perfetto tracing service (a real {@code traced}, or
 * ffmtrace's) over Perfetto's IPC: {@link dev.ffmtrace.tracing.consumer.ConsumerConnection}
 * connects to the consumer socket, enables tracing from a TraceConfig, flushes, reads the
 * trace back whole and clones sessions.
 */
package dev.ffmtrace.tracing.consumer;
