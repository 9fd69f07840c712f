/**
 * A Java application as a producer of a Perfetto tracing service (a real {@code traced},
 * or ffmtrace's) over Perfetto's IPC: {@link dev.ffmtrace.tracing.producer.ProducerConnection}
 * connects to the producer socket, registers data sources, receives the shared memory
 * buffer and the service's commands, and commits chunks with their patches.
 */
package dev.ffmtrace.tracing.producer;
